"""The mlp agent: one MLP trained by cross-entropy with decayed L2 (paper 000, App. C.1).

It has no epistemic index, so ``sample_logits`` ignores its key: every draw is
the same network. This is the point-estimate baseline the other agents improve on.

Testbed L2 weight: ``l2 * d * sqrt(beta) / T``; sequential: ``l2 * 2 * sqrt(beta) / t``
(``regularization.decayed_weight``). The penalty is ``weight * sum(theta**2)``
over all weights and biases, added to the mean cross-entropy of the batch, as
in the reference loss.
"""

from __future__ import annotations

import dataclasses

import jax

from decision_bench._src import deprecations
from decision_bench.agents._src import checks, networks
from decision_bench.agents.base import Agent
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry, TestFacts
from decision_bench.specs import ProblemSpec

__all__ = ["MLPConfig", "MLPHyper", "MLPState", "l2_weight", "make_mlp"]

# MLP, check_common, cross_entropy and sum_of_squares, importable from here for code
# written before agents/_src held them, until 0.4.
__getattr__ = deprecations.module_getattr(__name__)


@dataclasses.dataclass(frozen=True)
class MLPConfig:
    """mlp defaults (paper 000, App. C.1): l2 = 1 with the adaptive scale, 1000 Adam steps."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    l2: float = core.traced(1.0)  # lambda; weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = core.traced(1e-3)
    num_steps: int = 1000  # default SGD steps for fit

    def __post_init__(self):
        checks.check_common(self)


MLPState = core.TrainState


# MLPConfig's traced fields are l2 and learning_rate: the shared record.
MLPHyper = core.L2Hyper


def l2_weight(spec: ProblemSpec, config: MLPConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight after num_seen observations for a spec and config. Returns a [] f32."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen)


@core.cached_functions
def _functions(*, hidden_sizes: tuple[int, ...], num_classes: int, input_dim: int, regularization: str):
    """The mlp's functions for one static setting."""
    return core.point_estimate(
        networks.MLP(hidden_sizes, num_classes), input_dim=input_dim, regularization=regularization
    )


def make_mlp(spec: ProblemSpec, config: MLPConfig) -> Agent:
    return core.make_agent(_functions, spec, config, name="mlp")


ENTRIES = (
    AgentEntry(
        "mlp", MLPConfig, make_mlp, colour="#1f77b4", core=0,
        paper_grid={"l2": (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)},  # App. C.1
        test=TestFacts(deterministic=True),
    ),
)
