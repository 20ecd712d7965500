"""Registered agents with the papers' default hyperparameters.

``make(name, spec, **overrides)`` builds ``entry.make(spec, entry.config(**overrides))``.
Each family module defines a frozen ``<Family>Config`` (defaults from
reference/testbed_facts.md, validated at construction), ``make_<family>`` and
``ENTRIES``: one :class:`~decision_bench.agents.entry.AgentEntry` per name it
registers, with its colour, paper grid, input and reward kinds and test facts.
The table below is a literal, built once in the module body and never mutated:
adding a family is its module and one line here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from decision_bench.agents import (
    baselines,
    bbb,
    beta_bernoulli,
    deep_kernel,
    dropout,
    ensemble,
    epinet,
    hypermodel,
    knn,
    laplace,
    linear_gaussian,
    logistic_laplace,
    mlp,
    random_forest,
    sgmcmc,
)
from decision_bench.agents.base import Agent
from decision_bench.agents.entry import AgentEntry
from decision_bench.agents.hmc import agent as hmc
from decision_bench.specs import ProblemSpec

# One line per family module, in the order of the figures' colour table.
ENTRIES: tuple[AgentEntry, ...] = (
    *mlp.ENTRIES,
    *ensemble.ENTRIES,
    *dropout.ENTRIES,
    *bbb.ENTRIES,
    *hypermodel.ENTRIES,
    *epinet.ENTRIES,
    *sgmcmc.ENTRIES,
    *hmc.ENTRIES,
    *baselines.ENTRIES,
    *knn.ENTRIES,
    *random_forest.ENTRIES,
    *deep_kernel.ENTRIES,
    *beta_bernoulli.ENTRIES,
    *linear_gaussian.ENTRIES,
    *laplace.ENTRIES,
    *logistic_laplace.ENTRIES,
)
_AGENTS = {entry.name: entry for entry in ENTRIES}
if len(_AGENTS) != len(ENTRIES):
    raise ValueError(f"two registry entries share a name: {[entry.name for entry in ENTRIES]}")


# Registered agents whose model assumes one-hot arm features (a coin per arm):
# on continuous inputs they would run and report meaningless numbers.
ONE_HOT_AGENTS = tuple(entry.name for entry in ENTRIES if entry.inputs == "one_hot")


# Registered agents that model real-valued rewards (their sample_logits are scores
# (0, sampled mean reward), not class logits), and the problems that have such rewards.
REAL_REWARD_AGENTS = tuple(entry.name for entry in ENTRIES if entry.rewards == "real")
REAL_REWARD_PROBLEMS = "WheelBandit-v0, LinearBandit-v0 and SparseLinearBandit-v0"


def check_inputs_fit(name: str, problem: str, one_hot: bool, real_rewards: bool = False) -> None:
    """Raises ValueError if agent ``name`` cannot model the inputs or the rewards of
    ``problem`` (one_hot: one-hot arm features; real_rewards: Gaussian rewards, not 0/1)."""
    if name in ONE_HOT_AGENTS and not one_hot:
        raise ValueError(
            f"agent {name!r} is the exact posterior for one-hot arm features and runs only on "
            f"BernoulliBandit-v0; {problem} has continuous features (use e.g. mlp or ensemble+)"
        )
    if name in REAL_REWARD_AGENTS and not real_rewards:
        raise ValueError(
            f"agent {name!r} models real-valued (Gaussian) rewards and runs only on "
            f"{REAL_REWARD_PROBLEMS}; {problem} has 0/1 labels (use e.g. mlp or ensemble+)"
        )
    if real_rewards and name not in REAL_REWARD_AGENTS:
        raise ValueError(
            f"agent {name!r} predicts 0/1 rewards (class logits) and cannot learn the real-valued "
            f"Gaussian rewards of {problem}; use {', '.join(REAL_REWARD_AGENTS)}, or policy 'uniform'"
        )


def names() -> tuple[str, ...]:
    """The registered agent names, sorted."""
    return tuple(sorted(_AGENTS))


def entry(name: str) -> AgentEntry:
    """The registry entry of agent ``name`` (agents/entry.py)."""
    if name not in _AGENTS:
        raise ValueError(f"unknown agent {name!r}; registered agents are {list(names())}")
    return _AGENTS[name]


def hyperparameters(name: str) -> tuple[str, ...]:
    """The names of the hyperparameters ``make(name, ...)`` accepts as overrides."""
    return tuple(field.name for field in dataclasses.fields(entry(name).config))


def config(name: str, **overrides: Any) -> Any:
    """The frozen config of agent ``name``: paper defaults with ``overrides`` applied."""
    valid = hyperparameters(name)
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown hyperparameter(s) {unknown} for agent {name!r}; "
            f"valid hyperparameters are {list(valid)}"
        )
    return entry(name).config(**overrides)


def make(name: str, spec: ProblemSpec, **overrides: Any) -> Agent:
    """Builds agent ``name`` for ``spec`` with the paper defaults overridden by keyword.

    Raises ValueError for an unknown name (listing the registered names), an
    unknown override (listing the agent's hyperparameters) or an invalid value
    (naming the parameter and the accepted range).
    """
    if not isinstance(spec, ProblemSpec):
        raise ValueError(f"spec must be a ProblemSpec, got {type(spec).__name__}")
    return entry(name).make(spec, config(name, **overrides))
