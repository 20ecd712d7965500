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
import functools
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from decision_bench._src.validation import (
    check_int,
    check_nonnegative,
    check_positive,
    check_sizes,
)
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.core import adam, as_hyper, bind, hyper_l2_weight, sgd_step
from decision_bench.priors import truncated_normal_init
from decision_bench.specs import ProblemSpec


class MLP(nn.Module):
    """ReLU MLP: x [n, d] -> logits [n, num_classes].

    Weights start as the reference agents' do (haiku's hk.Linear default:
    (1/sqrt(fan_in)) * truncated normal in [-2, 2], uncorrected, so std
    0.8796/sqrt(fan_in); ``priors.truncated_normal_init``), biases at zero. flax's
    own default (lecun_normal) corrects the variance and starts 14% wider.
    nonzero_first_bias: the first layer's bias starts as (1/sqrt(d)) * N(0, 1)
    truncated to [-2, 2], as enn's ensemble MLPs with ``nonzero_bias=True`` (the
    reference's ensemble+); the reference's mlp and ensemble use zero biases.
    """

    hidden_sizes: tuple[int, ...]
    num_classes: int
    nonzero_first_bias: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.hidden_sizes):
            bias_init = nn.initializers.zeros
            if i == 0 and self.nonzero_first_bias:
                bias_init = _truncated_bias_init(x.shape[-1])
            x = nn.relu(nn.Dense(width, kernel_init=truncated_normal_init, bias_init=bias_init)(x))
        return nn.Dense(self.num_classes, kernel_init=truncated_normal_init)(x)


def _truncated_bias_init(fan_in: int):
    """A flax bias initialiser: (1/sqrt(fan_in)) * N(0, 1) truncated to [-2, 2]."""

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        return jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype) / fan_in**0.5

    return init


def sum_of_squares(tree: Any) -> jax.Array:
    """sum(theta**2) over every leaf of a pytree. Returns a [] f32."""
    return optax.tree.norm(tree, squared=True)


def cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example cross-entropy. logits [..., B, C], y [B] i32 -> [..., B]."""
    labels = jnp.broadcast_to(y, logits.shape[:-1])  # optax wants matching batch dims
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels)


def check_common(config: Any) -> None:
    """Validates (and normalises) the fields most configs share, where present."""
    checks = {
        "learning_rate": lambda v: check_positive("learning_rate", v),
        "num_steps": lambda v: check_int("num_steps", v, 0),
        "l2": lambda v: check_nonnegative("l2", v),
        "hidden_sizes": lambda v: check_sizes("hidden_sizes", v),
    }
    for field in dataclasses.fields(config):
        if field.name in checks:
            value = checks[field.name](getattr(config, field.name))
            object.__setattr__(config, field.name, value)


@dataclasses.dataclass(frozen=True)
class MLPConfig:
    """mlp defaults (paper 000, App. C.1): l2 = 1 with the adaptive scale, 1000 Adam steps."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    l2: float = 1.0  # lambda; weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = 1e-3
    num_steps: int = 1000  # default SGD steps for fit

    def __post_init__(self):
        check_common(self)


class MLPState(NamedTuple):
    params: Any  # flax params of MLP
    opt_state: Any  # optax.adam state


class MLPHyper(NamedTuple):
    """The mlp's real-valued hyperparameters, [] f32 leaves (see agents/core.py)."""

    l2: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array  # the problem's beta, which scales the decayed L2 weight


def l2_weight(spec: ProblemSpec, config: MLPConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight after num_seen observations for a spec and config. Returns a [] f32."""
    hyper = as_hyper(MLPHyper, l2=config.l2, learning_rate=config.learning_rate, temperature=spec.temperature)
    return hyper_l2_weight(hyper, num_seen, input_dim=spec.input_dim, mode=spec.regularization)




@functools.lru_cache(maxsize=None)
def _functions(hidden_sizes: tuple[int, ...], num_classes: int, input_dim: int, regularization: str):
    """The mlp's functions for one static setting; the same objects for the same
    setting, so every mlp of that shape shares its compiled programs."""
    net = MLP(hidden_sizes, num_classes)

    def init(hyper: MLPHyper, key: jax.Array) -> MLPState:
        params = net.init(key, jnp.zeros((1, input_dim), jnp.float32))
        return MLPState(params=params, opt_state=adam(hyper.learning_rate).init(params))

    def loss_fn(params: Any, hyper: MLPHyper, batch: Batch) -> jax.Array:
        data_loss = cross_entropy(net.apply(params, batch.x), batch.y).mean()
        weight = hyper_l2_weight(hyper, batch.num_seen, input_dim=input_dim, mode=regularization)
        return data_loss + weight * sum_of_squares(params)

    def update(hyper: MLPHyper, key: jax.Array, state: MLPState, batch: Batch) -> MLPState:
        del key  # deterministic gradient step
        params, opt_state = sgd_step(
            loss_fn, state.params, state.opt_state, hyper.learning_rate, hyper, batch
        )
        return MLPState(params=params, opt_state=opt_state)

    def sample_logits(hyper: MLPHyper, key: jax.Array, state: MLPState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]; the key is unused: a point estimate has one sample."""
        del hyper, key
        return net.apply(state.params, x)

    def member_logits(hyper: MLPHyper, state: MLPState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [1, n, C]: a point estimate is an ensemble of one."""
        del hyper
        return net.apply(state.params, x)[None]

    return init, update, sample_logits, member_logits


def make_mlp(spec: ProblemSpec, config: MLPConfig) -> Agent:
    functions = _functions(
        tuple(config.hidden_sizes), spec.num_classes, spec.input_dim, spec.regularization
    )
    hyper = as_hyper(
        MLPHyper, l2=config.l2, learning_rate=config.learning_rate, temperature=spec.temperature
    )
    return bind(hyper, *functions, num_steps=config.num_steps, name="mlp")
