"""The bandit cell: one agent's Thompson-sampling run on one bandit setting, all its seeds.

``BanditCell`` is the typed form; ``BanditCell.to_cell`` is its one encoding as a
store ``Cell`` (kind "bandit"; its problem holds the env id, num_steps and the
environment's keyword arguments), whose id names the stored file, and
``BanditCell.from_cell`` reads it back. ``decision-bench bandit`` and
``reproduce`` build their bandit cells with ``bandit_cell`` and compute them with
``compute_bandit_cell``; ``bandit_family`` gives a neural bandit's generative
family (relu, 50-50 when the cell names none) as result columns. Also the bandit
command's per-agent checkpoint folders (``checkpoint_folders``) and the Showdown
bandits' setting columns (``showdown_columns``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from decision_bench.bandit import BanditLoopConfig, run_bandit
from decision_bench.evaluation.sweeps import DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, hidden_sizes_label
from decision_bench.experiments.agent_files import file_fingerprint
from decision_bench.experiments.cells import Cell, problem_of, store_cell

KIND = "bandit"


@dataclasses.dataclass(frozen=True)
class BanditCell:
    """Everything one bandit cell's rows depend on (with the loop's settings, which
    ``compute_bandit_cell`` takes beside it: a preset's cells run the defaults).

    env: a registered bandit id; num_steps: steps per seed; env_kwargs: the
    environment's keyword arguments, key-sorted (input_dim, num_actions,
    temperature, ...; hidden_sizes a tuple of widths); seeds: run together;
    agent_config: the agent's overrides, key-sorted; agent_file_sha256: the
    SHA-256 of a user's agent file.
    """

    agent: str
    env: str
    num_steps: int
    env_kwargs: tuple = ()
    seeds: tuple[int, ...] = (0,)
    agent_config: tuple = ()
    agent_file_sha256: str | None = None

    def to_cell(self) -> Cell:
        """The store's cell: its problem holds env, num_steps and the env kwargs."""
        problem = {"env": self.env, "num_steps": self.num_steps, **dict(self.env_kwargs)}
        return store_cell(KIND, self, problem)

    @classmethod
    def from_cell(cls, cell: Cell) -> BanditCell:
        """The typed cell of a store cell in this encoding (ValueError otherwise)."""
        problem = problem_of(cell, KIND)
        try:
            env, num_steps = problem.pop("env"), problem.pop("num_steps")
        except KeyError as missing:
            raise ValueError(f"bandit cell {cell.id} lacks {missing}") from None
        if "hidden_sizes" in problem:
            problem["hidden_sizes"] = tuple(problem["hidden_sizes"])
        return cls(
            agent=cell.agent, env=env, num_steps=num_steps, env_kwargs=tuple(sorted(problem.items())),
            seeds=cell.seeds, agent_config=cell.agent_config, agent_file_sha256=cell.agent_file_sha256,
        )


def bandit_cell(
    agent: str,
    agent_config: Mapping[str, Any] | None,
    problem: Mapping[str, Any],
    seeds: Sequence[int],
    agent_file_sha256: str | None = None,
) -> Cell:
    """The store cell of one agent's bandit run: problem holds "env", "num_steps" and
    the environment's keyword arguments; agent_config: the agent's overrides (None or
    {}: its defaults); agent_file_sha256: a user's agent file's digest (None for a
    registered agent)."""
    problem = dict(problem)
    try:
        env, num_steps = problem.pop("env"), problem.pop("num_steps")
    except KeyError as missing:
        raise ValueError(f"a bandit cell's problem needs {missing}, got {sorted(problem)}") from None
    return BanditCell(
        agent=agent, env=env, num_steps=num_steps, env_kwargs=tuple(sorted(problem.items())), seeds=tuple(seeds),
        agent_config=tuple(sorted(dict(agent_config or {}).items())), agent_file_sha256=agent_file_sha256,
    ).to_cell()


def runnable_agent(
    agent: str, config: Mapping[str, Any], make_agent: Callable | None = None, agent_file_sha256: str | None = None
) -> tuple[Any, dict | None, str | None]:
    """(what ``run_bandit`` takes as the agent, its agent_kwargs, its agent_fingerprint):
    a registered name with ``config`` (its overrides) as agent_kwargs; or an agent
    file's ``make_agent`` with ``config`` (the file's options) bound as keywords,
    fingerprinted by the file's SHA-256 and those options (a function run_bandit
    cannot see into: the hash marks which version of it a checkpoint holds)."""
    config = dict(config)
    if make_agent is None:
        return agent, config or None, None
    return functools.partial(make_agent, **config), None, file_fingerprint(agent_file_sha256, config)


def compute_bandit_cell(
    cell: Cell,
    make_agent: Callable | None = None,
    *,
    out_dir: str | Path,
    resume: bool | None = True,
    progress: bool = True,
    loop: BanditLoopConfig | None = None,
    log_every: int | None = None,
    chunk_size: int | None = None,
    on_rows: Callable[[pd.DataFrame], None] | None = None,
) -> pd.DataFrame:
    """The rows of one bandit cell: ``run_bandit`` of its agent on its env, num_steps,
    env kwargs and seeds, checkpointed under ``out_dir`` (``resume`` as run_bandit's).

    make_agent: an agent file's make_agent for its cell (None: a registered agent);
    loop: the loop's settings (None: run_bandit's defaults, as a preset's cells run);
    log_every, chunk_size, on_rows, progress: as run_bandit's (None: its defaults).
    """
    typed = BanditCell.from_cell(cell)
    agent, agent_kwargs, fingerprint = runnable_agent(
        cell.agent, dict(typed.agent_config), make_agent, cell.agent_file_sha256
    )
    options: dict[str, Any] = {} if chunk_size is None else {"chunk_size": chunk_size}
    return run_bandit(
        agent,
        typed.env,
        typed.num_steps,
        list(typed.seeds),
        loop,
        log_every=log_every,
        env_kwargs=dict(typed.env_kwargs),
        agent_kwargs=agent_kwargs,
        out_dir=out_dir,
        resume=resume,
        progress=progress,
        agent_fingerprint=fingerprint,
        on_rows=on_rows,
        **options,
    )


def bandit_family(cell: Cell) -> dict[str, str]:
    """The generative family of a bandit cell as result columns: activation and
    hidden_sizes ("50-50", as in testbed rows); the default family (relu and 50-50)
    when the cell names none."""
    problem = dict(cell.problem)
    return {
        "activation": str(problem.get("activation", DEFAULT_ACTIVATION)),
        "hidden_sizes": hidden_sizes_label(problem.get("hidden_sizes", DEFAULT_HIDDEN_SIZES)),
    }


def with_family_columns(frame: pd.DataFrame, cell: Cell) -> pd.DataFrame:
    """A copy of ``frame`` (rows of bandit ``cell``) with its family columns
    (``bandit_family``) after temperature (last without one), where not already there."""
    frame = frame.copy()
    position = frame.columns.get_loc("temperature") + 1 if "temperature" in frame.columns else len(frame.columns)
    for offset, (column, value) in enumerate(bandit_family(cell).items()):
        if column not in frame.columns:
            frame.insert(position + offset, column, value)
    return frame


_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def _legacy_folder(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name.replace("+", "_plus"))


def checkpoint_folders(agents) -> dict[str, str]:
    """{agent: its checkpoint folder under checkpoints/}, one folder per agent of the run
    (S04, S01): a plain name (letters, digits, "_" "." "+" "-", starting with a letter or
    digit, as every registered agent's) keeps the folder runs have always used
    ("ensemble+" -> "ensemble_plus"), unless another agent of the run would share it; such
    names, and any other ("a b", ".."), get "_", a readable form and a hash of the name
    itself. Legacy folders never start with "_"; the run's agents are fixed by its
    manifest, so its mapping never changes between sessions."""
    agents = list(agents)
    legacy = {a: _legacy_folder(a) for a in agents}
    shared = {folder for folder in legacy.values() if list(legacy.values()).count(folder) > 1}
    folders = {}
    for agent in agents:
        if _PLAIN_NAME.fullmatch(agent) and legacy[agent] not in shared:
            folders[agent] = legacy[agent]
        else:
            readable = "".join(c if c.isalnum() or c in "-." else "_" for c in agent)[:40]
            folders[agent] = f"_{readable}-{hashlib.sha256(agent.encode('utf-8')).hexdigest()[:16]}"
    return folders


def showdown_columns(df: pd.DataFrame, env: object) -> pd.DataFrame:
    """A Showdown bandit's rows get its settings (delta; context_dim, sparse_dim, noise
    scale), after the env column, so a row says which problem it ran on."""
    from decision_bench.envs.showdown import SHOWDOWN_BANDITS  # noqa: PLC0415 - imports jax

    if type(env) not in SHOWDOWN_BANDITS.values():
        return df
    position = df.columns.get_loc("env") + 1
    # num_actions is a column of every bandit.csv already; the other settings are new.
    new = [field.name for field in dataclasses.fields(env) if field.name not in df.columns]
    for offset, name in enumerate(new):
        df.insert(position + offset, name, getattr(env, name))
    return df
