"""The bandit cell: one agent's Thompson-sampling run on one bandit setting, all its seeds.

``decision-bench bandit`` and ``reproduce`` build their bandit runs here. Also the
bandit command's per-agent checkpoint folders (``checkpoint_folders``) and the
Showdown bandits' setting columns (``showdown_columns``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pandas as pd

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
