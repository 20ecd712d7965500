"""The main job's computing half: a preset's testbed and bandit cells, resumable.

``run_preset(preset, out)`` runs, for each agent, the testbed sweep of the
preset (d_KL^1, d_KL^10 iid, d_KL^{10, kappa=2}) and Thompson sampling on the
neural bandit. ``decision-bench reproduce`` (decision_bench.cli.reproduce) then
correlates joint and marginal prediction quality with regret (paper 000, Sec.
5.2) with ``decision_bench.analysis``, which sits above this package. Work is split into cells
(one agent on one testbed setting, or one agent's bandit run over all seeds);
each finished cell is stored atomically under ``DIR/cells/``, so running the same
command again resumes where it stopped. Bandit runs also save their carry every
chunk under ``DIR/bandit_runs/`` and resume mid-run. testbed.csv and bandit.csv
grow as cells finish (``GrowingTables``), so ``analyze`` can read a run in progress.

Outputs: DIR/testbed.csv, DIR/bandit.csv (with the family columns activation
and hidden_sizes beside input_dim and num_actions) and DIR/run.json (preset, versions,
timings); the analysis adds DIR/correlations.csv, the figures and DIR/report.md.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from decision_bench._src.files import atomic_write_text, write_results_csv
from decision_bench._src.rundir import argument_differences, claim_run_dir, plain_arguments, read_manifest
from decision_bench._src.validation import check_choice, repeated
from decision_bench._src.versions import environment_info
from decision_bench.agents import names as agent_names
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.bandit.checkpoints import saved_progress
from decision_bench.experiments.agent_files import (
    AgentFile,
    current_make_agent,
    file_pairs,
    host_agent_names,
    read_agent_files,
)
from decision_bench.experiments.agent_files import load_agent_file  # noqa: F401 - its home before agent_files.py
from decision_bench.experiments.bandit_cell import bandit_cell, compute_bandit_cell, with_family_columns
from decision_bench.experiments.baselines import (
    load_baselines, reusable_bandit_rows, reusable_rows, reuse_stored_rows, stored_names,
)
from decision_bench.experiments.cells import Cell, config_label
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.estimate import cell_seconds, format_duration
from decision_bench.experiments.presets import PRESET_NAMES, Preset, sorted_items, get_preset, testbed_sweep
from decision_bench.experiments.store import ResultsStore, concat_tables, copy_cells, edit_notes
from decision_bench.experiments.testbed_cell import compute_testbed_cell, sweep_cells


def build_cells(preset: Preset, agents: tuple[str, ...], agent_files: dict[str, str] | None = None):
    """The preset's cells: one per (agent, testbed setting) and one per agent's bandit run
    (per group of its seeds where the preset splits them).

    agent_files: name -> SHA-256 of the agent file of each user agent among
    ``agents``; the digest goes into its cells (and so their ids): an edited file
    names new cells rather than reusing the old file's rows.
    """
    digests = dict(agent_files or {})
    cells = []
    seeds = tuple(range(preset.testbed_seeds))
    # The testbed-only agents' cells last: no headline point waits for them.
    both_sides = tuple(a for a in agents if preset.runs_bandit(a))
    testbed_only = tuple(a for a in agents if not preset.runs_bandit(a))
    for group in (both_sides, testbed_only):
        for sweep_name in preset.testbed_sweeps if group else ():
            cells.extend(sweep_cells(
                group, testbed_sweep(sweep_name), seeds,
                num_test=preset.num_test,
                num_models=preset.num_models,
                agent_configs={agent: preset.overrides("testbed", agent) for agent in group},
                agent_files=digests,
                sweep_name=sweep_name,
            ))
    # One cell per (agent, bandit setting, seed group): one group of all the seeds unless
    # the preset splits the agent's (``Preset.bandit_seeds_per_cell``); agents outermost.
    for agent in both_sides:
        for setting in preset.bandit_settings:
            for seeds in preset.bandit_seed_groups(agent):
                cells.append(bandit_cell(
                    agent,
                    preset.overrides("bandit", agent),
                    {"env": preset.bandit_env, "num_steps": preset.bandit_steps, **dict(setting)},
                    seeds,
                    digests.get(agent),
                ))
    return tuple(cells)


def bandit_table(store: ResultsStore, cells) -> pd.DataFrame:
    """The bandit cells' rows with their family columns (activation, hidden_sizes)
    after temperature; added here, from each cell, so runs stored earlier get them too."""
    return bandit_rows([(cell, store.load([cell])) for cell in cells])


def bandit_rows(cells_and_rows) -> pd.DataFrame:
    """``bandit_table`` of (bandit cell, its stored rows) pairs, in the given order."""
    frames = [with_family_columns(frame, cell) for cell, frame in cells_and_rows]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def with_agent_config(frame: pd.DataFrame, cells) -> pd.DataFrame:
    """``frame`` (rows of ``cells``, one kind) with an agent_config column after agent:
    each agent's overrides (a preset's, an experiment file's or --set values; ""
    for its defaults), when any cell of the run has one, so a 30-member "ensemble" is
    never read as the 100-member one; rows of runs without keep their columns."""
    labels = {c.agent: config_label(dict(c.agent_config)) for c in cells}
    if frame.empty or "agent_config" in frame.columns or not any(labels.values()):
        return frame
    frame = frame.copy()
    frame.insert(frame.columns.get_loc("agent") + 1, "agent_config", frame["agent"].map(labels).fillna(""))
    return frame


def _both(first: Callable, second: Callable | None) -> Callable:
    if second is None:
        return first

    def call(cell: Cell, rows: pd.DataFrame) -> None:
        first(cell, rows)
        second(cell, rows)

    return call


class GrowingTables:
    """testbed.csv and bandit.csv of a run in progress: after each finished cell,
    the rows of every finished cell of that kind, in the plan's cell order,
    rewritten atomically (``write_results_csv``: CSV and checksum agree at every
    moment), so ``analyze`` can read the run while it goes on. The finished run's
    files are written by ``run_preset`` from the store, as before, so a resumed run
    ends with the files of an uninterrupted one."""

    def __init__(self, out: Path, cells, store: ResultsStore):
        self.out, self.cells, self.store = Path(out), tuple(cells), store
        self.rows: dict[str, pd.DataFrame] = {}  # cell id -> rows, of the finished cells

    def _finished(self, kind: str) -> list:
        pairs = []
        for cell in self.cells:
            if cell.kind != kind:
                continue
            if cell.id not in self.rows and self.store.path(cell).exists():
                # Finished in an earlier session: read once.
                stored = self.store.read(cell)
                if stored is not None:
                    self.rows[cell.id] = stored
            if cell.id in self.rows:
                pairs.append((cell, self.rows[cell.id]))
        return pairs

    def cell_done(self, cell: Cell, rows: pd.DataFrame) -> None:
        self.rows[cell.id] = rows
        finished = self._finished(cell.kind)
        kind_cells = [c for c in self.cells if c.kind == cell.kind]
        if cell.kind == "testbed":
            table = with_agent_config(concat_tables([r for _, r in finished]), kind_cells)
            write_results_csv(self.out / "testbed.csv", table)
        else:
            write_results_csv(self.out / "bandit.csv", with_agent_config(bandit_rows(finished), kind_cells))


@dataclasses.dataclass(frozen=True)
class CellRunner:
    """compute_fn for ``run_cells``: turns a cell into its rows (picklable for Ray)."""

    out_dir: str
    custom_agents: tuple = ()  # ((name, agent file path), ...)
    progress: bool = True  # the bandit runs' step bars

    def _custom(self, cell: Cell):
        """The user's make_agent for a cell of an agent file, None for a registered
        agent (``agent_files.current_make_agent``: the file must still be the one
        the cell was planned with)."""
        paths = dict(self.custom_agents)
        if cell.agent not in paths:
            return None
        return current_make_agent(paths[cell.agent], cell.agent_file_sha256)

    def __call__(self, cell) -> pd.DataFrame:
        if cell.kind == "testbed":
            return self._testbed(cell)
        return self._bandit(cell)

    def _testbed(self, cell) -> pd.DataFrame:
        return compute_testbed_cell(cell, agent_files=self.custom_agents)

    def _bandit(self, cell) -> pd.DataFrame:
        return compute_bandit_cell(
            cell, self._custom(cell), out_dir=Path(self.out_dir) / "bandit_runs" / cell.id, resume=True,
            progress=self.progress,
        )


def check_agents(agents: tuple[str, ...]) -> None:
    """Every name registered and able to run both the testbed and the neural bandit."""

    for agent in agents:
        check_choice("agent", agent, agent_names())
        check_inputs_fit(agent, "the testbed and NeuralBandit-v0", one_hot=False)


Settings = Mapping[str, Mapping[str, Any]]  # {agent: {hyperparameter: value}}, as --set gives them


def with_settings(preset: Preset, settings: Settings | None) -> Preset:
    """``preset`` with ``settings`` applied over its testbed and bandit overrides (a
    setting wins over the preset's value of the same hyperparameter)."""
    if not settings:
        return preset

    def merged(table: tuple) -> tuple:
        mapping = {agent: dict(items) for agent, items in table}
        for agent, values in settings.items():
            mapping.setdefault(agent, {}).update(values)
        return sorted_items(mapping)

    return dataclasses.replace(
        preset, testbed_overrides=merged(preset.testbed_overrides), bandit_overrides=merged(preset.bandit_overrides)
    )


def _plan(
    preset: str | Preset,
    agents: tuple[str, ...] | None,
    agent_files: tuple[str, ...],
    settings: Settings | None = None,
) -> tuple[Preset, tuple[str, ...], tuple[AgentFile, ...]]:
    """(preset with ``settings`` applied, registered agents, loaded agent files),
    validated; ValueError naming what is wrong."""
    preset = get_preset(preset) if isinstance(preset, str) else preset
    chosen = preset.agents if agents is None else tuple(agents)
    if not chosen:
        raise ValueError("agents must name at least one agent (None: the preset's), got an empty list")
    check_agents(chosen)
    custom = read_agent_files(agent_files, registered=chosen)
    all_agents = chosen + tuple(f.name for f in custom)
    if repeats := repeated(all_agents):
        # Two cells of one id would be computed and their rows written twice.
        raise ValueError(f"agents and agent files name {repeats} twice; give each agent once")
    strangers = sorted(set(settings or {}) - set(all_agents))
    if strangers:
        raise ValueError(f"settings name {strangers}, which this run does not run; its agents are {list(all_agents)}")
    return with_settings(preset, settings), chosen, custom


def preset_cells(
    preset: str | Preset,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    settings: Settings | None = None,
) -> tuple[Cell, ...]:
    """The run's cells (``build_cells``) for these arguments, checked as ``run_preset`` checks them."""
    planned, chosen, custom = _plan(preset, agents, agent_files, settings)
    return build_cells(planned, chosen + tuple(f.name for f in custom), {f.name: f.sha256 for f in custom})


def _legacy_difference(out: Path, preset: Preset, all_agents: tuple[str, ...], files: list[str]) -> str | None:
    """How a 0.2.0 reproduce folder (run.json, no manifest) differs from this run; None if it agrees."""
    try:
        saved = json.loads((out / "run.json").read_text(encoding="utf-8"))
        saved = {
            "--preset": saved["preset"]["name"],
            "agents": list(saved["agents"]),
            "--agent-file": list(saved.get("agent_files", [])),
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None  # an interrupted first run left no run.json: its cells are keyed by id
    now = {"--preset": preset.name, "agents": list(all_agents), "--agent-file": files}
    differ = sorted(k for k in now if saved[k] != now[k])
    return "; ".join(f"{k}: saved {saved[k]!r}, now {now[k]!r}" for k in differ) or None


def preset_arguments(
    preset: str | Preset,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    settings: Settings | None = None,
) -> dict:
    """The result-defining arguments of a preset run, as its manifest records them:
    the preset's name, the agents and the agent files; and, when the experiment
    run (the preset with ``settings`` applied and the agents chosen) is not the
    built-in preset of that name with those agents (an experiment file, --set, a
    Preset object), the experiment's whole content, so that two different
    experiments are never taken for one run. The same experiment however it is
    given (``--preset demo --set ...``, or the file ``--print-config`` printed
    for it) records the same arguments: the same run, resumable in one folder."""
    base = get_preset(preset) if isinstance(preset, str) else preset
    planned, chosen, custom = _plan(base, agents, agent_files, settings)
    arguments: dict[str, Any] = {
        "--preset": base.name, "--agents": list(chosen), "--agent-file": [f.path for f in custom],
    }
    experiment = dataclasses.replace(planned, agents=chosen)
    if base.name not in PRESET_NAMES or dataclasses.replace(get_preset(base.name), agents=chosen) != experiment:
        arguments["experiment"] = dataclasses.asdict(experiment)
    return arguments


def copy_finished_cells(
    sources: Sequence[str | Path],
    preset: str | Preset,
    out: str | Path,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    settings: Settings | None = None,
) -> dict[str, int]:
    """Copies into the run folder OUT (claimed by the caller) every cell of the run that a
    folder of ``sources`` holds finished (``store.copy_cells``: verified, current, the same
    cell id): {source: cells copied}. ``reproduce --cells-from``: the finished cells of a
    run made elsewhere, e.g. on a GPU or on a machine since lost, resume this one."""
    cells = preset_cells(preset, agents, agent_files, settings)
    store = ResultsStore(Path(out) / "cells")
    copied = {}
    for source in sources:
        folder = Path(source)
        if not folder.is_dir():
            raise ValueError(f"--cells-from {str(source)!r} is not a folder (give a folder of cell files, e.g. a run's cells/)")
        copied[str(source)] = copy_cells(ResultsStore(folder), store, cells)
    return copied


def claim_preset_dir(
    preset: str | Preset,
    out: str | Path,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    flag: str = "out",
    settings: Settings | None = None,
):
    """The run-directory claim of a preset run (``_src/rundir.claim_run_dir``: lock,
    manifest, orphaned temporaries), as a context manager yielding the folder. Its
    result-defining arguments (``preset_arguments``): the preset, the agents, the
    agent files and the settings (not the executor, workers, progress or the
    analysis' resamples, which `analyze` may redo)."""
    planned, chosen, custom = _plan(preset, agents, agent_files, settings)
    arguments = preset_arguments(preset, agents, agent_files, settings)
    files = [f.path for f in custom]
    all_agents = chosen + tuple(f.name for f in custom)
    return claim_run_dir(
        out, "reproduce", arguments, flag=flag,
        legacy_check=lambda folder: _legacy_difference(folder, planned, all_agents, files),
    )


@dataclasses.dataclass(frozen=True)
class RunProgress:
    """How far a preset run's folder is (``reproduce --status``).

    finished / total: cells per kind ({"testbed": n, "bandit": n}); started: the bandit
    cells not finished whose run folder holds a saved state, as (cell, steps saved,
    steps, wall seconds so far): running now, or stopped and resumed by the next run.
    """

    out: Path
    finished: Mapping[str, int]
    total: Mapping[str, int]
    started: tuple[tuple[Cell, int, int, float], ...]

    def lines(self) -> list[str]:
        done, total = sum(self.finished.values()), sum(self.total.values())
        kinds = ", ".join(f"{kind} {self.finished.get(kind, 0)} of {n}" for kind, n in self.total.items())
        lines = [f"{self.out}: {done} of {total} cells finished ({kinds})"]
        if self.started:
            lines.append("bandit runs started, not finished (each resumes from its last saved chunk):")
        for cell, steps, num_steps, seconds in self.started:
            seeds = ",".join(map(str, cell.seeds))
            label = f"{cell.agent} seed{'s' * (len(cell.seeds) > 1)} {seeds}"
            lines.append(f"  {label}: {steps:,} of {num_steps:,} steps saved ({format_duration(seconds)} of running so far)")
        return lines


def run_progress(
    preset: str | Preset,
    out: str | Path,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    settings: Settings | None = None,
) -> RunProgress:
    """How far the run of these arguments in OUT is, read without claiming the folder
    (so beside the running command). A folder with no run, or another run's, is a
    one-line ValueError: its cells would say nothing about this run."""
    cells = preset_cells(preset, agents, agent_files, settings)
    out = Path(out)
    manifest = read_manifest(out) if out.is_dir() else None
    if manifest is None:
        raise ValueError(f"--out {str(out)!r} holds no run yet (nothing to report; the same command without --status starts it)")
    now = plain_arguments(preset_arguments(preset, agents, agent_files, settings))
    if manifest["command"] != "reproduce" or manifest["arguments"] != now:
        difference = argument_differences(manifest["arguments"], now) or f"made by {manifest['command']!r}"
        raise ValueError(f"--out {str(out)!r} holds another run ({difference}); give that run's arguments")
    store = ResultsStore(out / "cells")
    finished: dict[str, int] = {}
    total: dict[str, int] = {}
    started = []
    for cell in cells:
        total[cell.kind] = total.get(cell.kind, 0) + 1
        if store.path(cell).exists():
            finished[cell.kind] = finished.get(cell.kind, 0) + 1
        elif cell.kind == "bandit" and (progress := saved_progress(out / "bandit_runs" / cell.id)) is not None:
            started.append((cell, *progress))
    return RunProgress(out, finished, total, tuple(started))


def _run_order(preset: Preset, cell: Cell) -> tuple[bool, float]:
    """A cell's place among cells run at once, highest first (``run_cells(cost=...)``)."""
    return preset.runs_bandit(cell.agent), cell_seconds(cell)


def run_preset(
    preset: str | Preset = "demo",
    out: str | Path = "runs/demo",
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    executor: str = "local",
    address: str | None = None,
    progress: bool = True,
    workers: int = 1,
    settings: Settings | None = None,
    on_cell_done: Callable[[Cell, pd.DataFrame], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs (or resumes) a preset's cells; writes OUT/testbed.csv, OUT/bandit.csv and
    OUT/run.json and returns (testbed rows, bandit rows).

    agents: registered names to run instead of the preset's (None); agent_files: user
    agent files (see ``agent_files.read_agent_file``), run next to them; settings:
    {agent: {hyperparameter: value}} over the preset's overrides (``with_settings``;
    an agent file's options are its make_agent keywords); workers: local worker
    processes (``experiments.run_cells``; the rows do not depend on it);
    on_cell_done(cell, rows): called after each computed cell is stored and the
    results files are rewritten (e.g. TensorBoard logging). OUT is
    claimed for the run (``claim_preset_dir``): a folder of another run, or one in
    use by another process, is refused with one line.
    """
    planned, chosen, custom = _plan(preset, agents, agent_files, settings)
    all_agents = chosen + tuple(f.name for f in custom)
    with claim_preset_dir(preset, out, agents, agent_files, settings=settings) as out:
        preset = planned
        cells = build_cells(preset, all_agents, {f.name: f.sha256 for f in custom})
        store = ResultsStore(out / "cells")
        start = time.perf_counter()
        for line in edit_notes(store, cells):
            print(line, file=sys.stderr)
        # Testbed cells whose rows a stored baseline set already holds for this code are
        # written from it (paper2d's core agents in the paper presets): hours not recomputed.
        for name, count in reuse_stored_rows(store, cells).items():
            if progress:
                print(f"{count} cells taken from the stored baselines {name!r} (the same computation by construction)")
        # Computes (or finds stored) every cell; the tables are read back per kind below.
        run_cells(
            cells,
            # With several workers, their bandit step bars would interleave: the cell bar
            # alone shows progress.
            CellRunner(str(out), file_pairs(custom), progress and workers == 1),
            store,
            executor=executor,
            address=address,
            progress=progress,
            workers=workers,
            on_cell_done=_both(GrowingTables(out, cells, store).cell_done, on_cell_done),
            # The long cells (bandit runs, big ensembles) first: none is left alone at the end;
            # the testbed-only agents' cells (no headline point waits for them) after all others.
            cost=functools.partial(_run_order, preset),
        )
        testbed_cells = [c for c in cells if c.kind == "testbed"]
        bandit_cells = [c for c in cells if c.kind == "bandit"]
        testbed = with_agent_config(store.load(testbed_cells), testbed_cells)
        bandit = with_agent_config(bandit_table(store, bandit_cells), bandit_cells)
        write_results_csv(out / "testbed.csv", testbed)
        write_results_csv(out / "bandit.csv", bandit)
        run_info = {
            "preset": dataclasses.asdict(preset),
            "agents": list(all_agents),
            "agent_files": [f.path for f in custom],
            "versions": environment_info(),
            "workers": workers,
            "seconds_this_session": round(time.perf_counter() - start, 1),
        }
        atomic_write_text(out / "run.json", json.dumps(run_info, indent=1, default=str))
    return testbed, bandit


def preset_estimate(
    preset: str | Preset,
    out: str | Path | None = None,
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    workers: int = 1,
    settings: Settings | None = None,
):
    """The estimated cost (``experiments.estimate.Estimate``) of the preset's cells not
    yet stored in OUT (all of them without OUT) nor held by a stored baseline set, with ``workers`` local processes;
    ``settings`` (--set values) as in ``run_preset``."""
    from decision_bench.experiments.estimate import cores_available, estimate_cells  # noqa: PLC0415

    planned, chosen, custom = _plan(preset, agents, agent_files, settings)
    cells = build_cells(planned, chosen + tuple(f.name for f in custom), {f.name: f.sha256 for f in custom})
    if out is not None:
        store = ResultsStore(Path(out) / "cells")
        cells = tuple(cell for cell in cells if not store.path(cell).exists())
    stored = [load_baselines(name) for name in stored_names()]
    cells = tuple(c for c in cells if not any(
        (reusable_rows(b, c) if c.kind == "testbed" else reusable_bandit_rows(b, c)) is not None for b in stored
    ))
    return estimate_cells(cells, parallel=min(workers, cores_available()), host_agents=host_agent_names(custom))
