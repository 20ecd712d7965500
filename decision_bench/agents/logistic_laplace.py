"""The logistic_laplace agent: Bayesian logistic regression with a Laplace posterior,
the Thompson sampler of Chapelle and Li (2011, "An empirical evaluation of Thompson
sampling").

It is laplace (agents/laplace.py) with no hidden layer: the MAP logistic (softmax)
regression, trained as the logistic baseline (cross-entropy plus the mlp's decayed
L2, Adam), whose whole weight matrix [d + 1, C] gets the Gauss-Newton posterior
N(W*, H^-1), exact in its curvature because the logits are linear in W. One draw
of W serves all n inputs, so draws are joint; on the testbed's logistic prior it
is the model class of the data.

Static: input_dim, num_classes, num_train, spec.regularization. Traced: l2,
learning_rate, posterior_scale and the problem's temperature.
"""

from __future__ import annotations

import dataclasses

from decision_bench._src.validation import check_positive
from decision_bench.agents import core, laplace
from decision_bench.agents._src.checks import check_config
from decision_bench.agents.base import Agent
from decision_bench.agents.baselines import LogisticConfig
from decision_bench.agents.entry import AgentEntry
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class LogisticLaplaceConfig(LogisticConfig):
    """logistic_laplace defaults: the logistic baseline's training, the exact Laplace
    posterior of its weights (posterior_scale 1)."""

    posterior_scale: float = core.traced(1.0)  # multiplies the posterior's standard deviations

    def __post_init__(self):
        check_config(self, posterior_scale=check_positive)


LogisticLaplaceState = laplace.LaplaceState


# The same traced fields as LaplaceConfig's.
LogisticLaplaceHyper = laplace.LaplaceHyper


def make_logistic_laplace(spec: ProblemSpec, config: LogisticLaplaceConfig) -> Agent:
    # laplace's functions with no hidden layer: its features are (x, 1).
    return core.make_agent(
        laplace.laplace_functions, spec, config, name="logistic_laplace", hidden_sizes=(), capacity=spec.num_train
    )


ENTRIES = (
    AgentEntry(
        "logistic_laplace", LogisticLaplaceConfig, make_logistic_laplace, colour="#c7c7c7", since="issue 37"
    ),
)
