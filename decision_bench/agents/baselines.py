"""Baseline agents (paper 000, App. C; paper 001, Sec. 3): uniform, prior, logistic.

- ``uniform``: zero logits, i.e. equal class probabilities; ignores data and keys.
- ``prior``: every draw is a fresh sample of the generative random-MLP prior
  (logits already divided by the temperature, like ``MLPPrior.logits``); it
  ignores data, so it is the "knows the prior, learns nothing" reference.
- ``logistic``: linear softmax regression, cross-entropy plus L2 with the same
  decayed schedule as mlp; a point estimate, so samples are deterministic.

Traced (agents/core.py): the temperature, and logistic's l2 and learning_rate.
Static: num_classes; the prior's input_dim, hidden_sizes and activation;
logistic's input_dim and spec.regularization (num_steps only the length of ``fit``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice
from decision_bench.agents._src.checks import check_common
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry, TestFacts
from decision_bench.priors import ACTIVATIONS, MLPPrior
from decision_bench.specs import ProblemSpec


class StepState(NamedTuple):
    """State of agents that learn nothing: only a step counter, so fit has a carry."""

    step: jax.Array  # [] i32


def _init_step(hyper: Any, key: jax.Array) -> StepState:
    del hyper, key  # nothing to draw; the shapes are fixed by the static setting
    return StepState(step=jnp.zeros((), jnp.int32))


def _count_step(hyper: Any, key: jax.Array, state: StepState, batch: Batch) -> StepState:
    del hyper, batch, key  # data-independent agents
    return StepState(step=state.step + 1)


@dataclasses.dataclass(frozen=True)
class UniformConfig:
    """No hyperparameters."""

    # The problem's temperature is bound like every family's, but never read.
    unused_traced: ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self):
        check_common(self)


class UniformHyper(NamedTuple):
    """The traced hyperparameters of UniformConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    temperature: jax.Array


@core.cached_functions
def _uniform_functions(*, num_classes: int, input_dim: int):
    """uniform's functions for one number of classes (the same objects each time)."""

    def sample_logits(hyper: Any, key: jax.Array, state: StepState, x: jax.Array) -> jax.Array:
        """[n, d] -> zeros [n, C]."""
        del hyper, state, key
        return jnp.zeros((x.shape[0], num_classes), jnp.float32)

    def member_logits(hyper: Any, state: StepState, x: jax.Array) -> jax.Array:
        return sample_logits(hyper, None, state, x)[None]

    return _init_step, _count_step, sample_logits, member_logits


def make_uniform(spec: ProblemSpec, config: UniformConfig) -> Agent:
    return core.make_agent(_uniform_functions, spec, config, name="uniform", num_steps=0)


@dataclasses.dataclass(frozen=True)
class PriorConfig:
    """The generative MLP prior's architecture (testbed defaults); data is ignored."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    activation: str = "relu"

    def __post_init__(self):
        check_common(self)
        check_choice("activation", self.activation, ACTIVATIONS)


class PriorHyper(NamedTuple):
    """The traced hyperparameters of PriorConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    temperature: jax.Array  # the raw prior logits are divided by it


@core.cached_functions
def _prior_functions(
    *, input_dim: int, hidden_sizes: tuple[int, ...], activation: str, num_classes: int
):
    """The prior agent's functions for one architecture (the same objects each time)."""
    # The generative model's architecture only: its temperature is data (hyper),
    # applied below to raw_logits exactly as MLPPrior.logits applies its own.
    prior = MLPPrior(input_dim, hidden_sizes, activation, num_classes)

    def sample_logits(hyper: Any, key: jax.Array, state: StepState, x: jax.Array) -> jax.Array:
        """A fresh environment from the prior (from key), applied to all n inputs: [n, C]."""
        del state
        return prior.raw_logits(prior.init(key), x) / hyper.temperature

    return _init_step, _count_step, sample_logits


def make_prior_agent(spec: ProblemSpec, config: PriorConfig) -> Agent:
    return core.make_agent(_prior_functions, spec, config, name="prior", num_steps=0)


@dataclasses.dataclass(frozen=True)
class LogisticConfig:
    """Logistic regression: L2 lambda = 1 with the mlp's decayed schedule, 1000 Adam steps."""

    l2: float = core.traced(1.0)  # weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = core.traced(1e-3)
    num_steps: int = 1000

    def __post_init__(self):
        check_common(self)


LogisticState = core.TrainState  # params: flax Dense params, kernel [d, C], bias [C]


# LogisticConfig's traced fields are l2 and learning_rate: the shared record.
LogisticHyper = core.L2Hyper


def l2_weight(spec: ProblemSpec, config: LogisticConfig, num_seen: jax.Array) -> jax.Array:
    """Same schedule as mlp: l2 * d sqrt(beta) / T or l2 * 2 sqrt(beta) / t. [] f32."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen)


@core.cached_functions
def _logistic_functions(*, input_dim: int, num_classes: int, regularization: str):
    """logistic's functions for one static setting (the same objects each time)."""
    # Zero init: the L2-regularised objective is strictly convex, so the start
    # only affects speed, and zeros make the first prediction uniform.
    net = nn.Dense(num_classes, kernel_init=nn.initializers.zeros)

    return core.point_estimate(net, input_dim=input_dim, regularization=regularization)


def make_logistic(spec: ProblemSpec, config: LogisticConfig) -> Agent:
    return core.make_agent(_logistic_functions, spec, config, name="logistic")


ENTRIES = (
    AgentEntry(
        "uniform", UniformConfig, make_uniform, colour="#aec7e8",
        test=TestFacts(deterministic=True, data_independent=True),
    ),
    AgentEntry("prior", PriorConfig, make_prior_agent, colour="#ffbb78", test=TestFacts(data_independent=True)),
    AgentEntry("logistic", LogisticConfig, make_logistic, colour="#98df8a", test=TestFacts(deterministic=True)),
)
