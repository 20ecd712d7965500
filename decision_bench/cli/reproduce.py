"""``decision-bench reproduce`` and ``decision-bench demo``: the main job in one command.

``reproduce(preset, out)`` runs (or resumes) the preset's testbed and bandit cells
(``decision_bench.experiments.run_preset``) and then the analysis
(``decision_bench.analysis.analyze``): correlations of joint and marginal
prediction quality with regret (paper 000, Sec. 5.2), figures and a report.

Outputs: DIR/testbed.csv, DIR/bandit.csv, DIR/correlations.csv, the figures,
DIR/report.md and DIR/run.json (preset, versions, timings).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import textwrap
from pathlib import Path

import pandas as pd

from decision_bench._src.extras import FIGURES_SKIPPED
from decision_bench._src.tensorboard import TensorBoardLog
from decision_bench.analysis import analyze
from decision_bench.analysis.correlation import check_num_resamples
from decision_bench.analysis.pipeline import HEADLINE_LEVELS, headline
from decision_bench.cli.analyze import print_robustness, print_skewed_intervals
from decision_bench.cli.arguments import (
    add_command,
    RESAMPLES_HELP, add_agent_options, add_display_options, parse_agent_list, parse_resamples, parse_settings,
)
from decision_bench.experiments.agent_files import read_agent_files
from decision_bench.experiments.executors import default_workers
from decision_bench.experiments.estimate import format_duration
from decision_bench.experiments.experiment_file import preset_to_toml, read_experiment_file
from decision_bench.experiments.presets import PRESET_NAMES, PRESET_SCOPE, Preset, get_preset
from decision_bench.experiments.reproduce import (
    bandit_rows,
    check_agents,
    claim_preset_dir,
    copy_finished_cells,
    preset_estimate,
    run_preset,
    run_progress,
    with_settings,
)


def reproduce(
    preset: str | Preset = "demo",
    out: str | Path = "runs/demo",
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    executor: str = "local",
    address: str | None = None,
    num_resamples: int = 1000,
    progress: bool = True,
    workers: int = 1,
    settings: dict | None = None,
    tensorboard: str | Path | None = None,
):
    """Runs (or resumes) a reproduction: the preset's cells, then the analysis; returns
    the analysis result (``decision_bench.analysis.analyze``).

    preset: a preset name or a Preset (e.g. from an experiment file,
    ``experiments.experiment_file.read_experiment_file``); agents: registered names
    to run instead of the preset's; agent_files: user agent files
    (``experiments.agent_files.read_agent_file``), run next to them; settings:
    {agent: {hyperparameter: value}} over the preset's overrides (--set);
    workers: local worker processes (the results do not depend on it); tensorboard: a
    folder for TensorBoard event files (regret curves and d_KL as cells finish).
    """
    check_num_resamples(num_resamples)  # before hours of cells, not after
    # One claim of OUT (lock and manifest) for the cells and the analysis both;
    # run_preset's own claim inside it is the same run's, so it is re-entrant.
    with claim_preset_dir(preset, out, agents, agent_files, flag="--out", settings=settings) as out:
        board = None if tensorboard is None else TensorBoardLog(tensorboard)
        try:
            testbed, bandit = run_preset(preset, out, agents, agent_files, executor, address, progress,
                                         workers=workers, settings=settings,
                                         on_cell_done=None if board is None else functools.partial(_log_cell, board))
            if board is not None:
                # The cells this session reused (computed before an interruption) too;
                # points already in the event files are not written twice.
                board.testbed_rows(testbed)
                board.bandit_rows(bandit)
        finally:
            if board is not None:
                board.close()
        return analyze(out, num_resamples=num_resamples, seed=0)


def _log_cell(board: TensorBoardLog, cell, rows: pd.DataFrame) -> None:
    if cell.kind == "testbed":
        board.testbed_rows(rows)
    else:
        board.bandit_rows(bandit_rows([(cell, rows)]))


def agent_table(result) -> pd.DataFrame:
    """The per-agent table the console leads with: the agent-level points the headline
    correlates (each agent's mean d_KL over all its testbed rows, one column per
    metric) and its mean final regret over bandit seeds with the standard error.
    mlp first, then alphabetically; empty without agent-level points."""
    points = result.agents
    if points is None or points.empty:
        return pd.DataFrame()
    wide = points.pivot_table(index="agent", columns="metric", values="kl", aggfunc="mean")
    wide = wide[[m for m in ("dkl_1", "dkl_10", "dkl_10_kappa2") if m in wide.columns]]
    per_seed = result.joined.drop_duplicates(["agent", "seed"])  # a seed's regret repeats per metric
    regret = per_seed.groupby("agent")["regret"].agg(["mean", "sem", "count"])
    table = wide.join(regret.rename(columns={"mean": "regret", "sem": "regret_se", "count": "seeds"}))
    table["regret"] = points.groupby("agent")["regret"].first()  # exactly the headline's points
    agents = sorted(table.index, key=lambda a: (a != "mlp", a))
    table = table.reindex(agents)
    table["seeds"] = table["seeds"].astype("Int64")
    table.columns.name = None
    return table


def _print_summary(out: Path, result, preset: str | None = None) -> None:
    """The console after a reproduction: the per-agent table, then the headline at the
    level that answers the papers' question and the preset's scope; the correlations
    of every level stay in report.md and correlations.csv."""
    corr = result.correlations
    drawn = "" if result.figures_skipped else ", figures"
    print(f"\nresults in {out}/: testbed.csv, bandit.csv, correlations.csv, report.md{drawn}")
    table = agent_table(result)
    if not table.empty:
        print("\nper agent: mean testbed d_KL over settings and seeds; mean final bandit regret over seeds\n"
              "and its standard error (regret_se). These agent points are what the headline correlates:")
        kl_format, regret_format = (lambda v: f"{v:.4f}"), (lambda v: f"{v:.1f}")
        formats = {c: regret_format if c.startswith("regret") else kl_format for c in table.columns if c != "seeds"}
        with pd.option_context("display.width", 120):
            print(table.reset_index().to_string(index=False, formatters=formats))
    if result.levels:
        level = next((lv for lv in HEADLINE_LEVELS if result.levels.get(lv)), None)
        print("\n" + textwrap.fill(headline(result.levels).replace("**", ""), 100))
        if level is not None and "level" in corr.columns:
            print_skewed_intervals(corr[corr["level"] == level])
        print(f"correlations at every level ({', '.join(result.levels)}): {out}/report.md and correlations.csv")
    print_robustness(result)
    if preset in PRESET_SCOPE:
        print(textwrap.fill(PRESET_SCOPE[preset], 100))
    print(f"\nreport: {result.report}")
    if result.figures_skipped:
        print(FIGURES_SKIPPED)


def register(subparsers) -> argparse.ArgumentParser:
    for name, help_text in (
        ("reproduce", "testbed + bandit + analysis, resumable (the papers' headline result)"),
        ("demo", "what `make demo` runs: reproduce --preset demo"),
    ):
        p = add_command(subparsers, name, help_text, help_text)
        if name == "reproduce":
            p.add_argument("--preset", default=None, choices=PRESET_NAMES,
                           help="(default: demo) demo: < 3 min on 2 cores; quick: < 30 min; standard: the papers' headline "
                           "at laptop size (<= 60 min); paper: the papers' full setting; robustness: paper 000 "
                           "Sec. 6 and Figs. 16-17 across generative models and bandit dimensions (cluster-sized); "
                           "robustness-quick: a slice of it, < 45 min on 2 cores")
            p.add_argument("--config", default=None, metavar="FILE",
                           help="an experiment file (TOML, docs/custom_agent.md) instead of --preset; "
                           "--preset and --agents are refused beside it (edit the file), --agent-file "
                           "and --set apply on top of it as on top of a preset")
            p.add_argument("--print-config", action="store_true",
                           help="print the run's experiment (the preset, or --config, with --agents and "
                           "--set applied) as an experiment file and exit; fed back with --config it "
                           "is the identical run")
        p.add_argument("--out", default=f"runs/{name}", help="run directory (re-run the same command to resume; another run's folder is refused)")
        p.add_argument("--agents", default=None,
                       help="comma-separated registered agents instead of the preset's")
        add_agent_options(
            p, "; applied over the preset's own overrides",
            agent_file_help="a Python file defining make_agent(spec) (and NAME), run next to the preset's "
            "agents; results are keyed by the file's SHA-256; may repeat",
        )
        p.add_argument("--executor", default="local", choices=("local", "ray"))
        p.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
        p.add_argument("--workers", default="auto",
                       help="cells computed at once by local worker processes (with --executor local): "
                       f"a count >= 1, or auto (the cores available, at most 4; here {default_workers()})")
        p.add_argument("--cells-from", action="append", default=[], metavar="DIR",
                       help="a folder of finished cell files (another run's cells/, or the committed parts of "
                       "a long run, bench/data/paper_cells): this run's cells found there, verified and made "
                       "by this version, are copied in and not recomputed; may repeat")
        p.add_argument("--resamples", default=1000, metavar="N", help=RESAMPLES_HELP)
        add_display_options(p, "bars", "regret curves and d_KL", "as cells finish")
        p.add_argument("--estimate", action="store_true",
                       help="print the cells, bandit steps and estimated wall time of every preset (this one's "
                       "with its --agents and --workers) and run nothing")
        p.add_argument("--status", action="store_true",
                       help="print how far the run in --out is (cells finished, each bandit run started: its "
                       "steps saved) and run nothing; safe beside the running command (give its arguments)")
        p.set_defaults(func=_run, preset_name="demo" if name == "demo" else None)
    return p


def estimate_table(workers: int) -> pd.DataFrame:
    """One row per preset: its cells, fits, bandit seed-steps and estimated wall time
    (cold compilation cache) with ``workers`` local worker processes."""
    rows = []
    for name in PRESET_NAMES:
        estimate = preset_estimate(name, workers=workers)
        rows.append({
            "preset": name, "testbed cells": estimate.testbed_cells, "fits": estimate.testbed_problems,
            "bandit runs": estimate.bandit_cells, "seed-steps": estimate.bandit_seed_steps,
            "cores": estimate.parallel, "compiling": format_duration(estimate.compile_seconds / estimate.parallel),
            "wall (estimate)": format_duration(estimate.wall_seconds),
        })
    return pd.DataFrame(rows)


def print_estimates(preset: Preset, agents, agent_files, workers: int, settings: dict | None = None) -> None:
    """``reproduce --estimate``: every preset's estimate, then the chosen one's line
    (with its --agents, --agent-file, --set and --workers)."""
    table = estimate_table(workers)
    print(table.to_string(index=False))
    estimate = preset_estimate(preset, None, agents, agent_files, workers, settings)
    print(f"--preset {preset.name}: {estimate.line()}")


def _workers(value: str, executor: str) -> int:
    """--workers as a count: "auto" is default_workers() locally and 1 with Ray (Ray
    places its own tasks)."""
    if value.strip().lower() == "auto":
        return default_workers() if executor == "local" else 1
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"workers must be a count >= 1 or 'auto', got {value!r}")
    if count > 1 and executor != "local":
        raise ValueError(f"workers is only used with --executor local, got --workers {value}")
    return count


def _preset(args: argparse.Namespace):
    """The run's preset: --config's experiment file, else --preset's name (demo by
    default). Beside --config, the flags the file itself sets (--preset, --agents)
    are refused rather than silently overriding it."""
    config = getattr(args, "config", None)
    if config is None:
        return args.preset_name or getattr(args, "preset", None) or "demo"
    given = [flag for flag, value in (("--preset", getattr(args, "preset", None)), ("--agents", args.agents)) if value is not None]
    if given:
        raise ValueError(
            f"--config {config!r} sets the experiment; {' and '.join(given)} cannot be given beside it "
            "(edit the file, or drop --config)"
        )
    return read_experiment_file(config)


def _run(args: argparse.Namespace) -> int:
    preset = _preset(args)
    # None (not given): the preset's agents; given, the shared rule (an empty list or a
    # repeated name is refused rather than falling back to the whole preset).
    agents = None if args.agents is None else parse_agent_list(args.agents)
    if agents:
        check_agents(agents)
    agent_files = tuple(args.agent_files)
    base = get_preset(preset) if isinstance(preset, str) else preset
    custom = read_agent_files(agent_files, registered=agents if agents is not None else base.agents)
    run_agents = (agents if agents is not None else base.agents) + tuple(f.name for f in custom)
    settings = parse_settings(args.settings, run_agents, custom)
    if getattr(args, "print_config", False):
        if agent_files:
            raise ValueError("--print-config writes registered agents only: give --agent-file beside --config")
        chosen = base if agents is None else dataclasses.replace(base, agents=agents)
        sys.stdout.write(preset_to_toml(with_settings(chosen, settings)))
        return 0
    resamples = parse_resamples(args.resamples)
    workers = _workers(args.workers, args.executor)
    if getattr(args, "estimate", False):
        print_estimates(base, agents, agent_files, workers, settings)
        return 0
    if args.status:
        print("\n".join(run_progress(preset, args.out, agents, agent_files, settings).lines()))
        left = preset_estimate(base, args.out, agents, agent_files, workers, settings)
        print(f"the cells not finished (a started bandit run counted whole), {left.line()}")
        return 0
    # Claimed before the first line is printed: a refused folder is one line.
    with claim_preset_dir(preset, args.out, agents, agent_files, flag="--out", settings=settings) as out:
        source = f"--config {args.config}" if getattr(args, "config", None) else f"--preset {base.name}"
        print(f"decision-bench reproduce {source}: writing to {out}/ (re-run to resume)", file=sys.stderr)
        for folder, count in copy_finished_cells(args.cells_from, preset, out, agents, agent_files, settings).items():
            print(f"{count} finished cells copied from {folder}", file=sys.stderr)
        print(preset_estimate(base, out, agents, agent_files, workers, settings).line(), file=sys.stderr)
        result = reproduce(
            preset,
            out,
            agents=agents,
            agent_files=agent_files,
            executor=args.executor,
            address=args.address,
            num_resamples=resamples,
            progress=not args.no_progress,
            workers=workers,
            settings=settings,
            tensorboard=args.tensorboard,
        )
    builtin = isinstance(preset, str) or (base.name in PRESET_NAMES and get_preset(base.name) == base)
    _print_summary(out, result, base.name if builtin else None)
    return 0
