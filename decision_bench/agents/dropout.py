"""MC dropout (Gal & Ghahramani 2016; paper 000, App. C.3).

An MLP with dropout after every hidden layer (not on the input), trained by
cross-entropy plus L2. One sample of the posterior is one dropout mask: in
``sample_logits`` the mask is drawn once and shared by all n inputs (flax's
``broadcast_dims=(0,)``), so identical inputs in one call get identical logits
and the draw is joint across inputs. Training uses independent masks per
example, as ordinary dropout training does.

L2 weight (``regularization.decayed_weight`` with base = length scale l):
testbed ``l * d * sqrt(beta) / T`` (the reference's adaptive scale, its default;
the unscaled Gal & Ghahramani form is ``l**2 (1 - p) / (2 T)``), sequential
``2 * sqrt(beta) * l / t``. The penalty is ``weight * sum(theta**2)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from decision_bench._validation import check_positive
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.mlp import check_common, check_same_spec, cross_entropy, sum_of_squares
from decision_bench.agents.regularization import decayed_weight
from decision_bench.priors import truncated_normal_init
from decision_bench.specs import ProblemSpec


def check_rate(name: str, value: Any) -> float:
    """A probability in [0, 1): 1 would drop every unit."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}") from None
    if not math.isfinite(rate) or not 0.0 <= rate < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return rate


@dataclasses.dataclass(frozen=True)
class DropoutConfig:
    """dropout defaults (paper 000, App. C.3): rate 0.1, length scale 1, hidden (100, 100)."""

    dropout_rate: float = 0.1  # drop probability of each hidden unit, in [0, 1)
    length_scale: float = 1.0  # l; L2 weight = l * d * sqrt(beta) / T in testbed mode
    hidden_sizes: tuple[int, ...] = (100, 100)
    learning_rate: float = 1e-3
    num_steps: int = 1000
    regularization: str = "testbed"  # "testbed" | "sequential" | "sequential_linear_beta"

    def __post_init__(self):
        object.__setattr__(self, "dropout_rate", check_rate("dropout_rate", self.dropout_rate))
        object.__setattr__(self, "length_scale", check_positive("length_scale", self.length_scale))
        check_common(self)


class DropoutMLP(nn.Module):
    """x [n, d] -> logits [n, C] with dropout after each hidden layer.

    share_mask: one mask per call, broadcast over the n inputs (sampling);
    otherwise one mask per input (training). Both share the same params.
    """

    hidden_sizes: tuple[int, ...]
    num_classes: int
    rate: float
    share_mask: bool

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = False) -> jax.Array:
        broadcast = (0,) if self.share_mask else ()
        for width in self.hidden_sizes:
            x = nn.relu(nn.Dense(width, kernel_init=truncated_normal_init)(x))
            x = nn.Dropout(self.rate, broadcast_dims=broadcast)(x, deterministic=deterministic)
        return nn.Dense(self.num_classes, kernel_init=truncated_normal_init)(x)


class DropoutState(NamedTuple):
    params: Any  # flax params of DropoutMLP
    opt_state: Any


def l2_weight(spec: ProblemSpec, config: DropoutConfig, num_seen: jax.Array) -> jax.Array:
    """l * d * sqrt(beta) / T (testbed) or 2 * sqrt(beta) * l / t (sequential). [] f32."""
    return decayed_weight(
        config.length_scale,
        num_seen,
        input_dim=spec.input_dim,
        temperature=spec.temperature,
        mode=config.regularization,
    )


def make_dropout(spec: ProblemSpec, config: DropoutConfig) -> Agent:
    sizes = tuple(config.hidden_sizes)
    train_net = DropoutMLP(sizes, spec.num_classes, config.dropout_rate, share_mask=False)
    sample_net = DropoutMLP(sizes, spec.num_classes, config.dropout_rate, share_mask=True)
    optimizer = optax.adam(config.learning_rate)

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> DropoutState:
        check_same_spec(spec_, spec)
        dummy = jnp.zeros((1, spec.input_dim), jnp.float32)
        params = train_net.init(key, dummy, deterministic=True)
        return DropoutState(params=params, opt_state=optimizer.init(params))

    def loss_fn(params: Any, batch: Batch, key: jax.Array) -> jax.Array:
        logits = train_net.apply(params, batch.x, rngs={"dropout": key})
        data_loss = cross_entropy(logits, batch.y).mean()
        return data_loss + l2_weight(spec, config, batch.num_seen) * sum_of_squares(params)

    def update(state: DropoutState, batch: Batch, key: jax.Array) -> DropoutState:
        grads = jax.grad(loss_fn)(state.params, batch, key)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return DropoutState(params=optax.apply_updates(state.params, updates), opt_state=opt_state)

    def sample_logits(state: DropoutState, key: jax.Array, x: jax.Array) -> jax.Array:
        """One dropout mask (from key) applied to all n inputs: [n, d] -> [n, C]."""
        return sample_net.apply(state.params, x, rngs={"dropout": key})

    return Agent(
        init=init,
        update=update,
        sample_logits=sample_logits,
        num_steps=config.num_steps,
        name="dropout",
    )
