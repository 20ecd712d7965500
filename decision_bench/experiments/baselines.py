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

``store_baselines(run_dir, folder, name, command)`` makes both from the folder of a
finished ``decision-bench testbed`` run; ``load_baselines`` reads and verifies them;
``stale_reasons`` says which baseline agents were made by other code than this
process's (another package version, or another resolved config), so a comparison
never silently uses them.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from decision_bench._src.files import atomic_write_text, verify_results_file, write_results_csv
from decision_bench._src.versions import environment_info, stale_versions
from decision_bench.experiments.cells import Cell, agent_fingerprint
from decision_bench.experiments.store import CorruptCellFile, ResultsStore

STORED_DIR = Path(__file__).resolve().parent / "baselines"
FORMAT = "decision-bench-baselines/1"
# The package whose version decides whether stored rows are this code's rows.
PACKAGE = "decision-bench"


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

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(self.meta["agents"])

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
    csv_path = path.with_suffix(".csv")
    try:
        data = csv_path.read_bytes()
    except OSError as error:
        raise ValueError(f"baselines file {str(csv_path)!r} cannot be read: {error}") from None
    if verify_results_file(csv_path, data) is None:
        raise ValueError(f"baselines file {str(csv_path)!r} has no checksum file beside it: not verifiable")
    rows = pd.read_csv(io.BytesIO(data))
    problems = tuple(
        (Cell("testbed", "_", (), entry["problem"], tuple(entry["seeds"])).problem, tuple(entry["seeds"]))
        for entry in meta["problems"]
    )
    missing = sorted(set(meta["agents"]) - set(rows["agent"]))
    if missing:
        raise ValueError(f"baselines file {str(csv_path)!r} has no rows for {missing}")
    return Baselines(name, rows, problems, meta)


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
        now = agent_fingerprint(baselines.cells(agent)[0])
        if now is None:
            reasons[agent] = "no longer a registered agent"
        elif now != record.get("fingerprint"):
            reasons[agent] = "its default config changed since the rows were stored"
    return reasons


def library_differences(baselines: Baselines) -> str | None:
    """The computing libraries (jax, jaxlib, flax, optax) whose versions differ from
    those that made the stored rows, as one phrase, or None. Reported beside a
    comparison, not a reason to refuse it: the package's own code and configs decide
    staleness (``stale_reasons``); another jax may change float rounding."""
    recorded = dict(baselines.meta.get("versions") or {})
    recorded.pop(PACKAGE, None)
    return stale_versions(recorded)


def store_baselines(run_dir: str | Path, folder: str | Path, name: str, command: str) -> Path:
    """Stores a finished ``decision-bench testbed`` run (``run_dir``: its testbed.csv and
    cells/) as baselines ``name`` in ``folder``; returns the JSON's path.

    Every agent must have run on the same problems (cells that differ only in the
    agent); the rows are taken from the verified cell files, in cell order."""
    run_dir = Path(run_dir)
    store = ResultsStore(run_dir / "cells")
    cells, versions, per_agent, created = [], None, {}, {}
    paths = sorted(store.directory.glob("*.json"))
    record = run_dir / "testbed.json"
    if record.is_file():  # the run's own cell order (agents as given on its command line)
        order = {cell_id: i for i, cell_id in enumerate(json.loads(record.read_text(encoding="utf-8"))["cells"])}
        paths = [p for p in paths if p.stem in order]
        paths.sort(key=lambda p: order[p.stem])
    for path in paths:
        payload = json.loads(path.read_text(encoding="utf-8"))
        cell = Cell.from_dict(payload["cell"])
        if cell.kind != "testbed":
            raise ValueError(f"{str(path)!r} is not a testbed cell")
        if store.read(cell) is None:
            raise CorruptCellFile(f"{str(path)!r} did not verify")
        cells.append(cell)
        created[cell] = datetime.datetime.fromisoformat(payload["created"])
        versions = versions or payload["versions"]
        if payload["versions"].get(PACKAGE) != versions.get(PACKAGE):
            raise ValueError(f"{str(run_dir)!r} mixes cells of {PACKAGE} versions")
        per_agent.setdefault(cell.agent, {"fingerprint": payload["agent_fingerprint"]})
    if not cells:
        raise ValueError(f"{str(run_dir)!r} holds no finished testbed cells")
    agents = tuple(dict.fromkeys(c.agent for c in cells))
    problems_of = {a: sorted((c.problem, c.seeds) for c in cells if c.agent == a) for a in agents}
    reference = problems_of[agents[0]]
    for agent in agents[1:]:
        if problems_of[agent] != reference:
            raise ValueError(f"{agent} and {agents[0]} ran on other problems in {str(run_dir)!r}")
    ordered = [c for a in agents for c in cells if c.agent == a]
    rows = pd.concat([store.read(c) for c in ordered], ignore_index=True)
    # Wall seconds per agent from the cells' creation times: a testbed run computes its
    # agents one after another, so an agent's time runs from the previous agent's last
    # cell (the folder's claim for the first) to its own last cell. It includes
    # compilation and whatever else the machine was doing (stated with the figures).
    manifest = run_dir / "run_manifest.json"
    previous = None
    if manifest.is_file():
        previous = datetime.datetime.fromisoformat(json.loads(manifest.read_text(encoding="utf-8"))["claimed"])
    for agent in agents:
        mine = rows[rows["agent"] == agent]
        per_agent[agent]["rows"] = int(len(mine))
        last = max(created[c] for c in cells if c.agent == agent)
        per_agent[agent]["wall_seconds"] = None if previous is None else round((last - previous).total_seconds())
        previous = last
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_results_csv(folder / f"{name}.csv", rows)
    meta = {
        "format": FORMAT,
        "name": name,
        "command": command,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions,
        "stored_with": environment_info(),
        "agents": per_agent,
        "problems": [
            {"problem": dict(problem), "seeds": list(seeds)} for problem, seeds in
            ((c.problem, c.seeds) for c in ordered if c.agent == agents[0])
        ],
    }
    return atomic_write_text(folder / f"{name}.json", json.dumps(meta, indent=1) + "\n")
