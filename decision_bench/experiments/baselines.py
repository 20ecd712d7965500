"""Stored testbed results of the core agents: baselines a user's agent is compared with.

Problems are deterministic functions of (setting, seed), so an agent scored on the
very cells a baseline was scored on meets the same environments, training data and
test inputs: the comparison is paired, problem by problem, and the baselines' compute
is spent once, when the library is released, not by every user.

A stored baseline is two files in ``decision_bench/experiments/baselines/`` (or any
folder, for baselines a user stores for a lab):

- ``NAME.csv``: the testbed rows (``run_testbed``'s columns) of every baseline agent,
  with its ``NAME.csv.sha256`` sidecar (``_src/files.write_results_csv``);
- ``NAME.json``: what made them: the command, the package versions, the problems
  (each testbed cell's problem and seeds, the same for every agent), and per agent its
  fingerprint (``cells.agent_fingerprint``: its resolved config) and wall seconds.

A set may also hold the decision side, the bandit runs of the baseline agents:

- ``NAME_bandit.csv`` (+ ``.sha256``): the rows ``reproduce`` writes to bandit.csv (per
  agent and seed, the cumulative regret at the logged steps and the final regret);
- ``NAME.json``'s ``"bandit"`` record: the bandit cells' problems (env, num_steps and
  env kwargs) and seeds, per agent its fingerprint (``cells.agent_fingerprint`` of its
  bandit cell) and overrides (``agent_config``: a preset's 30-member ensembles, which a
  comparison must use too), the command and the versions.

``store_baselines(run_dir, folder, name, command)`` (the ``decision-bench store-baselines``
command) makes them from the folder of a
finished ``decision-bench testbed`` run (or several, on the same problems), or of a
finished ``decision-bench reproduce`` run (both sides); ``load_baselines`` reads and verifies them;
``stale_reasons`` says which baseline agents were made by other code than this
process's (another package version, or another resolved config), so a comparison
never silently uses them.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write_text, checksum_path, verify_results_file, write_results_csv
from decision_bench._src.rundir import read_manifest
from decision_bench._src.versions import cpu_signature, environment_info, same_cpu, stale_versions
from decision_bench.experiments.cells import Cell, agent_fingerprint, seed_groups
from decision_bench.experiments.store import CorruptCellFile, ResultsStore

STORED_DIR = Path(__file__).resolve().parent / "baselines"
FORMAT = "decision-bench-baselines/1"
# The package whose version decides whether stored rows are this code's rows.
PACKAGE = "decision-bench"
# A stored name is a plain file name in the folder (NAME.csv, NAME.json): no path
# separator, no "..", no leading "." (hidden, and the staging folders' prefix).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
NAME_RULE = (
    "letters, digits, '_', '.', '+' and '-', starting with a letter or digit, not ending in '_bandit' "
    "(NAME_bandit.csv holds a set's bandit rows)"
)


@dataclasses.dataclass(frozen=True)
class Baselines:
    """Stored baseline rows and what made them.

    name: the stored name (e.g. "standard") or the JSON file's path as given;
    rows: the testbed rows of every baseline agent (``run_testbed`` columns);
    problems: the cells of one agent with the agent left out, as
      ``(problem, seeds)`` pairs: the problems every compared agent is run on;
    meta: the JSON record (command, versions, agents, created).
    """

    name: str
    rows: pd.DataFrame
    problems: tuple[tuple[tuple, tuple[int, ...]], ...]
    meta: Mapping[str, Any]
    # The decision side, in sets stored from a reproduce run (None and () otherwise):
    # bandit.csv's rows of every baseline agent, and the bandit cells' (problem, seeds).
    bandit_rows: pd.DataFrame | None = None
    bandit_problems: tuple[tuple[tuple, tuple[int, ...]], ...] = ()

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(self.meta["agents"])

    @property
    def has_bandit(self) -> bool:
        return self.bandit_rows is not None

    @property
    def bandit_agents(self) -> tuple[str, ...]:
        return tuple((self.meta.get("bandit") or {}).get("agents") or ())

    def agent_config(self, agent: str, kind: str = "testbed") -> dict[str, Any]:
        """The overrides the stored ``agent`` ran with on the ``kind`` side ("testbed" or
        "bandit"): {} for its defaults (and in sets stored before overrides were recorded)."""
        record = self.meta["agents"] if kind == "testbed" else (self.meta.get("bandit") or {}).get("agents") or {}
        return dict((record.get(agent) or {}).get("agent_config") or {})

    def bandit_cells(
        self, agent: str, agent_file_sha256: str | None = None, agent_config: Mapping[str, Any] | None = None
    ) -> tuple[Cell, ...]:
        """The bandit cells of ``agent`` on the stored bandit problems (the same env kwargs,
        steps and seeds: environments are functions of the seed), as ``cells`` does for the
        testbed; () in a set without bandit rows. A baseline agent whose seeds ran in
        groups (its record's ``seeds_per_cell``: the paper preset's ensembles) gets one
        cell per group, the cells its rows came from; any other agent one cell of all."""
        record = ((self.meta.get("bandit") or {}).get("agents") or {}).get(agent) or {}
        size = record.get("seeds_per_cell")
        return tuple(
            Cell("bandit", agent, dict(agent_config or {}), problem, group, agent_file_sha256=agent_file_sha256)
            for problem, seeds in self.bandit_problems
            for group in (seed_groups(seeds, size) if size else (seeds,))
        )

    def cells(
        self, agent: str, agent_file_sha256: str | None = None, agent_config: Mapping[str, Any] | None = None
    ) -> tuple[Cell, ...]:
        """The testbed cells of ``agent`` on the stored problems, in stored order: for a
        baseline agent, the cells its rows came from; for a user's agent (with its
        file's digest, and its --set values as agent_config), the same problems under
        its own name."""
        return tuple(
            Cell("testbed", agent, dict(agent_config or {}), problem, seeds, agent_file_sha256=agent_file_sha256)
            for problem, seeds in self.problems
        )


def stored_names(folder: str | Path = STORED_DIR) -> tuple[str, ...]:
    """Names of the baselines stored in ``folder`` (the package's by default)."""
    folder = Path(folder)
    return tuple(sorted(p.stem for p in folder.glob("*.json"))) if folder.is_dir() else ()


def _json_path(name_or_path: str | Path) -> tuple[str, Path]:
    text = str(name_or_path)
    if text in stored_names():
        return text, STORED_DIR / f"{text}.json"
    path = Path(text)
    if path.suffix == ".json" and path.is_file():
        return text, path
    known = ", ".join(stored_names()) or "none stored"
    raise ValueError(
        f"--baselines must be a stored baseline name ({known}) or the path of a baselines "
        f".json file, got {text!r}"
    )


def _check_record(path: Path, meta: Mapping[str, Any]) -> None:
    """One line naming the file unless the record holds at least one agent (a mapping
    of names) and at least one problem (a list of {"problem", "seeds"} entries): every
    use takes the first agent's or the first problem's cells, so an empty one would
    fail later with an IndexError naming nothing."""
    agents, problems = meta.get("agents"), meta.get("problems")
    if not isinstance(agents, dict) or not agents:
        raise ValueError(
            f"baselines file {str(path)!r} names no agents: its \"agents\" must map at least one agent "
            f"to its record, got {agents!r}"
        )
    if not isinstance(problems, list) or not problems:
        raise ValueError(
            f"baselines file {str(path)!r} holds no problems: its \"problems\" must list at least one "
            f"{{\"problem\": ..., \"seeds\": [...]}} entry, got {problems!r}"
        )
    if not all(isinstance(e, dict) and "problem" in e and "seeds" in e for e in problems):
        raise ValueError(
            f"baselines file {str(path)!r} has a malformed problem: each entry of \"problems\" must be "
            "{\"problem\": ..., \"seeds\": [...]}"
        )


def load_baselines(name_or_path: str | Path) -> Baselines:
    """The stored baselines ``name_or_path`` (a name of ``stored_names()`` or a path to a
    ``NAME.json`` beside its ``NAME.csv``), verified: the CSV's checksum sidecar, and
    every stored problem present for every agent. Raises ValueError naming the file."""
    name, path = _json_path(name_or_path)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"baselines file {str(path)!r} cannot be read: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"baselines file {str(path)!r} is not a {FORMAT} record")
    _check_record(path, meta)
    csv_path = path.with_suffix(".csv")
    rows = _read_verified_csv(csv_path)
    try:
        problems = tuple(
            (Cell("testbed", "_", (), entry["problem"], tuple(entry["seeds"])).problem, tuple(entry["seeds"]))
            for entry in meta["problems"]
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"baselines file {str(path)!r} has a malformed problem ({type(error).__name__}: {error})") from None
    missing = sorted(set(meta["agents"]) - set(rows["agent"]))
    if missing:
        raise ValueError(f"baselines file {str(csv_path)!r} has no rows for {missing}")
    bandit_rows, bandit_problems = _load_bandit(path, meta)
    return Baselines(name, rows, problems, meta, bandit_rows, bandit_problems)


def _read_verified_csv(csv_path: Path) -> pd.DataFrame:
    """The rows of a stored CSV whose checksum sidecar agrees with it; ValueError naming it."""
    try:
        data = csv_path.read_bytes()
    except OSError as error:
        raise ValueError(f"baselines file {str(csv_path)!r} cannot be read: {error}") from None
    if verify_results_file(csv_path, data) is None:
        raise ValueError(f"baselines file {str(csv_path)!r} has no checksum file beside it: not verifiable")
    return pd.read_csv(io.BytesIO(data))


def _load_bandit(path: Path, meta: Mapping[str, Any]) -> tuple[pd.DataFrame | None, tuple]:
    """The bandit side of a record (None, () without one): NAME_bandit.csv verified by its
    checksum, and the problems; ValueError naming the file when malformed."""
    record = meta.get("bandit")
    if record is None:
        return None, ()
    problems = record.get("problems") if isinstance(record, dict) else None
    agents = record.get("agents") if isinstance(record, dict) else None
    if (
        not isinstance(agents, dict) or not agents or not isinstance(problems, list) or not problems
        or not all(isinstance(e, dict) and "problem" in e and "seeds" in e for e in problems)
    ):
        raise ValueError(
            f"baselines file {str(path)!r} has a malformed \"bandit\" record: it must map \"agents\" to their "
            "records and list \"problems\" as {\"problem\": ..., \"seeds\": [...]} entries"
        )
    csv_path = path.with_name(bandit_csv_name(path.stem))
    rows = _read_verified_csv(csv_path)
    try:
        parsed = tuple(
            (Cell("bandit", "_", (), entry["problem"], tuple(entry["seeds"])).problem, tuple(entry["seeds"]))
            for entry in problems
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"baselines file {str(path)!r} has a malformed bandit problem ({type(error).__name__}: {error})"
        ) from None
    missing = sorted(set(agents) - set(rows["agent"]))
    if missing:
        raise ValueError(f"baselines file {str(csv_path)!r} has no rows for {missing}")
    return rows, parsed


def bandit_csv_name(name: str) -> str:
    """The file of a set's bandit rows: NAME_bandit.csv."""
    return f"{name}_bandit.csv"


def stale_reasons(baselines: Baselines) -> dict[str, str]:
    """{baseline agent: why its stored rows are not this code's rows}, for the agents
    whose rows another package version made or whose resolved config has changed
    since (an agent absent from the registry now is stale too)."""
    from decision_bench import __version__

    reasons: dict[str, str] = {}
    stored_version = (baselines.meta.get("versions") or {}).get(PACKAGE)
    version_reason = None
    if stored_version != __version__:
        version_reason = f"stored by {PACKAGE} {stored_version}, this is {__version__}"
    for agent, record in baselines.meta["agents"].items():
        if version_reason:
            reasons[agent] = version_reason
            continue
        now = agent_fingerprint(baselines.cells(agent, agent_config=baselines.agent_config(agent))[0])
        if now is None:
            reasons[agent] = "no longer a registered agent"
        elif now != record.get("fingerprint"):
            reasons[agent] = "its default config changed since the rows were stored"
    return reasons


def bandit_stale_reasons(baselines: Baselines) -> dict[str, str]:
    """``stale_reasons`` for the bandit side: {baseline agent: why its stored bandit rows
    are not this code's rows} (another package version, or a resolved config, with the
    stored overrides, that changed since); {} in a set without bandit rows."""
    from decision_bench import __version__

    record = baselines.meta.get("bandit") or {}
    stored_version = (record.get("versions") or {}).get(PACKAGE)
    reasons: dict[str, str] = {}
    for agent, entry in (record.get("agents") or {}).items():
        if stored_version != __version__:
            reasons[agent] = f"stored by {PACKAGE} {stored_version}, this is {__version__}"
            continue
        now = agent_fingerprint(baselines.bandit_cells(agent, agent_config=baselines.agent_config(agent, "bandit"))[0])
        if now is None:
            reasons[agent] = "no longer a registered agent"
        elif now != entry.get("fingerprint"):
            reasons[agent] = "its config changed since the bandit rows were stored"
    return reasons


def library_differences(baselines: Baselines) -> str | None:
    """The computing libraries (jax, jaxlib, flax, optax) whose versions differ from
    those that made the stored rows, as one phrase, or None. Reported beside a
    comparison, not a reason to refuse it: the package's own code and configs decide
    staleness (``stale_reasons``); another jax may change float rounding."""
    recorded = dict(baselines.meta.get("versions") or {})
    recorded.pop(PACKAGE, None)
    return stale_versions(recorded)


def cpu_difference(baselines: Baselines) -> str | None:
    """The CPU that computed the stored rows, as a phrase, when it is recorded and is not
    this machine's (``versions.cpu_signature``), else None. Reported beside a comparison
    as ``library_differences`` is: XLA compiles the same program for another CPU to other
    instructions, which round differently (README, the paper preset)."""
    recorded = (baselines.meta.get("versions") or {}).get("cpu")
    if recorded is None or same_cpu({"cpu": recorded}):
        return None
    return f"another CPU ({recorded}; this one: {cpu_signature()})"


def _planned_agents(run_dir: Path) -> list[str]:
    """The agents a testbed run was started with, from its manifest (written when the
    run starts: --agents, or a --config file's agents); [] without one."""
    arguments = (read_manifest(run_dir) or {}).get("arguments") or {}
    agents = arguments.get("--agents") or (arguments.get("--config") or {}).get("agents") or []
    return [str(a) for a in agents]


def _agent_of(cell_id: str, agents: Sequence[str]) -> str | None:
    """The agent of a cell id ("testbed-<agent>-..."), among ``agents``; None if none."""
    named = [a for a in agents if cell_id.startswith(f"testbed-{re.sub(r'[^A-Za-z0-9_.=+-]+', '_', a)}-")]
    return max(named, key=len) if named else None


def _check_finished(run_dir: Path, found: Counter, listed_missing: Sequence[str] | None) -> None:
    """ValueError, one line naming the folder, each agent's finished problems and the
    agents short of problems, unless the run finished: its testbed.json (written after
    the last cell) exists and every cell it lists has a verified file (``listed_missing``
    empty). The agents are those the run was started with (its manifest) and those with cells."""
    if listed_missing is not None and not listed_missing:
        return
    agents = list(dict.fromkeys([*_planned_agents(run_dir), *found]))
    missing = Counter(_agent_of(cell_id, agents) for cell_id in listed_missing or ())
    total = max((found[a] + missing[a] for a in agents), default=0)
    short = [a for a in agents if found[a] < total or not total]
    why = "no testbed.json, which a run writes after its last cell" if listed_missing is None else (
        f"{len(listed_missing)} cells its testbed.json lists have no finished cell file"
    )
    done = ", ".join(f"{a} {found[a]} of {total}" for a in agents) if total else "none"
    raise ValueError(
        f"run folder {str(run_dir)!r} is unfinished ({why}); problems done per agent: {done}"
        f"{'; missing problems: ' + ', '.join(short) if short else ''}; finish the run (its command "
        "again resumes it) before storing it"
    )


def _run_cells(run_dir: Path) -> tuple[list, dict, dict]:
    """A finished testbed run's verified cells in the run's own order, each cell's
    creation time, and the run's package versions (one version per run, else ValueError).
    A run still in progress, or stopped before its end, is refused (_check_finished):
    stored baselines must hold every problem of every agent."""
    store = ResultsStore(run_dir / "cells")
    paths = sorted(store.directory.glob("*.json"))
    record = run_dir / "testbed.json"
    listed_missing = None
    if record.is_file():  # the run's own cell order (agents as given on its command line)
        listed = json.loads(record.read_text(encoding="utf-8"))["cells"]
        order = {cell_id: i for i, cell_id in enumerate(listed)}
        on_disk = {p.stem for p in paths}
        listed_missing = [cell_id for cell_id in listed if cell_id not in on_disk]
        paths = [p for p in paths if p.stem in order]
        paths.sort(key=lambda p: order[p.stem])
    cells, created, versions, fingerprints = [], {}, None, {}
    for path in paths:
        payload = json.loads(path.read_text(encoding="utf-8"))
        cell = Cell.from_dict(payload["cell"])
        if cell.kind != "testbed":
            raise ValueError(f"{str(path)!r} is not a testbed cell")
        if store.read(cell) is None:
            raise CorruptCellFile(f"{str(path)!r} did not verify")
        cells.append((cell, store))
        created[cell] = datetime.datetime.fromisoformat(payload["created"])
        versions = versions or payload["versions"]
        if payload["versions"].get(PACKAGE) != versions.get(PACKAGE):
            raise ValueError(f"{str(run_dir)!r} mixes cells of {PACKAGE} versions")
        fingerprints.setdefault(cell.agent, payload["agent_fingerprint"])
    _check_finished(run_dir, Counter(cell.agent for cell, _ in cells), listed_missing)
    if not cells:
        raise ValueError(f"{str(run_dir)!r} holds no finished testbed cells")
    return cells, created, {"versions": versions, "fingerprints": fingerprints}


def _is_reproduce_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a ``decision-bench reproduce`` folder (its manifest's
    command, or a run.json of a folder made before manifests)."""
    manifest = read_manifest(run_dir) or {}
    return manifest.get("command") == "reproduce" or (not manifest and (run_dir / "run.json").is_file())


def _tupled(value: Any) -> Any:
    """JSON lists back to the tuples a Preset holds."""
    return tuple(_tupled(v) for v in value) if isinstance(value, (list, tuple)) else value


def _reproduce_cells(run_dir: Path) -> tuple[list, list, dict, dict]:
    """A finished reproduce run's verified testbed cells and bandit cells (each a list of
    (cell, store) in the run's plan order), each cell's creation time, and the run's
    versions and fingerprints per kind. The plan is rebuilt from the run's run.json
    (written after its last cell: ``reproduce.build_cells`` of its preset and agents);
    a run without one, or with a planned cell not finished, is refused in one line
    naming the cells done per agent and kind."""
    from decision_bench.experiments.presets import Preset  # noqa: PLC0415 - presets import the agents
    from decision_bench.experiments.reproduce import build_cells  # noqa: PLC0415 - reproduce imports this module

    store = ResultsStore(run_dir / "cells")
    payloads = {}
    for path in sorted(store.directory.glob("*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        payloads[path.stem] = payload
    info_path = run_dir / "run.json"
    if not info_path.is_file():
        found = Counter((p["cell"]["kind"], p["cell"]["agent"]) for p in payloads.values())
        done = ", ".join(f"{agent} {kind} {n}" for (kind, agent), n in sorted(found.items())) or "none"
        raise ValueError(
            f"run folder {str(run_dir)!r} is unfinished (no run.json, which reproduce writes after its last "
            f"cell); cells done per agent: {done}; finish the run (its command again resumes it) before storing it"
        )
    info = json.loads(info_path.read_text(encoding="utf-8"))
    fields = {f.name for f in dataclasses.fields(Preset)}
    preset = Preset(**{k: _tupled(v) for k, v in info["preset"].items() if k in fields})
    digests = {}
    for payload in payloads.values():
        sha = payload["cell"].get("agent_file_sha256")
        if sha is not None and digests.setdefault(payload["cell"]["agent"], sha) != sha:
            raise ValueError(f"{str(run_dir)!r} holds cells of two versions of {payload['cell']['agent']}'s agent file")
    plan = build_cells(preset, tuple(info["agents"]), digests)
    missing = [c for c in plan if c.id not in payloads]
    if missing:
        total = Counter((c.kind, c.agent) for c in plan)
        short = Counter((c.kind, c.agent) for c in missing)
        done = ", ".join(f"{agent} {kind} {total[(kind, agent)] - short[(kind, agent)]} of {n}"
                         for (kind, agent), n in total.items())
        raise ValueError(
            f"run folder {str(run_dir)!r} is unfinished ({len(missing)} planned cells have no finished cell "
            f"file); cells done per agent: {done}; finish the run (its command again resumes it) before storing it"
        )
    testbed, bandit, created, versions = [], [], {}, None
    fingerprints: dict[str, dict] = {"testbed": {}, "bandit": {}}
    for cell in plan:
        payload = payloads[cell.id]
        if store.read(cell) is None:
            raise CorruptCellFile(f"{str(store.path(cell))!r} did not verify")
        (testbed if cell.kind == "testbed" else bandit).append((cell, store))
        created[cell] = datetime.datetime.fromisoformat(payload["created"])
        versions = versions or payload["versions"]
        if payload["versions"].get(PACKAGE) != versions.get(PACKAGE):
            raise ValueError(f"{str(run_dir)!r} mixes cells of {PACKAGE} versions")
        fingerprints[cell.kind].setdefault(cell.agent, payload["agent_fingerprint"])
    return testbed, bandit, created, {"versions": versions, "fingerprints": fingerprints}


def _taken_from_elsewhere(path: Path) -> bool:
    """Whether a cell file records a ``source``: rows not computed by the run that holds it."""
    return "source" in json.loads(path.read_text(encoding="utf-8"))


def _wall_seconds(run_dir: Path, cells, created) -> dict[str, int | None]:
    """Wall seconds per agent of one run, from the cells' creation times and the run's
    starts (the manifest's ``claims``): a testbed run computes its cells one after
    another, so a cell's time runs from the previous cell, or from the run's latest
    start before it where that is later (a resumed run: the gap between sessions is
    idle). An agent whose cells include one made before the earliest recorded start
    (a folder whose manifest predates the start history) or that has no manifest gets
    None: its time is not known. The time includes compilation and whatever else the
    machine was doing (stated with the figures). A run of several worker processes
    (run.json's ``workers``) computes cells side by side, so creation times cannot tell
    one cell's time from another's: every agent gets None (a bandit run's own time is
    in its rows' wall_seconds, and so in the "bandit" record). So does an agent with a cell
    the run took from a stored set or another folder rather than computed."""
    manifest = run_dir / "run_manifest.json"
    run_record = run_dir / "run.json"
    workers = json.loads(run_record.read_text(encoding="utf-8")).get("workers", 1) if run_record.is_file() else 1
    if not manifest.is_file() or (workers or 1) > 1:
        return {c.agent: None for c, _ in cells}
    record = json.loads(manifest.read_text(encoding="utf-8"))
    starts = sorted(datetime.datetime.fromisoformat(t) for t in record.get("claims") or [record["claimed"]])
    seconds: dict[str, int | None] = {c.agent: 0 for c, _ in cells}
    previous = None
    for cell, store in sorted(cells, key=lambda pair: created[pair[0]]):
        made = created[cell]
        began = [s for s in starts if s <= made]
        if not began or (store is not None and _taken_from_elsewhere(store.path(cell))):
            # A cell written from a stored set or another folder (reproduce --cells-from)
            # was computed elsewhere: its file's time says nothing of what it cost.
            seconds[cell.agent] = None
        elif seconds[cell.agent] is not None:
            start = began[-1] if previous is None else max(previous, began[-1])
            seconds[cell.agent] += round((made - start).total_seconds())
        previous = made
    return seconds


def store_baselines(
    run_dir: str | Path | Sequence[str | Path], folder: str | Path, name: str, command: str | Sequence[str]
) -> Path:
    """Stores finished ``decision-bench testbed`` runs as baselines ``name`` in ``folder``;
    returns the JSON's path. A finished ``decision-bench reproduce`` folder among them
    gives both sides: its testbed cells as a testbed run's, and its bandit cells as
    NAME_bandit.csv and NAME.json's "bandit" record (refused, like an unfinished testbed
    run, while any cell of its plan is unfinished).

    run_dir: a run's folder (its testbed.csv and cells/), or several runs' folders
      made by one package version (e.g. the core agents in one run and the hmc floor,
      run later, in another); command: the command that made each run, in the same order.
    Every agent must have run on the same problems (cells that differ only in the
    agent), and no agent may be in two runs; the rows are taken from the verified
    cell files, in run order and each run's cell order. A run folder that is not
    finished (no testbed.json, or an agent short of problems) is refused, naming the
    agents that are missing problems.

    name: a plain file name (NAME_PATTERN), refused otherwise before anything is read.
    The files are written into a staging folder inside ``folder`` first; then the old
    NAME.json is removed (the set is invisible to load_baselines from here on), the
    checksum file and the CSV moved into place, and NAME.json last: an interruption
    leaves the previous set whole, or no set, never a NAME.json beside other rows."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name.endswith("_bandit"):
        raise ValueError(f"the baselines' name must be a plain file name ({NAME_RULE}), got {name!r}")
    run_dirs = [Path(run_dir)] if isinstance(run_dir, (str, Path)) else [Path(r) for r in run_dir]
    commands = [command] if isinstance(command, str) else list(command)
    if len(commands) != len(run_dirs):
        raise ValueError(f"give one command per run folder: {len(run_dirs)} folders, {len(commands)} commands")
    for number, one_command in enumerate(commands, 1):
        # The record's "made by" is how a reader reruns the set: an empty one says nothing.
        if not isinstance(one_command, str) or not one_command.strip():
            raise ValueError(
                f"--command {number} of {len(commands)} must be the command that made its run folder, got {one_command!r}"
            )
    cells, per_agent, versions = [], {}, None
    bandit_cells, bandit_agents, bandit_commands, bandit_versions = [], {}, [], None
    for one_dir, one_command in zip(run_dirs, commands):
        if _is_reproduce_run(one_dir):
            mine, theirs, created, made_by = _reproduce_cells(one_dir)
            fingerprints, bandit_fingerprints = made_by["fingerprints"]["testbed"], made_by["fingerprints"]["bandit"]
        else:
            mine, created, made_by = _run_cells(one_dir)
            theirs, fingerprints, bandit_fingerprints = [], made_by["fingerprints"], {}
        versions = versions or made_by["versions"]
        if made_by["versions"].get(PACKAGE) != versions.get(PACKAGE):
            raise ValueError(f"{str(one_dir)!r} was made by another {PACKAGE} version than {str(run_dirs[0])!r}")
        twice = sorted(set(fingerprints) & set(per_agent)) + sorted(set(bandit_fingerprints) & set(bandit_agents))
        if twice:
            raise ValueError(f"{twice} ran in two of the given runs; give each agent's run once")
        # A reproduce run's cells are timed together: an agent's seconds are both sides'.
        seconds = _wall_seconds(one_dir, mine + theirs, created)
        configs = {c.agent: dict(c.agent_config) for c, _ in mine}
        for agent, fingerprint in fingerprints.items():
            per_agent[agent] = {"fingerprint": fingerprint, "wall_seconds": seconds[agent], "command": one_command,
                                "agent_config": configs[agent]}
        if theirs:
            bandit_configs = {c.agent: dict(c.agent_config) for c, _ in theirs}
            for agent, fingerprint in bandit_fingerprints.items():
                bandit_agents[agent] = {"fingerprint": fingerprint, "agent_config": bandit_configs[agent]}
            bandit_commands.append(one_command)
            bandit_versions = bandit_versions or made_by["versions"]
        cells += mine
        bandit_cells += theirs
    agents = tuple(per_agent)
    problems_of = {a: sorted((c.problem, c.seeds) for c, _ in cells if c.agent == a) for a in agents}
    reference = problems_of[agents[0]]
    for agent in agents[1:]:
        if problems_of[agent] != reference:
            raise ValueError(f"{agent} and {agents[0]} ran on other problems in {', '.join(map(str, run_dirs))}")
    ordered = [(c, store) for a in agents for c, store in cells if c.agent == a]
    rows = pd.concat([store.read(c) for c, store in ordered], ignore_index=True)
    for agent in agents:
        per_agent[agent]["rows"] = int((rows["agent"] == agent).sum())
    meta = {
        "format": FORMAT,
        "name": name,
        "command": " ; ".join(commands),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions,
        "stored_with": environment_info(),
        "agents": per_agent,
        "problems": [
            {"problem": dict(problem), "seeds": list(seeds)} for problem, seeds in
            ((c.problem, c.seeds) for c, _ in ordered if c.agent == agents[0])
        ],
    }
    bandit_table = None
    if bandit_cells:
        bandit_table, meta["bandit"] = _bandit_side(bandit_cells, bandit_agents, bandit_commands, bandit_versions, name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    csv_name, json_name, bandit_name = f"{name}.csv", f"{name}.json", bandit_csv_name(name)
    # Hidden and ending in .tmp: stored_names (*.json) never sees it; kill -9 may leave it.
    stage = Path(tempfile.mkdtemp(dir=folder, prefix=f".{name}.", suffix=".tmp"))
    try:
        write_results_csv(stage / csv_name, rows)
        moves = [checksum_path(stage / csv_name).name, csv_name]
        if bandit_table is not None:
            write_results_csv(stage / bandit_name, bandit_table)
            moves += [checksum_path(stage / bandit_name).name, bandit_name]
        atomic_write_text(stage / json_name, json.dumps(meta, indent=1) + "\n")
        (folder / json_name).unlink(missing_ok=True)
        if bandit_table is None:  # a testbed-only set in place of one with bandit rows: none left beside it
            for stray in (bandit_name, checksum_path(folder / bandit_name).name):
                (folder / stray).unlink(missing_ok=True)
        for moved in (*moves, json_name):  # NAME.json, which makes the set visible, last
            os.replace(stage / moved, folder / moved)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return folder / json_name


def _bandit_side(cells, agents: dict, commands: list, versions: dict, name: str) -> tuple[pd.DataFrame, dict]:
    """(NAME_bandit.csv's rows, NAME.json's "bandit" record) of a reproduce run's finished
    bandit cells [(cell, store)]: the rows as reproduce writes bandit.csv (its family
    columns, and agent_config when any agent has overrides); every agent on the same
    bandit problems and seeds, else ValueError."""
    from decision_bench.experiments.reproduce import bandit_rows, with_agent_config  # noqa: PLC0415

    names = tuple(agents)
    # Per agent and problem, its seeds: one cell of them all, or groups (seeds_per_cell).
    problems_of = {}
    for agent in names:
        groups: dict = {}
        for cell, _ in cells:
            if cell.agent == agent:
                groups.setdefault(cell.problem, []).append(cell.seeds)
        problems_of[agent] = [(problem, tuple(sorted(s for group in found for s in group)))
                              for problem, found in groups.items()]
        if any(len(found) > 1 for found in groups.values()):
            size = max(len(group) for found in groups.values() for group in found)
            if any(sorted(found) != list(seed_groups(seeds, size)) for (_, seeds), found in
                   zip(problems_of[agent], groups.values())):
                raise ValueError(f"{agent}'s bandit seeds ran in cells that are not consecutive groups of {size}")
            agents[agent]["seeds_per_cell"] = size
    for agent in names[1:]:
        if sorted(problems_of[agent]) != sorted(problems_of[names[0]]):
            raise ValueError(f"{agent} and {names[0]} ran on other bandit problems")
    ordered = [(c, store) for a in names for c, store in cells if c.agent == a]
    read = [(c, store.read(c)) for c, store in ordered]
    table = with_agent_config(bandit_rows(read), [c for c, _ in ordered])
    for agent in names:
        agents[agent]["rows"] = int((table["agent"] == agent).sum())
        # run_bandit's own clock, kept across resumes (one value per cell): the agent's cells summed.
        seconds = [rows["wall_seconds"].iloc[0] for c, rows in read if c.agent == agent and "wall_seconds" in rows]
        if seconds and all(pd.notna(seconds)):
            agents[agent]["wall_seconds"] = int(round(float(sum(seconds))))
    record = {
        "csv": bandit_csv_name(name),
        "command": " ; ".join(commands),
        "versions": versions,
        "agents": agents,
        "problems": [{"problem": dict(problem), "seeds": list(seeds)} for problem, seeds in problems_of[names[0]]],
    }
    return table, record


# The problem keys a run's testbed cell may carry beyond a stored problem's: the sweep
# name reproduce records in its rows (a "sweep" column), which changes no number.
_RUN_ONLY_KEYS = ("sweep",)


def reusable_rows(baselines: Baselines, cell: Cell) -> pd.DataFrame | None:
    """The stored rows of testbed ``cell`` when they are, by construction, the rows this
    code would compute for it, else None.

    They are when: a baseline agent of the cell's name whose rows are current
    (``stale_reasons``: the same package version and resolved config), made by the same
    computing libraries (``library_differences``: another jax may round differently), no
    overrides and no agent file on the cell nor stored overrides on the baseline, and the cell's problem and seeds, less
    ``_RUN_ONLY_KEYS``, among the stored problems. Problems are deterministic functions
    of (setting, seed) and every fit a function of its keys, so the rows are the same
    numbers (only the timing columns were measured elsewhere)."""
    if cell.kind != "testbed" or cell.agent_config or cell.agent_file_sha256 is not None:
        return None
    if cell.agent not in baselines.agents or cell.agent in stale_reasons(baselines):
        return None
    if baselines.agent_config(cell.agent):
        return None  # stored with overrides (a reproduce run's 30-member ensembles): not the defaults' rows
    if library_differences(baselines) is not None:
        return None
    problem = dict(cell.problem)
    extra = {k: problem.pop(k) for k in _RUN_ONLY_KEYS if k in problem}
    key = Cell("testbed", "_", (), problem, cell.seeds).problem
    if (key, tuple(cell.seeds)) not in set(baselines.problems):
        return None
    rows = baselines.rows
    match = (
        (rows["agent"] == cell.agent)
        & (rows["prior"] == problem["prior"])
        & (rows["activation"] == problem["activation"])
        & (rows["hidden_sizes"].astype(str) == "-".join(str(int(w)) for w in problem["hidden_sizes"]))
        & (rows["input_dim"] == problem["input_dim"])
        & (rows["num_train"] == problem["num_train"])
        & (rows["temperature"] == problem["temperature"])
        & (rows["num_test"] == problem["num_test"])
        & (rows["seed"].isin(cell.seeds))
    )
    # (num_models and method are not matched in the rows: they record what was used, e.g.
    # an ensemble's 100 members enumerated exactly; the stored problem pins the requested ones.)
    found = rows[match].reset_index(drop=True)
    expected = len(cell.seeds) * len(problem["designs"])
    if len(found) != expected:
        return None  # a problem the record lists but whose rows are not all there: compute it
    for column, value in extra.items():
        found[column] = value
    return found


# The columns a stored set's bandit rows carry beyond a bandit cell's own (run_bandit's):
# reproduce adds them to bandit.csv from the cell (with_family_columns, with_agent_config).
_BANDIT_TABLE_ONLY = ("activation", "hidden_sizes", "agent_config")


def reusable_bandit_rows(baselines: Baselines, cell: Cell) -> pd.DataFrame | None:
    """The stored rows of bandit ``cell``, as its cell file holds them, when the set holds
    this very cell for this code, else None (``reusable_rows``' rule on the decision
    side): a baseline agent of the cell's name whose bandit rows are current
    (``bandit_stale_reasons``) and made by the same computing libraries, no overrides
    and no agent file on the cell nor stored overrides, and the cell among the agent's
    stored cells (the same problem and the same seeds, grouped as they ran)."""
    if cell.kind != "bandit" or cell.agent_config or cell.agent_file_sha256 is not None:
        return None
    if not baselines.has_bandit or cell.agent not in baselines.bandit_agents:
        return None
    if baselines.agent_config(cell.agent, "bandit") or cell.agent in bandit_stale_reasons(baselines):
        return None
    recorded = dict((baselines.meta.get("bandit") or {}).get("versions") or {})
    recorded.pop(PACKAGE, None)
    if stale_versions(recorded) is not None or cell not in baselines.bandit_cells(cell.agent):
        return None
    from decision_bench.experiments.bandit_cell import bandit_family  # noqa: PLC0415 - imports the bandit loop

    problem = dict(cell.problem)
    rows = baselines.bandit_rows
    match = (rows["agent"] == cell.agent) & rows["seed"].isin(cell.seeds) & (rows["env"] == problem["env"])
    for key in ("input_dim", "num_actions", "temperature"):
        if key in problem and key in rows.columns:
            match &= np.isclose(rows[key], problem[key])
    for key, value in bandit_family(cell).items():  # a set may hold several generative families
        if key in rows.columns:
            match &= rows[key].astype(str) == str(value)
    found = rows[match].drop(columns=[c for c in _BANDIT_TABLE_ONLY if c in rows.columns]).reset_index(drop=True)
    if sorted(set(found["seed"])) != sorted(cell.seeds) or found["step"].max() != problem["num_steps"]:
        return None  # not all of the cell's rows are there: compute it
    return found


def reuse_stored_rows(store: ResultsStore, cells: Sequence[Cell], names: Sequence[str] | None = None) -> dict[str, int]:
    """Writes into ``store`` every cell of ``cells`` not yet there whose rows a stored
    baseline set (``names``; every stored set by default) holds for this code
    (``reusable_rows`` for testbed cells, ``reusable_bandit_rows`` for bandit cells),
    recording the set and the versions that made them in the cell file; returns
    {set name: cells written}. A run then computes only the rest."""
    written: dict[str, int] = {}
    pending = [c for c in cells if c.kind in ("testbed", "bandit") and not store.is_done(c)]
    for name in stored_names() if names is None else names:
        if not pending:
            break
        baselines = load_baselines(name)
        left = []
        for cell in pending:
            if cell.kind == "testbed":
                rows, versions = reusable_rows(baselines, cell), baselines.meta.get("versions") or {}
            else:
                rows = reusable_bandit_rows(baselines, cell)
                versions = (baselines.meta.get("bandit") or {}).get("versions") or {}
            if rows is None:
                left.append(cell)
                continue
            store.write(cell, rows, versions=versions, source=f"stored baselines {baselines.name!r}")
            written[baselines.name] = written.get(baselines.name, 0) + 1
        pending = left
    return written
