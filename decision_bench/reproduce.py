"""The main job: testbed + bandit + analysis in one resumable command.

``decision-bench reproduce --preset demo|quick|paper --out DIR`` runs, for each
agent, the testbed sweep of the preset (d_KL^1, d_KL^10 iid, d_KL^{10, kappa=2})
and Thompson sampling on the neural bandit, then correlates joint and marginal
prediction quality with regret (paper 000, Sec. 5.2). Work is split into cells
(one agent on one testbed setting, or one agent's bandit run over all seeds);
each finished cell is stored atomically under ``DIR/cells/``, so running the same
command again resumes where it stopped. Bandit runs also save their carry every
chunk under ``DIR/bandit_runs/`` and resume mid-run.

Outputs: DIR/testbed.csv, DIR/bandit.csv, DIR/correlations.csv, the figures,
DIR/report.md and DIR/run.json (preset, versions, timings).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from decision_bench._src.console import HelpFormatter
from decision_bench._src.files import atomic_write_text, check_output_dir
from decision_bench._validation import check_choice, check_int

PRESET_NAMES = ("demo", "quick", "standard", "paper")
CORE_AGENTS = ("mlp", "ensemble", "dropout", "bbb", "hypermodel", "ensemble+", "epinet")


@dataclasses.dataclass(frozen=True)
class Preset:
    """What a reproduction runs. Overrides map agent name -> {hyperparameter: value}."""

    name: str
    agents: tuple[str, ...]
    testbed_sweeps: tuple[str, ...]  # names of evaluation sweeps, or "demo" (built here)
    testbed_seeds: int
    num_test: int
    num_models: int
    testbed_overrides: tuple  # ((agent, ((key, value), ...)), ...)
    bandit_env: str
    bandit_env_kwargs: tuple  # ((key, value), ...)
    bandit_steps: int
    bandit_seeds: int
    bandit_overrides: tuple

    def overrides(self, which: str, agent: str) -> dict[str, Any]:
        table = dict(self.testbed_overrides if which == "testbed" else self.bandit_overrides)
        return dict(table.get(agent, ()))


def _items(mapping: Mapping[str, Mapping[str, Any]]) -> tuple:
    return tuple(sorted((k, tuple(sorted(v.items()))) for k, v in mapping.items()))


def _laptop_preset(
    name: str, sweep: str, *, num_test: int, bandit_steps: int, bandit_seeds: int
) -> Preset:
    """The core agents with 30-member ensembles on the d = 2 testbed ``sweep`` (5 seeds,
    1000 model draws) and the d = 2, 40-action, beta = 0.1 neural bandit."""
    members = _items({"ensemble": {"num_ensemble": 30}, "ensemble+": {"num_ensemble": 30}})
    return Preset(
        name=name,
        agents=CORE_AGENTS,
        testbed_sweeps=(sweep,),
        testbed_seeds=5,
        num_test=num_test,
        num_models=1000,
        testbed_overrides=members,
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 2), ("num_actions", 40), ("temperature", 0.1)),
        bandit_steps=bandit_steps,
        bandit_seeds=bandit_seeds,
        bandit_overrides=members,
    )


def get_preset(name: str) -> Preset:
    """The preset called ``name``: "demo" (< 5 min on 2 cores), "quick" (< 30 min),
    "standard" (the headline at laptop size, <= 60 min), "paper"."""
    check_choice("preset", name, PRESET_NAMES)
    if name == "demo":
        # Minutes on a laptop, without cutting any agent below the sizes of the
        # `standard` preset: ensembles of 30 members and every agent's default SGD
        # steps (an earlier demo used 10 members and 500 steps, which put ensemble+
        # and epinet behind mlp at tau = 10, the opposite of the papers). What it
        # saves on is breadth, because compilation (one program per agent and
        # setting) dominates: one testbed setting (d = 2, T = 100, beta = 0.1), 5
        # seeds, 500 test samples, and 3 bandit seeds of 2000 steps; 1000 model draws
        # keep the joint likelihoods of the sampling agents honest.
        return _laptop_preset("demo", "demo", num_test=500, bandit_steps=2000, bandit_seeds=3)
    if name == "quick":
        return _laptop_preset("quick", "quick", num_test=1000, bandit_steps=5000, bandit_seeds=5)
    if name == "standard":
        # Settings fixed before any result of this preset was seen. Every core agent at
        # its paper defaults except the ensemble size: 100-member ensembles cost about
        # 20 minutes of bandit alone on 2 cores (measured: ensemble+ with 100 members,
        # 20 seeds x 3000 steps at d = 2 takes ~8 min), so ensemble and ensemble+ both
        # use 30 members (the reference's own ensemble+ comparison size). The standard
        # sweep covers all three temperatures, T from 1 to 1000, tau 1 / 10 iid / 10
        # dyadic, 5 seeds; the bandit is d = 2 (paper 000 Figs. 16-17: the finding
        # holds for d = 2) with 10 seeds and 10,000 steps.
        return _laptop_preset("standard", "standard", num_test=1000, bandit_steps=10_000, bandit_seeds=10)
    return Preset(
        name="paper",
        agents=CORE_AGENTS + ("sgmcmc",),
        testbed_sweeps=("paper2d", "highdim"),
        testbed_seeds=10,
        num_test=1000,
        num_models=1000,
        testbed_overrides=(),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 50), ("num_actions", 1000), ("temperature", 0.1)),
        bandit_steps=50_000,
        bandit_seeds=20,
        bandit_overrides=(),
    )


def _testbed_sweep(name: str):
    from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign, get_sweep

    if name != "demo":
        return get_sweep(name)
    return Sweep(
        "demo",
        (TestbedSetting(input_dim=2, num_train=100, temperature=0.1),),
        (TestDesign(1), TestDesign(10), TestDesign(10, 2)),
        num_seeds=5,
    )


def load_agent_file(path: str | Path) -> tuple[str, Callable]:
    """A user's agent from one Python file: ``make_agent(spec) -> Agent`` and optional NAME.

    Returns (name, make_agent). The name defaults to the file's stem.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"agent_file {str(path)!r} does not exist")
    module_spec = importlib.util.spec_from_file_location(f"decision_bench_user_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    make_agent = getattr(module, "make_agent", None)
    if not callable(make_agent):
        raise ValueError(
            f"agent_file {str(path)!r} must define make_agent(spec) -> decision_bench.agents.Agent"
        )
    return str(getattr(module, "NAME", path.stem)), make_agent


def build_cells(preset: Preset, agents: tuple[str, ...]):
    """The sweep's cells: one per (agent, testbed setting) and one per agent's bandit run."""
    from decision_bench.sweep import Cell

    cells = []
    seeds = tuple(range(preset.testbed_seeds))
    for sweep_name in preset.testbed_sweeps:
        sweep = _testbed_sweep(sweep_name)
        for agent in agents:
            for setting in sweep.settings:
                cells.append(
                    Cell(
                        "testbed",
                        agent,
                        preset.overrides("testbed", agent),
                        {
                            "sweep": sweep_name,
                            "prior": setting.prior,
                            "input_dim": setting.input_dim,
                            "num_train": setting.num_train,
                            "temperature": setting.temperature,
                            "num_test": preset.num_test,
                            "num_models": preset.num_models,
                        },
                        seeds,
                    )
                )
    for agent in agents:
        cells.append(
            Cell(
                "bandit",
                agent,
                preset.overrides("bandit", agent),
                {"env": preset.bandit_env, "num_steps": preset.bandit_steps, **dict(preset.bandit_env_kwargs)},
                tuple(range(preset.bandit_seeds)),
            )
        )
    return tuple(cells)


@dataclasses.dataclass(frozen=True)
class CellRunner:
    """compute_fn for ``run_sweep``: turns a cell into its rows (picklable for Ray)."""

    out_dir: str
    custom_agents: tuple = ()  # ((name, agent file path), ...)
    progress: bool = True  # the bandit runs' step bars

    def _custom(self, name: str):
        paths = dict(self.custom_agents)
        return load_agent_file(paths[name])[1] if name in paths else None

    def __call__(self, cell) -> pd.DataFrame:
        if cell.kind == "testbed":
            return self._testbed(cell)
        return self._bandit(cell)

    def _testbed(self, cell) -> pd.DataFrame:
        from decision_bench.evaluation import run_testbed
        from decision_bench.evaluation.sweeps import TestbedSetting

        problem = dict(cell.problem)
        design_sweep = _testbed_sweep(problem["sweep"])
        setting = TestbedSetting(
            input_dim=problem["input_dim"],
            num_train=problem["num_train"],
            temperature=problem["temperature"],
            prior=problem["prior"],
        )
        sweep = dataclasses.replace(design_sweep, settings=(setting,))
        custom = self._custom(cell.agent)
        agent = {cell.agent: custom} if custom is not None else cell.agent
        overrides = {cell.agent: dict(cell.agent_config)} if cell.agent_config else None
        frame = run_testbed(
            agent,
            sweep,
            list(cell.seeds),
            num_test=problem["num_test"],
            num_models=problem["num_models"],
            overrides=overrides,
            progress=False,
        )
        frame["sweep"] = problem["sweep"]
        return frame

    def _bandit(self, cell) -> pd.DataFrame:
        from decision_bench.bandit import run_bandit

        problem = dict(cell.problem)
        env_id, num_steps = problem.pop("env"), problem.pop("num_steps")
        custom = self._custom(cell.agent)
        agent: Any = custom if custom is not None else cell.agent
        return run_bandit(
            agent,
            env_id,
            num_steps,
            list(cell.seeds),
            env_kwargs=problem,
            agent_kwargs=dict(cell.agent_config) or None,
            out_dir=str(Path(self.out_dir) / "bandit_runs" / cell.id),
            resume=True,
            progress=self.progress,
        )


def check_agents(agents: tuple[str, ...]) -> None:
    """Every name registered and able to run both the testbed and the neural bandit."""
    from decision_bench.agents import names as agent_names
    from decision_bench.agents.registry import check_inputs_fit

    for agent in agents:
        check_choice("agent", agent, agent_names())
        check_inputs_fit(agent, "the testbed and NeuralBandit-v0", one_hot=False)


def reproduce(
    preset: str | Preset = "demo",
    out: str | Path = "runs/demo",
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    executor: str = "local",
    address: str | None = None,
    num_resamples: int = 1000,
    progress: bool = True,
):
    """Runs (or resumes) a reproduction; returns the analysis result.

    agents: registered names to run instead of the preset's; agent_files: user
    agent files (see ``load_agent_file``), run next to them.
    """
    from decision_bench.analysis import analyze
    from decision_bench.sweep import ResultsStore, package_versions, run_sweep

    preset = get_preset(preset) if isinstance(preset, str) else preset
    chosen = tuple(agents) if agents else preset.agents
    check_agents(chosen)
    custom = tuple((load_agent_file(p)[0], str(Path(p).resolve())) for p in agent_files)
    clash = sorted(set(chosen) & {n for n, _ in custom})
    if clash:
        raise ValueError(f"agent_file NAME(s) {clash} clash with registered agents; rename them")
    all_agents = chosen + tuple(n for n, _ in custom)
    out = check_output_dir(out, "out")
    cells = build_cells(preset, all_agents)
    store = ResultsStore(out / "cells")
    start = time.perf_counter()
    # Computes (or finds stored) every cell; the tables are read back per kind below.
    run_sweep(
        cells,
        CellRunner(str(out), custom, progress),
        store,
        executor=executor,
        address=address,
        progress=progress,
    )
    testbed = store.load([c for c in cells if c.kind == "testbed"])
    bandit = store.load([c for c in cells if c.kind == "bandit"])
    atomic_write_text(out / "testbed.csv", testbed.to_csv(index=False))
    atomic_write_text(out / "bandit.csv", bandit.to_csv(index=False))
    result = analyze(out, num_resamples=num_resamples, seed=0)
    run_info = {
        "preset": dataclasses.asdict(preset),
        "agents": list(all_agents),
        "agent_files": [p for _, p in custom],
        "versions": package_versions(),
        "seconds_this_session": round(time.perf_counter() - start, 1),
    }
    atomic_write_text(out / "run.json", json.dumps(run_info, indent=1, default=str))
    return result


# What each preset's numbers can and cannot show, printed under its summary.
PRESET_SCOPE = {
    "demo": "Scope: the demo runs one testbed setting (T = 100, beta = 0.1, where the agents' joint "
    "predictions differ little: even the reference implementation's ensemble+ does not beat its mlp "
    "there) and 3 short bandit runs: enough to exercise the whole pipeline and compare the agents, "
    "far too few points for the correlations to confirm or refute the papers' headline; "
    "`--preset standard` (about an hour on 2 cores) is the smallest run meant to answer it.",
    "quick": "Scope: 2 training-set sizes at one temperature; the correlations have wide intervals.",
    "standard": "Scope: all three temperatures, T from 1 to 1000, 5 testbed seeds, the d = 2 bandit with "
    "10 seeds and 10,000 steps, 30-member ensembles: the papers' question at laptop size.",
    "paper": "Scope: the papers' full settings.",
}


def _print_summary(out: Path, result, preset: str | None = None) -> None:
    corr = result.correlations
    print(f"\nresults in {out}/: testbed.csv, bandit.csv, correlations.csv, report.md, figures")
    cols = ["metric", "pearson_log", "pearson_ci_low", "pearson_ci_high", "spearman", "n"]
    if "level" in corr.columns:
        cols = ["level"] + cols
    with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 120):
        print(corr[cols].to_string(index=False))
    if result.levels:
        from decision_bench.analysis.pipeline import headline

        print("\n" + headline(result.levels).replace("**", ""))
    if preset in PRESET_SCOPE:
        print(PRESET_SCOPE[preset])
    print(f"\nreport: {result.report}")


def register(subparsers) -> argparse.ArgumentParser:
    for name, help_text in (
        ("reproduce", "testbed + bandit + analysis, resumable (the papers' headline result)"),
        ("demo", "what `make demo` runs: reproduce --preset demo"),
    ):
        p = subparsers.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        if name == "reproduce":
            p.add_argument("--preset", default="demo", choices=PRESET_NAMES,
                           help="demo: < 5 min on 2 cores; quick: < 30 min; standard: the papers' headline "
                           "at laptop size (<= 60 min); paper: the papers' full setting")
        p.add_argument("--out", default=f"runs/{name}", help="run directory (re-run to resume)")
        p.add_argument("--agents", default=None,
                       help="comma-separated registered agents instead of the preset's")
        p.add_argument("--agent-file", action="append", default=[], dest="agent_files",
                       help="a Python file defining make_agent(spec) (and NAME); may repeat")
        p.add_argument("--executor", default="local", choices=("local", "ray"))
        p.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
        p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
        p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
        p.set_defaults(func=_run, preset_name="demo" if name == "demo" else None)
    return p


def _run(args: argparse.Namespace) -> int:
    preset = args.preset_name or args.preset
    agents = tuple(a.strip() for a in args.agents.split(",") if a.strip()) if args.agents else None
    check_int("resamples", args.resamples, 1)
    if agents:
        check_agents(agents)
    out = check_output_dir(args.out)
    print(f"decision-bench reproduce --preset {preset}: writing to {out}/ (re-run to resume)", file=sys.stderr)
    result = reproduce(
        preset,
        out,
        agents=agents,
        agent_files=tuple(args.agent_files),
        executor=args.executor,
        address=args.address,
        num_resamples=args.resamples,
        progress=not args.no_progress,
    )
    _print_summary(out, result, preset if isinstance(preset, str) else None)
    return 0
