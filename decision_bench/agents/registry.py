"""Registered agents with the papers' default hyperparameters.

``make(name, spec, **overrides)`` builds ``make_fn(spec, ConfigClass(**overrides))``.
Each family module defines a frozen ``<Family>Config`` (defaults from
reference/testbed_facts.md, validated at construction) and ``make_<family>``.
The table below is a literal, built once in the module body and never mutated:
adding an agent is one line here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from decision_bench.agents.base import Agent
from decision_bench.agents.baselines import (
    LogisticConfig,
    PriorConfig,
    UniformConfig,
    make_logistic,
    make_prior_agent,
    make_uniform,
)
from decision_bench.agents.bbb import BBBConfig, make_bbb
from decision_bench.agents.beta_bernoulli import BetaBernoulliConfig, make_beta_bernoulli
from decision_bench.agents.deep_kernel import DeepKernelConfig, make_deep_kernel
from decision_bench.agents.dropout import DropoutConfig, make_dropout
from decision_bench.agents.ensemble import (
    EnsembleConfig,
    EnsemblePlusConfig,
    make_ensemble,
    make_ensemble_plus,
)
from decision_bench.agents.epinet import EpinetConfig, make_epinet
from decision_bench.agents.hmc import HMCConfig, make_hmc
from decision_bench.agents.hypermodel import HypermodelConfig, make_hypermodel
from decision_bench.agents.knn import KNNConfig, make_knn
from decision_bench.agents.laplace import LaplaceConfig, make_laplace
from decision_bench.agents.linear_gaussian import LinearGaussianConfig, make_linear_gaussian
from decision_bench.agents.mlp import MLPConfig, make_mlp
from decision_bench.agents.random_forest import RandomForestConfig, make_random_forest
from decision_bench.agents.sgmcmc import SGMCMCConfig, SGMCMCQuickConfig, make_sgmcmc
from decision_bench.specs import ProblemSpec

# name -> (config class, make_fn(spec, config) -> Agent)
_AGENTS = {
    "mlp": (MLPConfig, make_mlp),
    "ensemble": (EnsembleConfig, make_ensemble),
    "ensemble+": (EnsemblePlusConfig, make_ensemble_plus),
    "dropout": (DropoutConfig, make_dropout),
    "uniform": (UniformConfig, make_uniform),
    "prior": (PriorConfig, make_prior_agent),
    "logistic": (LogisticConfig, make_logistic),
    "bbb": (BBBConfig, make_bbb),
    "hypermodel": (HypermodelConfig, make_hypermodel),
    "epinet": (EpinetConfig, make_epinet),
    "sgmcmc": (SGMCMCConfig, make_sgmcmc),
    "sgmcmc_quick": (SGMCMCQuickConfig, make_sgmcmc),
    # full-batch HMC on the problem's own prior (needs the `bayes` extra: blackjax)
    "hmc": (HMCConfig, make_hmc),
    # exact conjugate posterior for one-hot (bag-of-coins) inputs only
    "beta_bernoulli": (BetaBernoulliConfig, make_beta_bernoulli),
    # exact Normal-Inverse-Gamma linear regression, for real-valued (Gaussian) rewards only
    "linear_gaussian": (LinearGaussianConfig, make_linear_gaussian),
    # paper 000 App. C.8-C.9 baselines: no index (knn, random_forest) and a GP head
    "knn": (KNNConfig, make_knn),
    # grown by scikit-learn (the `data` extra) through jax.pure_callback
    "random_forest": (RandomForestConfig, make_random_forest),
    "deep_kernel": (DeepKernelConfig, make_deep_kernel),
    "laplace": (LaplaceConfig, make_laplace),
}


# Registered agents whose model assumes one-hot arm features (a coin per arm):
# on continuous inputs they would run and report meaningless numbers.
ONE_HOT_AGENTS = ("beta_bernoulli",)


# Registered agents that model real-valued rewards (their sample_logits are scores
# (0, sampled mean reward), not class logits), and the problems that have such rewards.
REAL_REWARD_AGENTS = ("linear_gaussian",)
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


def _entry(name: str) -> tuple[type, Any]:
    if name not in _AGENTS:
        raise ValueError(f"unknown agent {name!r}; registered agents are {list(names())}")
    return _AGENTS[name]


def hyperparameters(name: str) -> tuple[str, ...]:
    """The names of the hyperparameters ``make(name, ...)`` accepts as overrides."""
    config_class, _ = _entry(name)
    return tuple(field.name for field in dataclasses.fields(config_class))


def config(name: str, **overrides: Any) -> Any:
    """The frozen config of agent ``name``: paper defaults with ``overrides`` applied."""
    config_class, _ = _entry(name)
    valid = hyperparameters(name)
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown hyperparameter(s) {unknown} for agent {name!r}; "
            f"valid hyperparameters are {list(valid)}"
        )
    return config_class(**overrides)


def make(name: str, spec: ProblemSpec, **overrides: Any) -> Agent:
    """Builds agent ``name`` for ``spec`` with the paper defaults overridden by keyword.

    Raises ValueError for an unknown name (listing the registered names), an
    unknown override (listing the agent's hyperparameters) or an invalid value
    (naming the parameter and the accepted range).
    """
    if not isinstance(spec, ProblemSpec):
        raise ValueError(f"spec must be a ProblemSpec, got {type(spec).__name__}")
    _, make_fn = _entry(name)
    return make_fn(spec, config(name, **overrides))
