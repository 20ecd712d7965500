"""Paper 000's agent selection: every agent's reference sweep scored by d_KL^agg.

Paper 000 (App. C, E.2) sets each agent's defaults to the point of its sweep with the
lowest aggregated score d_KL^agg = d_KL^1 + d_KL^10 / 10. The sweeps it ran are the
ones its release ships (neural_testbed ``agents/factories/sweeps/testbed_2d``): for
each agent a union of small *studies* around the default (one knob or a small product
of knobs, the rest at their defaults), not one product grid. ``PAPER_STUDIES`` writes
them in this package's hyperparameter names:

    rows = run_selection("mlp", selection_sweep(), seeds=5, resume_dir="runs/select")
    table = selection_table(rows)             # one row per point, best and default marked
    verdict = default_against_best("mlp", rows)

Each study is one ``tune`` call: its real-valued grid is one vmapped program, its
shape-setting values (ensemble size, widths, steps, a bootstrap or prior form) are
the study's fixed overrides. Every point is scored on the same problems (``tune``
draws them as ``run_testbed`` does), so the default and the best point are compared
paired, problem by problem. The best point of many is chosen on the same noisy
problems it is scored on, so its advantage over the default is optimistic: the
verdict says "within noise" when the default's paired excess is below two standard
errors.

Reference options with no counterpart in this package's agents (``LEFT_OUT``) are
listed, not approximated.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from decision_bench._src.versions import result_versions, stale_versions
from decision_bench.agents.registry import config as agent_config
from decision_bench.evaluation.sweeps import Sweep, custom_sweep
from decision_bench.evaluation.tune import check_grid, grid_points, setting_file_name, tune
from decision_bench.experiments.estimate import Estimate, estimate_cells
from decision_bench.experiments.testbed_cell import sweep_cells


@dataclasses.dataclass(frozen=True)
class Study:
    """One study of an agent's reference sweep.

    name: what it varies; grid: {real-valued hyperparameter: values}, every
    combination a point, fitted as one vmapped program; overrides: the study's other
    settings (shape-setting ones included), fixed for all its points.
    """

    name: str
    grid: Mapping[str, tuple[float, ...]]
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def points(self) -> list[dict[str, Any]]:
        """Every point of the study as {name: value}, overrides included."""
        return [{**self.overrides, **point} for point in grid_points(self.grid)]


_L2 = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
_MEMBERS = (1, 3, 10, 30, 100)


def _one_each(knob: str, values: Sequence[Any], grid: Mapping[str, tuple[float, ...]]) -> tuple[Study, ...]:
    """A study per value of a shape-setting knob, each at the grid given (usually the
    default's one point, so the study is the knob alone)."""
    return tuple(Study(f"{knob}={v}", dict(grid), {knob: v}) for v in values)


# The reference's testbed_2d sweeps (neural_testbed 69afa0e), one entry per study, in
# this package's names. Reference names: l2_weight_decay -> l2, num_batches ->
# num_steps, distribution -> bootstrap, temp_scale_prior 'lin' / 'sqrt' ->
# prior_temperature_power 1 / 0.5, mixture_scale -> mixture_weight, momentum_decay ->
# momentum. Only the reference's adaptive_weight_scale=True halves are here (LEFT_OUT).
PAPER_STUDIES: dict[str, tuple[Study, ...]] = {
    "mlp": (Study("l2", {"l2": _L2}),),
    "ensemble": (
        *_one_each("num_ensemble", _MEMBERS, {"l2": (1.0,)}),
        Study("l2 (30 members)", {"l2": _L2}, {"num_ensemble": 30}),
    ),
    "ensemble+": (
        Study("l2", {"l2": (0.1, 0.3, 1.0, 3.0, 10.0)}),
        *_one_each("num_ensemble", _MEMBERS, {"l2": (1.0,)}),
        *_one_each("bootstrap", ("bernoulli", "exponential"), {"l2": (1.0,)}),
    ),
    "dropout": (
        Study("dropout_rate", {"dropout_rate": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)}),
        Study("length_scale", {"length_scale": (1.0, 3.0, 10.0)}),
        *_one_each("hidden_sizes", ((50, 50), (50, 50, 50)), {"dropout_rate": (0.1,)}),
    ),
    "hypermodel": (
        *(Study(f"prior (prior_hidden_sizes={h})",
                {"prior_scale": (0.0, 1.0), "l2": (1.0, 2.0), "prior_temperature_power": (1.0, 0.5)},
                {"prior_hidden_sizes": h})
          for h in ((10,), (10, 10))),
        *_one_each("index_dim", (1, 3, 5, 7), {"l2": (1.0,)}),
        Study("l2", {"l2": (0.1, 0.3, 1.0, 3.0, 10.0)}),
    ),
    "bbb": (
        *(Study(f"learning_rate x sigma_1 (num_steps={n})",
                {"learning_rate": (1e-3, 3e-3), "sigma_1": (0.3, 0.5, 0.7, 1.0, 2.0)}, {"num_steps": n})
          for n in (1000, 2000)),
        Study("prior mixture", {"sigma_1": (1.0, 2.0, 4.0), "sigma_2": (0.3, 0.5, 0.7)}, {"mixture_weight": 0.5}),
        *_one_each("hidden_sizes", ((100, 100), (50, 50, 50)), {"learning_rate": (3e-3,)}),
    ),
    "sgmcmc": (
        Study("learning_rate x prior_variance",
              {"learning_rate": (1e-4, 5e-4, 1e-3, 5e-3), "prior_variance": (0.05, 0.1, 0.2)}),
    ),
}

# Reference studies (or halves of them) this package's agents cannot express.
LEFT_OUT: dict[str, tuple[str, ...]] = {
    "mlp": ("adaptive_weight_scale=False (7 points): the L2 weight here always scales with beta, d and T",),
    "ensemble": ("adaptive_weight_scale=False (7 points)",),
    "ensemble+": (),
    "dropout": ("dropout_input=True (10 points): no input dropout here",
                "adaptive_weight_scale=False (3 points)"),
    "hypermodel": ("bootstrap (3 points): the hypermodel here has no bootstrap weights",),
    "bbb": (),
    "sgmcmc": ("preconditioner='RMSprop' (12 points)",
               "alg_temperature=0, SGD without noise (12 points)"),
    "epinet": ("the whole sweep: the reference ships no testbed_2d sweep for epinet",),
}

# The slice of paper2d scored when the whole of it is unaffordable, fixed before any
# selection result was seen: the four T and three beta where the reference's own
# figures exist (bench/data/reference_*.csv), seeds 0-4 of paper2d's 10.
SLICE_NUM_TRAINS = (1, 10, 100, 1000)
SLICE_TEMPERATURES = (0.01, 0.1, 0.5)
# sgmcmc's 500k-step chains make that slice about 10 h of 2 cores (its 12 points), so its
# own, fixed on 2026-11-28 before any of its selection results: the problems the
# reference's sgmcmc was run on (bench/data/REFERENCE.md), T in {10, 100} at beta = 0.1.
AGENT_SLICES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {"sgmcmc": ((10, 100), (0.1,))}


def slice_of(agent: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(num_trains, temperatures) an agent's selection scores by default."""
    return AGENT_SLICES.get(agent, (SLICE_NUM_TRAINS, SLICE_TEMPERATURES))


def selection_sweep(num_trains: Sequence[int] = SLICE_NUM_TRAINS,
                    temperatures: Sequence[float] = SLICE_TEMPERATURES, num_seeds: int = 5) -> Sweep:
    """The testbed settings the selection scores (d = 2, random-MLP prior, tau 1 and 10 iid)."""
    return custom_sweep(input_dims=2, num_trains=num_trains, temperatures=temperatures,
                        taus=(1, 10), num_seeds=num_seeds)


def studies(agent: str) -> tuple[Study, ...]:
    """The agent's studies; ValueError naming the agents that have a sweep otherwise."""
    if agent not in PAPER_STUDIES:
        raise ValueError(f"agent: no reference sweep for {agent!r}; agents with one: {', '.join(PAPER_STUDIES)}")
    return PAPER_STUDIES[agent]


def estimate_selection(agent: str, sweep: Sweep, seeds: int, parallel: int = 1) -> Estimate:
    """The cost of ``run_selection``, counted as one testbed cell per (point, setting):
    an upper figure, since a study's points share one compiled program."""
    cells = [
        cell
        for study in planned_studies(agent)
        for point in study.points()
        for cell in sweep_cells([agent], sweep, range(seeds), num_test=1000, num_models=1000,
                                agent_configs={agent: point})
    ]
    return estimate_cells(cells, parallel=parallel)


def planned_studies(agent: str) -> tuple[Study, ...]:
    """The studies that add a point: a study all of whose points an earlier one already
    scores (e.g. ensemble+'s 100 members at the default l2) is left out."""
    seen: set[str] = set()
    kept = []
    for study in studies(agent):
        labels = {point_label(agent, p) for p in study.points()}
        if not labels <= seen:
            kept.append(study)
        seen |= labels
    return tuple(kept)


def run_selection(agent: str, sweep: Sweep, seeds: int, *, resume_dir: str | Path | None = None,
                  progress: bool = False, num_test: int = 1000, num_models: int = 1000) -> pd.DataFrame:
    """Every study's rows (``tune``'s, one per point, setting, seed and tau), with the
    columns ``study`` and ``point`` (``point_label``) added. A study's settings are
    stored under resume_dir as tune stores them, so a rerun resumes.

    resume_dir also records the versions its settings were made with (``VERSIONS_FILE``,
    ``parts_versions`` reads it): a folder kept in the repository is checked against
    the versions that named it, whatever a later install holds. One made with other
    versions is refused (ValueError): its settings would not be reused, only recomputed
    beside them into a folder no record describes."""
    if resume_dir is not None:
        _record_versions(Path(resume_dir))
    frames = []
    for study in planned_studies(agent):
        rows, _ = tune(agent, study.grid, sweep, seeds, num_test=num_test, num_models=num_models,
                       overrides=dict(study.overrides), resume_dir=resume_dir, progress=progress)
        grid_names = list(study.grid)
        rows["point"] = [
            point_label(agent, {**study.overrides, **{n: r[n] for n in grid_names}}) for _, r in rows.iterrows()
        ]
        rows["study"] = study.name
        frames.append(rows.drop(columns=grid_names))
    return pd.concat(frames, ignore_index=True)


# The file under run_selection's resume_dir naming the versions its settings were made with.
VERSIONS_FILE = "versions.json"


def parts_versions(resume_dir: str | Path) -> dict[str, str | None] | None:
    """The versions (``result_versions``) that run_selection recorded in resume_dir, or None
    when it recorded none."""
    path = Path(resume_dir) / VERSIONS_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _record_versions(resume_dir: Path) -> None:
    recorded = parts_versions(resume_dir)
    if recorded is None:
        resume_dir.mkdir(parents=True, exist_ok=True)
        (resume_dir / VERSIONS_FILE).write_text(json.dumps(dict(result_versions()), indent=1) + "\n")
    elif recorded != dict(result_versions()):
        raise ValueError(
            f"resume_dir: {resume_dir} holds settings made with {stale_versions(recorded) or recorded}; this install "
            "would recompute them all beside them: choose another folder (--out), or install those versions"
        )


def setting_files(agent: str, sweep: Sweep, seeds: int, *, num_test: int = 1000, num_models: int = 1000,
                  versions: Mapping[str, str | None] | None = None) -> dict[str, tuple[Study, Any]]:
    """{file name: (study, sweep setting)}: the finished-setting files ``run_selection``
    stores under its resume_dir, one per planned study and setting, named as ``tune``
    names them (``tune.setting_file_name``), so a folder of kept files can be checked
    against what a rerun would reuse. versions: those the folder was made with
    (``parts_versions``); default this install's."""
    return {
        setting_file_name(agent, check_grid(agent, study.grid, study.overrides), setting, seeds,
                          overrides=study.overrides, num_test=num_test, num_models=num_models,
                          versions=versions): (study, setting)
        for study in planned_studies(agent)
        for setting in sweep.settings
    }


def point_label(agent: str, point: Mapping[str, Any]) -> str:
    """The settings of a point that differ from the agent's registered default, as
    'name=value, ...' in name order; "default" when none does."""
    default = agent_config(agent)
    changed = [n for n in sorted(point) if not _same(getattr(default, n), point[n])]
    return ", ".join(f"{n}={_text(point[n])}" for n in changed) or "default"


def _same(mine: Any, value: Any) -> bool:
    if isinstance(mine, (tuple, list)) or isinstance(value, (tuple, list)):
        return tuple(mine) == tuple(value)
    if isinstance(mine, str) or isinstance(value, str):
        return mine == value
    return math.isclose(float(mine), float(value), rel_tol=1e-9)


def _text(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(str(v) for v in value) + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# What makes two rows the same problem (tune scores every point on the same ones).
_PROBLEM = ["input_dim", "num_train", "temperature", "seed"]


def _distinct(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (point, problem, tau): a point two studies share is scored once."""
    return rows.drop_duplicates(["point", *_PROBLEM, "tau"])


def _aggregate_per_problem(rows: pd.DataFrame) -> pd.DataFrame:
    """d_KL^agg per (point, problem): index point, columns the problems (setting, seed)."""
    per = rows.pivot_table(index=["point", *_PROBLEM], columns="tau", values="kl", aggfunc="first", dropna=False)
    agg = (per[1] + per[10] / 10.0).rename("dkl_agg").reset_index()
    return agg.pivot_table(index="point", columns=_PROBLEM, values="dkl_agg", aggfunc="first", dropna=False)


def selection_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct point (the first study that has it): study, point,
    dkl_1, dkl_10, dkl_agg (means over the problems), dkl_agg_stderr, default, best."""
    rows = _distinct(rows)
    study_of = rows.groupby("point", sort=False)["study"].first()
    per_tau = rows.pivot_table(index="point", columns="tau", values="kl", aggfunc=lambda v: v.mean(skipna=False))
    agg = _aggregate_per_problem(rows)
    table = pd.DataFrame({
        "study": study_of,
        "dkl_1": per_tau[1].reindex(study_of.index),
        "dkl_10": per_tau[10].reindex(study_of.index),
        "dkl_agg": agg.mean(axis=1, skipna=False).reindex(study_of.index),
        "dkl_agg_stderr": agg.sem(axis=1).reindex(study_of.index),
        "num_problems": agg.notna().sum(axis=1).reindex(study_of.index),
        "default": study_of.index == "default",
    })
    table["best"] = table.dkl_agg == table.dkl_agg.min()
    return table.rename_axis("point").reset_index()


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The default against the selected (best) point, paired over the same problems.

    excess: mean over problems of d_KL^agg(default) - d_KL^agg(best); stderr: its
    standard error; within_noise: excess < 2 stderr (or the default is the best).
    """

    agent: str
    best: str
    default: str | None
    best_dkl_agg: float
    default_dkl_agg: float
    excess: float
    stderr: float
    num_problems: int
    runner_up: str | None = None  # the second-best point, when the default is the best
    runner_up_excess: float = math.nan  # its paired excess over the default
    runner_up_stderr: float = math.nan

    @property
    def within_noise(self) -> bool:
        return self.best == self.default or self.excess < 2 * self.stderr

    def line(self) -> str:
        if self.default is None:
            return f"{self.agent}: the default is not among the points scored"
        if self.best == self.default:
            line = (f"{self.agent}: the registered default is the selected point, "
                    f"d_KL^agg {self.default_dkl_agg:.4g} over {self.num_problems} problems")
            if self.runner_up is not None:
                line += (f"; the next best, {self.runner_up}, is {self.runner_up_excess:+.4g} +- "
                         f"{self.runner_up_stderr:.2g} above it (paired)")
            return line
        # The default point's label is "default" (point_label): not printed twice.
        default = "the default" if self.default == "default" else f"the default ({self.default})"
        if not math.isfinite(self.stderr):
            return (f"{self.agent}: selected {self.best}; {default}, paired excess "
                    f"{self.excess:+.4g} over {self.num_problems} problem(s): too few for a verdict")
        verdict = "within noise of" if self.within_noise else "worse than"
        return (f"{self.agent}: selected {self.best} (d_KL^agg {self.best_dkl_agg:.4g}); {default} "
                f"{self.default_dkl_agg:.4g}, paired excess {self.excess:+.4g} +- "
                f"{self.stderr:.2g} over {self.num_problems} problems: {verdict} the selected point")


def default_against_best(agent: str, rows: pd.DataFrame) -> Verdict:
    """The Verdict for an agent's selection rows (``run_selection``)."""
    table = selection_table(rows)
    agg = _aggregate_per_problem(_distinct(rows))
    best = table.loc[table.best, "point"].iloc[0]
    defaults = table.loc[table.default, "point"]
    if defaults.empty:
        row = table[table.best].iloc[0]
        return Verdict(agent, best, None, float(row.dkl_agg), math.nan, math.nan, math.nan, 0)
    default = defaults.iloc[0]
    difference = (agg.loc[default] - agg.loc[best]).dropna()
    runner = {}
    others = table[table.point != best].dropna(subset=["dkl_agg"]).sort_values("dkl_agg")
    if best == default and len(others):
        second = others.point.iloc[0]
        margin = (agg.loc[second] - agg.loc[default]).dropna()
        runner = dict(runner_up=second, runner_up_excess=float(margin.mean()),
                      runner_up_stderr=float(margin.sem()) if len(margin) > 1 else math.nan)
    return Verdict(
        agent, best, default,
        float(table.set_index("point").loc[best, "dkl_agg"]),
        float(table.set_index("point").loc[default, "dkl_agg"]),
        float(difference.mean()), float(difference.sem()) if len(difference) > 1 else math.nan,
        int(len(difference)), **runner,
    )
