"""Baseline agents (paper 000, App. C; paper 001, Sec. 3): uniform, prior, logistic.

- ``uniform``: zero logits, i.e. equal class probabilities; ignores data and keys.
- ``prior``: every draw is a fresh sample of the generative random-MLP prior
  (logits already divided by the temperature, like ``MLPPrior.logits``); it
  ignores data, so it is the "knows the prior, learns nothing" reference.
- ``logistic``: linear softmax regression, cross-entropy plus L2 with the same
  decayed schedule as mlp; a point estimate, so samples are deterministic.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from decision_bench._validation import check_choice
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.mlp import check_common, check_same_spec, cross_entropy, sum_of_squares
from decision_bench.agents.regularization import decayed_weight
from decision_bench.priors import ACTIVATIONS, MLPPrior
from decision_bench.specs import ProblemSpec


class StepState(NamedTuple):
    """State of agents that learn nothing: only a step counter, so fit has a carry."""

    step: jax.Array  # [] i32


def _count_step(state: StepState, batch: Batch, key: jax.Array) -> StepState:
    del batch, key  # data-independent agents
    return StepState(step=state.step + 1)


@dataclasses.dataclass(frozen=True)
class UniformConfig:
    """No hyperparameters; `regularization` is accepted for a uniform interface (unused)."""

    regularization: str = "testbed"

    def __post_init__(self):
        check_common(self)


def make_uniform(spec: ProblemSpec, config: UniformConfig) -> Agent:
    del config

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> StepState:
        del key
        check_same_spec(spec_, spec)
        return StepState(step=jnp.zeros((), jnp.int32))

    def sample_logits(state: StepState, key: jax.Array, x: jax.Array) -> jax.Array:
        """[n, d] -> zeros [n, C]."""
        del state, key
        return jnp.zeros((x.shape[0], spec.num_classes), jnp.float32)

    def member_logits(state: StepState, x: jax.Array) -> jax.Array:
        return sample_logits(state, None, x)[None]

    return Agent(init, _count_step, sample_logits, member_logits, num_steps=0, name="uniform")


@dataclasses.dataclass(frozen=True)
class PriorConfig:
    """The generative MLP prior's architecture (testbed defaults); data is ignored."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    activation: str = "relu"
    regularization: str = "testbed"  # unused: nothing is fitted

    def __post_init__(self):
        check_common(self)
        check_choice("activation", self.activation, ACTIVATIONS)


def make_prior_agent(spec: ProblemSpec, config: PriorConfig) -> Agent:
    prior = MLPPrior(
        spec.input_dim,
        tuple(config.hidden_sizes),
        config.activation,
        spec.num_classes,
        spec.temperature,
    )

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> StepState:
        del key
        check_same_spec(spec_, spec)
        return StepState(step=jnp.zeros((), jnp.int32))

    def sample_logits(state: StepState, key: jax.Array, x: jax.Array) -> jax.Array:
        """A fresh environment from the prior (from key), applied to all n inputs: [n, C]."""
        del state
        return prior.logits(prior.init(key), x)

    return Agent(init, _count_step, sample_logits, num_steps=0, name="prior")


@dataclasses.dataclass(frozen=True)
class LogisticConfig:
    """Logistic regression: L2 lambda = 1 with the mlp's decayed schedule, 1000 Adam steps."""

    l2: float = 1.0  # weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = 1e-3
    num_steps: int = 1000
    regularization: str = "testbed"

    def __post_init__(self):
        check_common(self)


class LogisticState(NamedTuple):
    params: Any  # flax Dense params: kernel [d, C], bias [C]
    opt_state: Any


def l2_weight(spec: ProblemSpec, config: LogisticConfig, num_seen: jax.Array) -> jax.Array:
    """Same schedule as mlp: l2 * d sqrt(beta) / T or l2 * 2 sqrt(beta) / t. [] f32."""
    return decayed_weight(
        config.l2,
        num_seen,
        input_dim=spec.input_dim,
        temperature=spec.temperature,
        mode=config.regularization,
    )


def make_logistic(spec: ProblemSpec, config: LogisticConfig) -> Agent:
    # Zero init: the L2-regularised objective is strictly convex, so the start
    # only affects speed, and zeros make the first prediction uniform.
    net = nn.Dense(spec.num_classes, kernel_init=nn.initializers.zeros)
    optimizer = optax.adam(config.learning_rate)

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> LogisticState:
        check_same_spec(spec_, spec)
        params = net.init(key, jnp.zeros((1, spec.input_dim), jnp.float32))
        return LogisticState(params=params, opt_state=optimizer.init(params))

    def loss_fn(params: Any, batch: Batch) -> jax.Array:
        data_loss = cross_entropy(net.apply(params, batch.x), batch.y).mean()
        return data_loss + l2_weight(spec, config, batch.num_seen) * sum_of_squares(params)

    def update(state: LogisticState, batch: Batch, key: jax.Array) -> LogisticState:
        del key
        grads = jax.grad(loss_fn)(state.params, batch)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return LogisticState(params=optax.apply_updates(state.params, updates), opt_state=opt_state)

    def sample_logits(state: LogisticState, key: jax.Array, x: jax.Array) -> jax.Array:
        """[n, d] -> [n, C]; deterministic (key unused)."""
        del key
        return net.apply(state.params, x)

    def member_logits(state: LogisticState, x: jax.Array) -> jax.Array:
        return net.apply(state.params, x)[None]

    return Agent(
        init, update, sample_logits, member_logits, num_steps=config.num_steps, name="logistic"
    )
