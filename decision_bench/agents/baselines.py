"""Baseline agents (paper 000, App. C; paper 001, Sec. 3): uniform, prior, logistic.

- ``uniform``: zero logits, i.e. equal class probabilities; ignores data and keys.
- ``prior``: every draw is a fresh sample of the generative random-MLP prior
  (logits already divided by the temperature, like ``MLPPrior.logits``); it
  ignores data, so it is the "knows the prior, learns nothing" reference.
- ``logistic``: linear softmax regression, cross-entropy plus L2 with the same
  decayed schedule as mlp; a point estimate, so samples are deterministic.

Each is defined once per static setting (``functools.lru_cache``d builders) and
its real-valued hyperparameters are bound as [] f32 leaves (agents/core.py):
uniform has none (static: num_classes); prior has the temperature (static:
input_dim, hidden_sizes, activation, num_classes); logistic has l2,
learning_rate and the temperature (static: input_dim, num_classes,
spec.regularization, num_steps).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.core import adam, as_hyper, bind, hyper_l2_weight, sgd_step
from decision_bench.agents.mlp import check_common, cross_entropy, sum_of_squares
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


    def __post_init__(self):
        check_common(self)


class UniformHyper(NamedTuple):
    """uniform has no real-valued hyperparameters."""


@functools.lru_cache(maxsize=None)
def _uniform_functions(num_classes: int):
    """uniform's functions for one number of classes (the same objects each time)."""

    def sample_logits(hyper: UniformHyper, key: jax.Array, state: StepState, x: jax.Array) -> jax.Array:
        """[n, d] -> zeros [n, C]."""
        del hyper, state, key
        return jnp.zeros((x.shape[0], num_classes), jnp.float32)

    def member_logits(hyper: UniformHyper, state: StepState, x: jax.Array) -> jax.Array:
        return sample_logits(hyper, None, state, x)[None]

    return _init_step, _count_step, sample_logits, member_logits


def make_uniform(spec: ProblemSpec, config: UniformConfig) -> Agent:
    del config
    functions = _uniform_functions(spec.num_classes)
    return bind(UniformHyper(), *functions, num_steps=0, name="uniform")


@dataclasses.dataclass(frozen=True)
class PriorConfig:
    """The generative MLP prior's architecture (testbed defaults); data is ignored."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    activation: str = "relu"

    def __post_init__(self):
        check_common(self)
        check_choice("activation", self.activation, ACTIVATIONS)


class PriorHyper(NamedTuple):
    """The prior agent's real-valued hyperparameter, a [] f32 leaf."""

    temperature: jax.Array  # the problem's beta: raw prior logits are divided by it


@functools.lru_cache(maxsize=None)
def _prior_functions(
    input_dim: int, hidden_sizes: tuple[int, ...], activation: str, num_classes: int
):
    """The prior agent's functions for one architecture (the same objects each time)."""
    # The generative model's architecture only: its temperature is data (hyper),
    # applied below to raw_logits exactly as MLPPrior.logits applies its own.
    prior = MLPPrior(input_dim, hidden_sizes, activation, num_classes)

    def sample_logits(hyper: PriorHyper, key: jax.Array, state: StepState, x: jax.Array) -> jax.Array:
        """A fresh environment from the prior (from key), applied to all n inputs: [n, C]."""
        del state
        return prior.raw_logits(prior.init(key), x) / hyper.temperature

    return _init_step, _count_step, sample_logits


def make_prior_agent(spec: ProblemSpec, config: PriorConfig) -> Agent:
    functions = _prior_functions(
        spec.input_dim, tuple(config.hidden_sizes), config.activation, spec.num_classes
    )
    hyper = as_hyper(PriorHyper, temperature=spec.temperature)
    return bind(hyper, *functions, num_steps=0, name="prior")


@dataclasses.dataclass(frozen=True)
class LogisticConfig:
    """Logistic regression: L2 lambda = 1 with the mlp's decayed schedule, 1000 Adam steps."""

    l2: float = 1.0  # weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = 1e-3
    num_steps: int = 1000

    def __post_init__(self):
        check_common(self)


class LogisticState(NamedTuple):
    params: Any  # flax Dense params: kernel [d, C], bias [C]
    opt_state: Any


class LogisticHyper(NamedTuple):
    """logistic's real-valued hyperparameters, [] f32 leaves (see agents/core.py)."""

    l2: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array  # the problem's beta, which scales the decayed L2 weight


def _logistic_hyper(spec: ProblemSpec, config: LogisticConfig) -> LogisticHyper:
    return as_hyper(
        LogisticHyper, l2=config.l2, learning_rate=config.learning_rate, temperature=spec.temperature
    )


def l2_weight(spec: ProblemSpec, config: LogisticConfig, num_seen: jax.Array) -> jax.Array:
    """Same schedule as mlp: l2 * d sqrt(beta) / T or l2 * 2 sqrt(beta) / t. [] f32."""
    return hyper_l2_weight(
        _logistic_hyper(spec, config),
        num_seen,
        input_dim=spec.input_dim,
        mode=spec.regularization,
    )




@functools.lru_cache(maxsize=None)
def _logistic_functions(input_dim: int, num_classes: int, regularization: str):
    """logistic's functions for one static setting (the same objects each time)."""
    # Zero init: the L2-regularised objective is strictly convex, so the start
    # only affects speed, and zeros make the first prediction uniform.
    net = nn.Dense(num_classes, kernel_init=nn.initializers.zeros)

    def init(hyper: LogisticHyper, key: jax.Array) -> LogisticState:
        params = net.init(key, jnp.zeros((1, input_dim), jnp.float32))
        return LogisticState(params=params, opt_state=adam(hyper.learning_rate).init(params))

    def loss_fn(params: Any, hyper: LogisticHyper, batch: Batch) -> jax.Array:
        data_loss = cross_entropy(net.apply(params, batch.x), batch.y).mean()
        weight = hyper_l2_weight(hyper, batch.num_seen, input_dim=input_dim, mode=regularization)
        return data_loss + weight * sum_of_squares(params)

    def update(hyper: LogisticHyper, key: jax.Array, state: LogisticState, batch: Batch) -> LogisticState:
        del key
        params, opt_state = sgd_step(
            loss_fn, state.params, state.opt_state, hyper.learning_rate, hyper, batch
        )
        return LogisticState(params=params, opt_state=opt_state)

    def sample_logits(hyper: LogisticHyper, key: jax.Array, state: LogisticState, x: jax.Array) -> jax.Array:
        """[n, d] -> [n, C]; deterministic (key unused)."""
        del hyper, key
        return net.apply(state.params, x)

    def member_logits(hyper: LogisticHyper, state: LogisticState, x: jax.Array) -> jax.Array:
        del hyper
        return net.apply(state.params, x)[None]

    return init, update, sample_logits, member_logits


def make_logistic(spec: ProblemSpec, config: LogisticConfig) -> Agent:
    functions = _logistic_functions(spec.input_dim, spec.num_classes, spec.regularization)
    return bind(
        _logistic_hyper(spec, config), *functions, num_steps=config.num_steps, name="logistic"
    )
