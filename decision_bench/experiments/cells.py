"""Cells: the units of work of an experiment grid, each with a stable id.

A grid is a tuple of :class:`Cell` records. Each cell is one unit of work (one
agent with one configuration on one problem setting, for a group of seeds that
the caller vmaps over) and has a stable id derived from its parameters alone, so
the same command run twice names the same files. (An evaluation *sweep*, in
``decision_bench.evaluation.sweeps``, is a named set of testbed settings; a
grid's cells are what a command or preset makes of sweeps and bandit runs.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from decision_bench._src.fingerprints import config_text, text_fingerprint

_SLUG_MAX = 80
_HASH_CHARS = 12


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
    """One unit of work of a grid; immutable and hashable.

    Attributes:
      kind: what computes it, e.g. "testbed" or "bandit".
      agent: the agent name, e.g. "ensemble+".
      agent_config: overrides of the agent's defaults, a key-sorted tuple of
        (name, value) items (a dict is accepted and normalised).
      problem: problem parameters (input_dim, num_train, temperature, ...), a
        key-sorted tuple of items (a dict is accepted and normalised).
      seeds: the seeds this cell runs (vmapped together by the caller).
      agent_file_sha256: for a user's agent file (``--agent-file``), the SHA-256
        of its bytes, so an edited file names new cells instead of reusing the
        old file's rows; None (left out of the id) for a registered agent, so
        their ids are what they were before files were hashed.

    Values must be JSON scalars (str, int, float, bool, None) or sequences of
    them. Note that 1 and 1.0 are different values and give different ids.
    """

    kind: str
    agent: str
    agent_config: tuple = ()
    problem: tuple = ()
    seeds: tuple = (0,)
    agent_file_sha256: str | None = None

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
        digest = self.agent_file_sha256
        if digest is not None and not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            raise ValueError(f"Cell.agent_file_sha256 must be None or a hex SHA-256, got {digest!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `Cell.from_dict` inverts it."""
        data = {
            "kind": self.kind,
            "agent": self.agent,
            "agent_config": {k: _jsonable(v) for k, v in self.agent_config},
            "problem": {k: _jsonable(v) for k, v in self.problem},
            "seeds": list(self.seeds),
        }
        if self.agent_file_sha256 is not None:
            # Only when set: registered agents' cells keep the ids they always had.
            data["agent_file_sha256"] = self.agent_file_sha256
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cell":
        return cls(
            kind=data["kind"],
            agent=data["agent"],
            agent_config=data.get("agent_config") or {},
            problem=data.get("problem") or {},
            seeds=tuple(data["seeds"]),
            agent_file_sha256=data.get("agent_file_sha256"),
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


def store_cell(kind: str, typed: Any, problem: Mapping[str, Any]) -> Cell:
    """The store's cell of a typed cell (``TestbedCell``, ``RealdataCell``,
    ``BanditCell``): its kind, agent, agent_config, seeds and agent_file_sha256, with
    ``problem`` (the kind's encoding of the rest)."""
    return Cell(
        kind, typed.agent, dict(typed.agent_config), problem, tuple(typed.seeds),
        agent_file_sha256=typed.agent_file_sha256,
    )


def problem_of(cell: Cell, kind: str) -> dict[str, Any]:
    """A store cell's problem as a dict, for decoding into the typed cell of ``kind``
    (ValueError when the cell is of another kind)."""
    if cell.kind != kind:
        raise ValueError(f"not a {kind} cell: kind {cell.kind!r}")
    return dict(cell.problem)


def config_label(values: Mapping[str, Any]) -> str:
    """{"num_ensemble": 3, "l2": 0.5} -> "l2=0.5 num_ensemble=3": an agent's overrides
    as the results files' agent_config column shows them ("" for the defaults)."""
    return " ".join(
        f"{k}={','.join(map(str, v)) if isinstance(v, (tuple, list)) else v}" for k, v in sorted(dict(values).items())
    )


def agent_fingerprint(cell: Cell) -> str | None:
    """A short hash of what defines the cell's agent beyond its name and overrides:
    the agent file's SHA-256 for a user's agent; for a registered agent, its
    resolved config (the package's defaults with the cell's overrides applied, so a
    changed default is seen) and, for a testbed cell scored against a reference,
    the reference's resolved config too. None when it cannot be known (a name the
    registry does not hold and no file): such cells are not checked.

    Stored beside each cell's rows (experiments/store.py): a stored cell whose
    fingerprint differs from now is recomputed, not reused.
    """
    if cell.agent_file_sha256 is not None:
        parts = [f"file:{cell.agent_file_sha256}"]
    else:
        from decision_bench.agents import registry  # imports every family: only when needed

        if cell.agent not in registry.names():
            return None
        try:
            # The testbed's decay mode for every kind of cell: the mode these
            # fingerprints have always been computed with, so stored cells stay valid.
            parts = [config_text(registry.config(cell.agent, **dict(cell.agent_config)), "testbed")]
            problem = dict(cell.problem)
            if isinstance(problem.get("reference"), str):
                options = dict(problem.get("reference_options") or ())
                parts.append(config_text(registry.config(problem["reference"], **options), "testbed"))
        except (TypeError, ValueError):
            return None  # overrides this version refuses: the run itself will say so
    return text_fingerprint(*parts)


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


def seed_groups(seeds: Sequence[int], size: int) -> tuple[tuple[int, ...], ...]:
    """``seeds`` in consecutive groups of ``size`` (the last may be shorter): the cells
    of an agent whose seeds run in parts (``Preset.bandit_seeds_per_cell``)."""
    seeds = tuple(seeds)
    return tuple(seeds[start:start + size] for start in range(0, len(seeds), size))
