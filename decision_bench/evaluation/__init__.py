"""Offline evaluation of joint predictions: d_KL^{tau,kappa}, accuracy, ECE, NLL, the testbed runner.

Public API:

- ``estimate_kl(sampler, problem, key, num_test, num_models, method) -> KLResult``
- ``estimate_nll(sampler, x, y, key, num_models, method) -> NLLResult``
- ``evaluate_classification(sampler, problem, key, ...) -> ClassificationResult``
  and the array functions ``accuracy``, ``expected_calibration_error``
- ``posterior_fidelity(key, fitted, reference, problem, config) -> FidelityResult`` and
  ``kl_to_reference(...) -> ReferenceKLResult``: distance to a reference posterior,
  with the settings in a ``FidelityConfig`` (or as its fields' keywords)
- ``FittedAgent(agent, state)``: what the estimators take besides plain callables
- ``run_testbed(agent_names, sweep, seeds, ...) -> pandas.DataFrame``, scored against a
  ``Reference(name, overrides)`` posterior when given one
- ``get_sweep(name)``, ``SWEEP_NAMES``: the named sweeps (paper2d, highdim,
  quick, standard, and the generative-family sweeps robustness_activation,
  robustness_width, robustness_quick)
- ``custom_sweep(input_dims, num_trains, temperatures, taus, kappa, num_seeds)``: any other grid
"""

from decision_bench.evaluation.fidelity import (
    FidelityConfig,
    FidelityResult,
    ReferenceKLResult,
    kl_to_reference,
    posterior_fidelity,
)
from decision_bench.evaluation.kl import (
    METHODS,
    FittedAgent,
    KLResult,
    NLLResult,
    NonFiniteEstimateError,
    estimate_kl,
    estimate_nll,
)
from decision_bench.evaluation.metrics import (
    ClassificationResult,
    accuracy,
    evaluate_classification,
    expected_calibration_error,
)
from decision_bench.evaluation.runner import Reference, run_testbed
from decision_bench.evaluation.sweeps import (
    SWEEP_NAMES,
    Sweep,
    TestbedSetting,
    custom_sweep,
    get_sweep,
)

__all__ = [
    "METHODS",
    "SWEEP_NAMES",
    "ClassificationResult",
    "FidelityConfig",
    "FidelityResult",
    "FittedAgent",
    "KLResult",
    "NLLResult",
    "NonFiniteEstimateError",
    "Reference",
    "ReferenceKLResult",
    "Sweep",
    "TestbedSetting",
    "accuracy",
    "custom_sweep",
    "estimate_kl",
    "estimate_nll",
    "evaluate_classification",
    "expected_calibration_error",
    "get_sweep",
    "kl_to_reference",
    "posterior_fidelity",
    "run_testbed",
]
