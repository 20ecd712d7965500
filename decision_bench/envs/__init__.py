"""Environments: functional JAX bandits, their Gymnasium adapters, and testbed problems."""

from decision_bench.envs.bandits import (
    BANDITS,
    BanditParams,
    BanditState,
    BernoulliBandit,
    ContextualNeuralBandit,
    NeuralBandit,
    make_bandit,
)
from decision_bench.envs.classification import (
    ClassificationBandit,
    ClassificationParams,
    ClassificationState,
)
from decision_bench.envs.registration import register_envs
from decision_bench.envs.testbed import (
    Dataset,
    PolyadicTest,
    TestbedProblem,
    TestSample,
    label_log_likelihood,
    make_testbed_problem,
    polyadic_design,
    polyadic_inputs,
    sample_environment,
    sample_polyadic_test,
    sample_test,
    sample_training_data,
)

__all__ = [
    "BANDITS",
    "BanditParams",
    "BanditState",
    "BernoulliBandit",
    "ClassificationBandit",
    "ClassificationParams",
    "ClassificationState",
    "ContextualNeuralBandit",
    "Dataset",
    "NeuralBandit",
    "PolyadicTest",
    "TestSample",
    "TestbedProblem",
    "label_log_likelihood",
    "make_bandit",
    "make_testbed_problem",
    "polyadic_design",
    "polyadic_inputs",
    "register_envs",
    "sample_environment",
    "sample_polyadic_test",
    "sample_test",
    "sample_training_data",
]
