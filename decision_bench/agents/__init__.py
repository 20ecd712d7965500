"""Agents: epistemic samplers with the Neural Testbed's default hyperparameters.

    agent = make("ensemble+", spec, num_ensemble=10)
    state = fit(agent, key, problem.train_data, spec)
    logits = agent.sample_logits(key, state, x)   # [n, C], one joint draw
"""

from decision_bench.agents.base import Agent, Batch, params_are_finite
from decision_bench.agents.baselines import LogisticConfig, PriorConfig, UniformConfig
from decision_bench.agents.bbb import BBBConfig
from decision_bench.agents.beta_bernoulli import BetaBernoulliConfig
from decision_bench.agents.deep_kernel import DeepKernelConfig
from decision_bench.agents.dropout import DropoutConfig
from decision_bench.agents.ensemble import EnsembleConfig, EnsemblePlusConfig
from decision_bench.agents.epinet import EpinetConfig
from decision_bench.agents.hmc import (
    HMCConfig,
    HMCDiagnostics,
    HMCPosterior,
    diagnostic_problems,
    diagnostics_pass,
    hmc_posterior,
)
from decision_bench.agents.hypermodel import HypermodelConfig
from decision_bench.agents.knn import KNNConfig
from decision_bench.agents.laplace import LaplaceConfig
from decision_bench.agents.linear_gaussian import LinearGaussianConfig
from decision_bench.agents.logistic_laplace import LogisticLaplaceConfig
from decision_bench.agents.mlp import MLPConfig
from decision_bench.agents.random_forest import RandomForestConfig
from decision_bench.agents.registry import config, hyperparameters, make, names
from decision_bench.agents.regularization import REGULARIZATION_MODES, decayed_weight
from decision_bench.agents.sgmcmc import SGMCMCConfig, SGMCMCQuickConfig
from decision_bench.agents.training import (
    NonFiniteParamsError,
    check_finite,
    fit,
    fit_checked,
)

__all__ = [
    # contract
    "Agent",
    "Batch",
    "params_are_finite",
    # registry
    "make",
    "names",
    "config",
    "hyperparameters",
    # training
    "fit",
    "fit_checked",
    "check_finite",
    "NonFiniteParamsError",
    # regularisation
    "decayed_weight",
    "REGULARIZATION_MODES",
    # hmc: direct posterior sampling and convergence diagnostics
    "hmc_posterior",
    "HMCPosterior",
    "HMCDiagnostics",
    "diagnostics_pass",
    "diagnostic_problems",
    # configs
    "MLPConfig",
    "EnsembleConfig",
    "EnsemblePlusConfig",
    "DropoutConfig",
    "UniformConfig",
    "PriorConfig",
    "LogisticConfig",
    "BBBConfig",
    "BetaBernoulliConfig",
    "HypermodelConfig",
    "EpinetConfig",
    "SGMCMCConfig",
    "SGMCMCQuickConfig",
    "HMCConfig",
    "KNNConfig",
    "RandomForestConfig",
    "DeepKernelConfig",
    "LaplaceConfig",
    "LinearGaussianConfig",
    "LogisticLaplaceConfig",
]
