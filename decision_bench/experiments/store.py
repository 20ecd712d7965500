"""The results store: one verified JSON file per finished cell, written atomically.

:class:`ResultsStore` keeps one JSON file per finished cell in a directory. A file
is written to a temporary name in the same directory and renamed into place
(``os.replace`` is atomic on POSIX and Windows), so a crash never leaves a
half-written file under a cell's name. Each file carries the cell, the package
versions, the row count and a SHA-256 checksum of its rows; a file that fails to
parse or to verify is reported with a warning naming it and treated as not done,
so the next run recomputes and overwrites it. A file that verifies but was made by
other code (another version of decision-bench, jax, jaxlib, flax or optax, or
another agent fingerprint: a registered agent's resolved config, a user's agent
file's hash; ``cells.agent_fingerprint``) is stale: it is warned about in one line
naming the cause and recomputed the same way, never reused silently.

File format (``<cell_id>.json``)::

    {"format": "decision_bench.cell/2", "cell_id": ..., "cell": {...},
     "versions": {"decision-bench": ..., "jax": ..., ..., "backend": ...}, "created": ISO-8601,
     "agent_fingerprint": short hash or null, "num_rows": n, "sha256": hex digest of the canonical JSON of "table",
     "table": {"columns": [...], "dtypes": [...], "data": [[column values], ...]}}

The table is stored column by column with Python's own float repr (JSON via
``json.dumps``), so floats round-trip exactly; NaN and infinities are written as
the ``NaN``/``Infinity`` literals Python's json module reads back. No pyarrow is
needed.

Files of the first format (``decision_bench.cell/1``, decision-bench 0.2.0) are
read too. The cells whose encoding has changed since (``migrate_cell``) are
renamed to their new ids the first time a store misses a cell, so a run stored by
0.2.0 resumes without recomputing them.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write_text
from decision_bench._src.versions import environment_info, stale_versions
from decision_bench.experiments.cells import Cell, agent_fingerprint

FORMAT = "decision_bench.cell/2"
FIRST_FORMAT = "decision_bench.cell/1"


def migrate_cell(cell: Cell, file_format: str) -> Cell:
    """The cell a file of ``file_format`` holds, as this format encodes it.

    In the first format, ``reproduce`` wrote its testbed cells without designs and
    method (its named sweep's and "auto"), without the default family, and with
    hidden sizes as "50-50": they get the one testbed encoding
    (``experiments.testbed_cell``). Every other cell is unchanged.
    """
    problem = dict(cell.problem)
    if file_format == FORMAT or cell.kind != "testbed" or "designs" in problem:
        return cell
    # Imported here: the testbed cell needs the evaluation layer (and JAX), the store does not.
    from decision_bench.evaluation.sweeps import DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, TestbedSetting
    from decision_bench.experiments.presets import testbed_sweep
    from decision_bench.experiments.testbed_cell import TestbedCell

    hidden = problem.get("hidden_sizes")
    setting = TestbedSetting(
        input_dim=problem["input_dim"],
        num_train=problem["num_train"],
        temperature=problem["temperature"],
        prior=problem["prior"],
        activation=problem.get("activation", DEFAULT_ACTIVATION),
        hidden_sizes=DEFAULT_HIDDEN_SIZES if hidden is None else tuple(int(w) for w in hidden.split("-")),
    )
    return TestbedCell(
        agent=cell.agent,
        setting=setting,
        designs=tuple(testbed_sweep(problem["sweep"]).designs),
        seeds=cell.seeds,
        num_test=problem["num_test"],
        num_models=problem["num_models"],
        agent_config=cell.agent_config,
        sweep=problem["sweep"],
        agent_file_sha256=cell.agent_file_sha256,
    ).to_cell()


class CorruptCellFile(Exception):
    """A cell file that cannot be parsed or does not verify."""


def _column_to_json(series: pd.Series) -> tuple[str, list]:
    """(dtype name, list of Python values) for one DataFrame column."""
    dtype = str(series.dtype)
    values = series.tolist()  # numpy scalars -> Python scalars
    # Missing values of pandas' nullable dtypes (Int64, string, ...) are pd.NA,
    # which JSON cannot hold; None reads back as missing in the same dtype.
    values = [None if v is pd.NA else v for v in values]
    if series.dtype == object:
        values = [None if (isinstance(v, float) and math.isnan(v)) else v for v in values]
        values = [v.item() if isinstance(v, np.generic) else v for v in values]
    return dtype, values


def _table_to_json(frame: pd.DataFrame) -> dict[str, Any]:
    if not frame.columns.is_unique:
        raise ValueError(f"the DataFrame has duplicate column names: {list(frame.columns)}")
    columns, dtypes, data = [], [], []
    for name in frame.columns:
        if not isinstance(name, str):
            raise ValueError(f"column names must be str, got {name!r}")
        dtype, values = _column_to_json(frame[name])
        columns.append(name)
        dtypes.append(dtype)
        data.append(values)
    return {"columns": columns, "dtypes": dtypes, "data": data}


def _table_from_json(table: Mapping[str, Any]) -> pd.DataFrame:
    columns = {}
    for name, dtype, values in zip(table["columns"], table["dtypes"], table["data"], strict=True):
        try:
            columns[name] = pd.Series(values, dtype=dtype)
        except (TypeError, ValueError):
            # e.g. a pandas extension dtype this pandas cannot rebuild from a name.
            columns[name] = pd.Series(values)
    return pd.DataFrame(columns, columns=list(table["columns"]))


def _checksum(table: Mapping[str, Any]) -> str:
    text = json.dumps(table, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class ResultsStore:
    """A directory holding one verified JSON file per finished cell.

    Stateless apart from the directory: two processes (or Ray workers writing via
    the driver) may share it, and every query reads the files afresh.
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        if self.directory.is_symlink():
            # S09: cells written through a link land outside the run folder, where another
            # run (or nobody) owns them; the run folder's lock and manifest would not cover them.
            raise ValueError(
                f"results folder {str(self.directory)!r} is a symbolic link; a run keeps its cells in its "
                "own folder: remove the link (or give another --out)"
            )
        self._migrated = False

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.directory)!r})"

    def path(self, cell: Cell) -> Path:
        return self.directory / f"{cell.id}.json"

    # -- writing

    def write(
        self, cell: Cell, frame: pd.DataFrame, versions: Mapping[str, Any] | None = None, source: str | None = None
    ) -> Path:
        """Writes `frame` as `cell`'s file atomically and returns its path.

        versions: the package versions that made the rows (this process's by default;
        rows taken from a stored baseline set keep the versions that made them);
        source: where rows not computed by this run came from, recorded in the file."""
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"the result for cell {cell.id} must be a pandas DataFrame, got {type(frame).__name__}"
            )
        table = _table_to_json(frame.reset_index(drop=True))
        try:
            checksum = _checksum(table)
        except TypeError as err:  # e.g. a datetime or array column
            raise ValueError(
                f"the result for cell {cell.id} has values JSON cannot store ({err}); "
                "use numbers, strings, booleans or None"
            ) from None
        payload = {
            "format": FORMAT,
            "cell_id": cell.id,
            "cell": cell.to_dict(),
            "versions": dict(versions) if versions is not None else environment_info(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "agent_fingerprint": agent_fingerprint(cell),
            "num_rows": len(frame),
            "sha256": checksum,
            "table": table,
        }
        if source is not None:
            payload["source"] = source
        # atomic_write's temporary file starts with "." and does not end in .json,
        # so load_all never mistakes one left by kill -9 for a result.
        return atomic_write_text(self.path(cell), json.dumps(payload, separators=(",", ":")))

    # -- reading

    @staticmethod
    def _read_file(path: Path) -> tuple[Cell, pd.DataFrame, dict]:
        """Parses and verifies one file: (cell, rows, its header: versions and
        agent_fingerprint); raises CorruptCellFile saying why."""
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CorruptCellFile(f"cannot parse ({err})") from None
        if not isinstance(payload, dict) or payload.get("format") not in (FORMAT, FIRST_FORMAT):
            raise CorruptCellFile(f"not a {FORMAT} file")
        try:
            cell = Cell.from_dict(payload["cell"])
            table = payload["table"]
            if cell.id != payload["cell_id"] or path.name != f"{cell.id}.json":
                raise CorruptCellFile("the cell parameters do not match the cell id / file name")
            if _checksum(table) != payload["sha256"]:
                raise CorruptCellFile("checksum mismatch")
            frame = _table_from_json(table)
        except CorruptCellFile:
            raise
        except (KeyError, TypeError, ValueError) as err:
            raise CorruptCellFile(f"malformed ({type(err).__name__}: {err})") from None
        if len(frame) != payload.get("num_rows"):
            raise CorruptCellFile(f"{len(frame)} rows, header says {payload.get('num_rows')}")
        versions = payload.get("versions")
        header = {
            "versions": versions if isinstance(versions, dict) else {},
            "agent_fingerprint": payload.get("agent_fingerprint"),
        }
        return cell, frame, header

    @staticmethod
    def stale_reason(cell: Cell, header: Mapping[str, Any]) -> str | None:
        """Why a verified file of ``cell`` must not be reused now, or None.

        Files written before fingerprints were stored (0.2.0) have none: only
        their versions are compared, so such runs keep resuming unchanged.
        """
        versions = stale_versions(header.get("versions") or {})
        if versions is not None:
            return f"made by {versions}"
        recorded = header.get("agent_fingerprint")
        now = agent_fingerprint(cell)
        if recorded is not None and now is not None and recorded != now:
            return (
                f"made with another definition of agent {cell.agent!r} (its resolved config or agent "
                f"file: fingerprint {recorded}, now {now})"
            )
        return None

    def _read_or_warn(self, path: Path) -> tuple[Cell, pd.DataFrame, dict] | None:
        try:
            return self._read_file(path)
        except CorruptCellFile as err:
            warnings.warn(
                f"results file {path} is corrupt or partial ({err}); its cell will be recomputed",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    def migrate(self) -> None:
        """Renames every first-format file whose cell has another id now (``migrate_cell``)
        to that id, in this format; its rows, checksum, versions and fingerprint are kept.
        Unreadable files are left for ``read`` to report."""
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*.json")):
            if path.name.startswith("."):
                continue
            try:
                with path.open("rb") as handle:
                    if f'"format":"{FIRST_FORMAT}"'.encode() not in handle.read(64):
                        continue  # json.dumps writes the format first: no need to parse the rows
                payload = json.loads(path.read_text(encoding="utf-8"))
                old = Cell.from_dict(payload["cell"])
                new = migrate_cell(old, FIRST_FORMAT)
            except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError):
                continue
            if new.id == old.id or path.name != f"{old.id}.json":
                continue
            payload.update({"format": FORMAT, "cell_id": new.id, "cell": new.to_dict()})
            atomic_write_text(self.path(new), json.dumps(payload, separators=(",", ":")))
            path.unlink(missing_ok=True)

    def read(self, cell: Cell) -> pd.DataFrame | None:
        """The cell's rows, or None if it has no valid file (a bad file is warned about)."""
        path = self.path(cell)
        if not path.exists() and not self._migrated:
            self._migrated = True  # once per store: the renamed files keep their new names
            self.migrate()
        if not path.exists():
            return None
        result = self._read_or_warn(path)
        if result is None:
            return None
        why = self.stale_reason(cell, result[2])
        if why is not None:
            # The same words for every cell of one cause, so a command shows one line
            # (the console shows each message once), not one per cell.
            warnings.warn(
                f"stored cells in {self.directory} are stale ({why}); they will be recomputed",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        return result[1]

    def is_done(self, cell: Cell) -> bool:
        """True iff the cell has a file that parses and verifies."""
        return self.read(cell) is not None

    def load(self, cells: Sequence[Cell]) -> pd.DataFrame:
        """Rows of `cells` in the given order; raises KeyError naming a missing cell."""
        frames = []
        for cell in cells:
            frame = self.read(cell)
            if frame is None:
                raise KeyError(f"cell {cell.id} has no valid results file in {self.directory}")
            frames.append(frame)
        return concat_tables(frames)

    def load_all(self, with_cell_id: bool = False) -> pd.DataFrame:
        """All valid cell files in the directory, sorted by cell id, concatenated.

        Corrupt files are skipped with a warning naming each. With `with_cell_id`,
        a `cell_id` column says which file each row came from.
        """
        frames = []
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                if path.name.startswith("."):
                    continue
                result = self._read_or_warn(path)
                if result is None:
                    continue
                cell, frame, _ = result
                if with_cell_id:
                    frame = frame.assign(cell_id=cell.id)
                frames.append(frame)
        return concat_tables(frames)


def copy_cells(source: ResultsStore, store: ResultsStore, cells: Sequence[Cell]) -> int:
    """Writes into ``store`` every cell of ``cells`` not yet there whose file in ``source``
    verifies and is current (``ResultsStore.read``: checksum, the versions and agent
    fingerprint that made it), keeping those versions and recording ``source`` in the
    file; returns how many. A cell is stored under an id of all that defines its rows, so
    a file of the same id is the same computation, made elsewhere (another machine, a GPU,
    a run folder lost with its machine but whose finished cells were kept)."""
    copied = 0
    for cell in cells:
        if store.is_done(cell) or not source.path(cell).exists():
            continue
        result = source._read_or_warn(source.path(cell))
        if result is None or source.stale_reason(cell, result[2]) is not None:
            continue
        store.write(cell, result[1], versions=result[2]["versions"], source=f"copied from {source.directory}")
        copied += 1
    return copied


def edited_agent_files(store: ResultsStore, cells: Sequence[Cell]) -> dict[str, tuple[str, ...]]:
    """{agent: the SHA-256 digests its stored cells were made with} for each agent file of
    ``cells`` whose stored cells in ``store`` all come from other versions of its file:
    the file was edited since, and its cells are computed anew (R46: without a word, a
    user could not tell an edit from a resume). Only the cell records are read."""
    now = {c.agent: c.agent_file_sha256 for c in cells if c.agent_file_sha256 is not None}
    if not now or not store.directory.is_dir():
        return {}
    seen: dict[str, set[str]] = {}
    for path in store.directory.glob("*.json"):
        if path.name.startswith("."):
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8")).get("cell") or {}
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue  # a damaged file is reported where it is read
        agent, digest = record.get("agent"), record.get("agent_file_sha256")
        if agent in now and digest:
            seen.setdefault(agent, set()).add(digest)
    return {a: tuple(sorted(d)) for a, d in seen.items() if now[a] not in d}


def edit_notes(store: ResultsStore, cells: Sequence[Cell]) -> list[str]:
    """One line per agent file edited since its cells in ``store`` were made (``edited_agent_files``)."""
    now = {c.agent: c.agent_file_sha256 for c in cells if c.agent_file_sha256 is not None}
    return [
        f"note: the agent file of {agent!r} changed since its cells in {store.directory} were stored "
        f"(SHA-256 {', '.join(d[:12] for d in digests)}; now {now[agent][:12]}): its cells are computed anew"
        for agent, digests in edited_agent_files(store, cells).items()
    ]


def concat_tables(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)
