"""Sweeps: grids of cells, a resumable results store, local and Ray executors.

A sweep is a tuple of :class:`Cell` records. Each cell is one unit of work (one
agent with one configuration on one problem setting, for a group of seeds that
the caller vmaps over) and has a stable id derived from its parameters alone, so
the same command run twice names the same files.

:class:`ResultsStore` keeps one JSON file per finished cell in a directory. A file
is written to a temporary name in the same directory and renamed into place
(``os.replace`` is atomic on POSIX and Windows), so a crash never leaves a
half-written file under a cell's name. Each file carries the cell, the package
versions, the row count and a SHA-256 checksum of its rows; a file that fails to
parse or to verify is reported with a warning naming it and treated as not done,
so the next run recomputes and overwrites it.

:func:`run_sweep` skips finished cells, computes the others with a caller-supplied
``compute_fn(cell) -> DataFrame`` (in-process, or as Ray tasks), writes each one as
soon as it finishes and returns the rows of all requested cells in cell order.

File format (``<cell_id>.json``)::

    {"format": "decision_bench.cell/1", "cell_id": ..., "cell": {...},
     "versions": {"decision-bench": ..., "jax": ..., ...}, "created": ISO-8601,
     "num_rows": n, "sha256": hex digest of the canonical JSON of "table",
     "table": {"columns": [...], "dtypes": [...], "data": [[column values], ...]}}

The table is stored column by column with Python's own float repr (JSON via
``json.dumps``), so floats round-trip exactly; NaN and infinities are written as
the ``NaN``/``Infinity`` literals Python's json module reads back. No pyarrow is
needed.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import importlib.metadata
import itertools
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write_text

__all__ = [
    "Cell",
    "ResultsStore",
    "grid",
    "package_versions",
    "run_sweep",
]

FORMAT = "decision_bench.cell/1"
VERSIONED_PACKAGES = ("decision-bench", "jax", "flax", "optax", "numpy")
RAY_INSTALL_HINT = "pip install 'decision-bench[ray]'"

_SLUG_MAX = 80
_HASH_CHARS = 12


# --------------------------------------------------------------------------- cells


def _plain(name: str, value: Any) -> Any:
    """Converts `value` to a JSON scalar or a tuple of them, or raises ValueError.

    numpy scalars become Python scalars so that np.float64(0.1) and 0.1 give the
    same id. Lists become tuples so the cell stays hashable.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_plain(name, v) for v in value)
    raise ValueError(
        f"{name} must be a str, int, float, bool, None or a sequence of them, "
        f"got {type(value).__name__} {value!r}"
    )


def _items(name: str, value: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> tuple:
    """Normalises a mapping (or iterable of pairs) to a key-sorted tuple of items."""
    if value is None:
        return ()
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    out = {}
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ValueError(f"{name} must map str keys to values, got item {pair!r}")
        key, v = pair
        if key in out:
            raise ValueError(f"{name} has the key {key!r} twice")
        out[key] = _plain(f"{name}[{key!r}]", v)
    return tuple(sorted(out.items()))


@dataclasses.dataclass(frozen=True)
class Cell:
    """One unit of work of a sweep; immutable and hashable.

    Attributes:
      kind: what computes it, e.g. "testbed" or "bandit".
      agent: the agent name, e.g. "ensemble+".
      agent_config: overrides of the agent's defaults, a key-sorted tuple of
        (name, value) items (a dict is accepted and normalised).
      problem: problem parameters (input_dim, num_train, temperature, ...), a
        key-sorted tuple of items (a dict is accepted and normalised).
      seeds: the seeds this cell runs (vmapped together by the caller).

    Values must be JSON scalars (str, int, float, bool, None) or sequences of
    them. Note that 1 and 1.0 are different values and give different ids.
    """

    kind: str
    agent: str
    agent_config: tuple = ()
    problem: tuple = ()
    seeds: tuple = (0,)

    def __post_init__(self):
        for name in ("kind", "agent"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Cell.{name} must be a non-empty str, got {value!r}")
        # The dataclass is frozen; normalising in place keeps equality and the id
        # independent of how the caller spelled the mappings.
        object.__setattr__(self, "agent_config", _items("Cell.agent_config", self.agent_config))
        object.__setattr__(self, "problem", _items("Cell.problem", self.problem))
        seeds = (self.seeds,) if isinstance(self.seeds, (int, np.integer)) else tuple(self.seeds)
        if not seeds or any(
            isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0 for s in seeds
        ):
            raise ValueError(f"Cell.seeds must be a non-empty sequence of ints >= 0, got {self.seeds!r}")
        object.__setattr__(self, "seeds", tuple(int(s) for s in seeds))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `Cell.from_dict` inverts it."""
        return {
            "kind": self.kind,
            "agent": self.agent,
            "agent_config": {k: _jsonable(v) for k, v in self.agent_config},
            "problem": {k: _jsonable(v) for k, v in self.problem},
            "seeds": list(self.seeds),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cell":
        return cls(
            kind=data["kind"],
            agent=data["agent"],
            agent_config=data.get("agent_config") or {},
            problem=data.get("problem") or {},
            seeds=tuple(data["seeds"]),
        )

    def canonical_json(self) -> str:
        """Key-sorted, whitespace-free JSON: the input of the id hash."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def id(self) -> str:
        """Readable slug plus a short hash of the canonical JSON.

        The slug is for people (it may be truncated); the hash makes the id unique.
        """
        digest = hashlib.sha256(self.canonical_json().encode()).hexdigest()[:_HASH_CHARS]
        parts = [self.kind, self.agent]
        parts += [f"{k}={_slug_value(v)}" for k, v in self.problem]
        parts += [f"{k}={_slug_value(v)}" for k, v in self.agent_config]
        if len(self.seeds) == 1:
            parts.append(f"seed={self.seeds[0]}")
        else:
            parts.append(f"seeds={self.seeds[0]}-{self.seeds[-1]}x{len(self.seeds)}")
        slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", "-".join(parts))[:_SLUG_MAX]
        return f"{slug}-{digest}"


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _slug_value(value: Any) -> str:
    if isinstance(value, tuple):
        return "_".join(_slug_value(v) for v in value)
    return str(value)


def grid(
    kind: str,
    agents: Sequence[str] | Mapping[str, Mapping[str, Any]],
    problems: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    seeds_per_cell: int | None = None,
) -> tuple[Cell, ...]:
    """The Cartesian product agents x problem axes x seed groups, in a fixed order.

    Args:
      kind: the Cell.kind of every cell.
      agents: agent names, or a mapping name -> agent_config overrides.
      problems: axis name -> values, e.g. {"num_train": [10, 100], "tau": [1, 10]}.
      seeds: all seeds; split into consecutive groups of `seeds_per_cell`
        (default: one group with every seed, which the caller vmaps over).
    """
    agent_items = list(agents.items()) if isinstance(agents, Mapping) else [(a, {}) for a in agents]
    if not agent_items:
        raise ValueError("agents must not be empty")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    size = len(seeds) if seeds_per_cell is None else seeds_per_cell
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"seeds_per_cell must be None or an int >= 1, got {seeds_per_cell!r}")
    groups = [tuple(seeds[i : i + size]) for i in range(0, len(seeds), size)]
    names = sorted(problems)
    for name in names:
        if isinstance(problems[name], (str, bytes)) or len(problems[name]) == 0:
            raise ValueError(f"problems[{name!r}] must be a non-empty sequence of values")
    cells = []
    for agent, config in agent_items:
        for values in itertools.product(*(problems[n] for n in names)):
            for group in groups:
                cells.append(Cell(kind, agent, dict(config), dict(zip(names, values)), group))
    return tuple(cells)


# --------------------------------------------------------------------------- store


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that determine results (None if absent)."""
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


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

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.directory)!r})"

    def path(self, cell: Cell) -> Path:
        return self.directory / f"{cell.id}.json"

    # -- writing

    def write(self, cell: Cell, frame: pd.DataFrame) -> Path:
        """Writes `frame` as `cell`'s file atomically and returns its path."""
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
            "versions": package_versions(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "num_rows": len(frame),
            "sha256": checksum,
            "table": table,
        }
        # atomic_write's temporary file starts with "." and does not end in .json,
        # so load_all never mistakes one left by kill -9 for a result.
        return atomic_write_text(self.path(cell), json.dumps(payload, separators=(",", ":")))

    # -- reading

    @staticmethod
    def _read_file(path: Path) -> tuple[Cell, pd.DataFrame]:
        """Parses and verifies one file; raises CorruptCellFile saying why."""
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CorruptCellFile(f"cannot parse ({err})") from None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
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
        return cell, frame

    def _read_or_warn(self, path: Path) -> tuple[Cell, pd.DataFrame] | None:
        try:
            return self._read_file(path)
        except CorruptCellFile as err:
            warnings.warn(
                f"results file {path} is corrupt or partial ({err}); its cell will be recomputed",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    def read(self, cell: Cell) -> pd.DataFrame | None:
        """The cell's rows, or None if it has no valid file (a bad file is warned about)."""
        path = self.path(cell)
        if not path.exists():
            return None
        result = self._read_or_warn(path)
        return None if result is None else result[1]

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
        return _concat(frames)

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
                cell, frame = result
                if with_cell_id:
                    frame = frame.assign(cell_id=cell.id)
                frames.append(frame)
        return _concat(frames)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)


# --------------------------------------------------------------------------- executors


def run_sweep(
    cells: Sequence[Cell],
    compute_fn: Callable[[Cell], pd.DataFrame],
    store: ResultsStore,
    executor: str = "local",
    address: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Computes every cell not yet in `store`, writing each as it finishes.

    Args:
      cells: the sweep; ids must be unique.
      compute_fn: cell -> DataFrame of that cell's rows. For the Ray executor it
        must be picklable (cloudpickle: closures are fine, open handles are not).
      store: where finished cells live; finished cells are skipped, corrupt ones
        are reported and recomputed.
      executor: "local" (in this process, one cell at a time) or "ray" (one Ray
        task per cell, on the cluster at `address`, or a local instance; the
        workers must be able to import decision_bench and compute_fn's module).
        If Ray is already initialised, that instance is used and left running.
      address: Ray cluster address (e.g. "auto" or "ray://host:10001"); only for
        executor="ray". None starts a local instance unless Ray is already up.
      progress: show a tqdm bar (cells done / total, rate and time left).

    Returns:
      The rows of all `cells`, in cell order (the order does not depend on the
      order cells finished in).

    An exception raised by compute_fn propagates after the cells that already
    finished have been written, so re-running resumes from there.
    """
    cells = tuple(cells)
    for i, cell in enumerate(cells):
        if not isinstance(cell, Cell):
            raise ValueError(f"cells[{i}] must be a Cell, got {type(cell).__name__}")
    ids = [c.id for c in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"cells contain duplicates: {duplicates[:5]}")
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be one of ['local', 'ray'], got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError(f"address is only used with executor='ray', got address={address!r}")
    if not callable(compute_fn):
        raise ValueError(f"compute_fn must be callable, got {compute_fn!r}")

    todo = [c for c in cells if not store.is_done(c)]
    bar = _progress_bar(total=len(cells), initial=len(cells) - len(todo), enabled=progress)
    try:
        if todo:
            if executor == "local":
                _run_local(todo, compute_fn, store, bar)
            else:
                _run_ray(todo, compute_fn, store, bar, address)
    finally:
        bar.close()
    return store.load(cells)


def _progress_bar(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    # tqdm's rate (hence the time left) counts only cells done in this run, so a
    # resumed sweep does not claim the skipped cells took no time.
    return tqdm(total=total, initial=initial, disable=not enabled, unit="cell", desc="sweep")


def _run_local(todo, compute_fn, store, bar) -> None:
    for cell in todo:
        bar.set_postfix_str(cell.id[:40], refresh=False)
        store.write(cell, compute_fn(cell))
        bar.update(1)


def _import_ray():
    try:
        import ray  # noqa: PLC0415 - optional dependency
    except ImportError as err:
        raise ImportError(
            f"executor='ray' needs Ray, which is not installed. Install it with: {RAY_INSTALL_HINT}"
        ) from err
    return ray


def _call(compute_fn, cell):
    # Module-level so Ray pickles it by reference; compute_fn travels by value.
    return compute_fn(cell)


def _run_ray(todo, compute_fn, store, bar, address) -> None:
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        # A local instance needs no dashboard; a cluster keeps its own settings
        # (and "ray://" client connections reject start-up options).
        options = {"include_dashboard": False} if address is None else {}
        ray.init(address=address, **options)
    try:
        remote_call = ray.remote(_call)
        fn_ref = ray.put(compute_fn)  # shipped once, not once per task
        pending = {remote_call.remote(fn_ref, cell): cell for cell in todo}
        try:
            while pending:
                # The driver writes each result as soon as its task finishes, so an
                # interrupted Ray sweep keeps everything that completed.
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    cell = pending.pop(ref)
                    store.write(cell, ray.get(ref))
                    bar.update(1)
        finally:
            for ref in pending:
                ray.cancel(ref)
    finally:
        if started_here:
            ray.shutdown()
