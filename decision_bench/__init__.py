"""decision_bench: neural-bandit environments, epistemic agents and joint-prediction evaluation.

Importing the package registers the Gymnasium ids ``decision_bench/NeuralBandit-v0``,
``decision_bench/ContextualNeuralBandit-v0`` and ``decision_bench/BernoulliBandit-v0``.
"""

from decision_bench import priors
from decision_bench._src.devices import use_cpu_cores
from decision_bench.bandit import BanditLoopConfig, ThompsonPolicy, run_bandit
from decision_bench.envs import make_testbed_problem
from decision_bench.envs.registration import register_envs
from decision_bench.specs import ProblemSpec

__version__ = "0.2.0"

ENV_IDS = register_envs()

__all__ = [
    "BanditLoopConfig",
    "ENV_IDS",
    "ProblemSpec",
    "ThompsonPolicy",
    "__version__",
    "make_testbed_problem",
    "priors",
    "run_bandit",
    "use_cpu_cores",
]
