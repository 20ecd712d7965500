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

Traced (agents/core.py): the dropout rate, length scale, learning rate and the
problem's temperature. Static: hidden sizes, number of classes, input dimension
and regularisation mode; num_steps sets only the length of ``fit``'s loop.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_positive
from decision_bench.agents._src.checks import check_common
from decision_bench.agents._src.losses import cross_entropy
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry
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

    dropout_rate: float = core.traced(0.1)  # drop probability of each hidden unit, in [0, 1)
    length_scale: float = core.traced(1.0)  # l; L2 weight = l * d * sqrt(beta) / T in testbed mode
    hidden_sizes: tuple[int, ...] = (100, 100)
    learning_rate: float = core.traced(1e-3)
    num_steps: int = 1000

    def __post_init__(self):
        object.__setattr__(self, "dropout_rate", check_rate("dropout_rate", self.dropout_rate))
        object.__setattr__(self, "length_scale", check_positive("length_scale", self.length_scale))
        check_common(self)


class _Dropout(nn.Module):
    """flax's ``nn.Dropout`` with the rate as a traced call argument (nn.Dropout
    needs a static rate). Same key (``make_rng("dropout")`` in this module's own
    scope, named ``Dropout_i`` as flax names its own), same mask
    ``bernoulli(key, 1 - rate, shape)`` and same scaling by ``1 / (1 - rate)``, so
    the numbers are those of nn.Dropout. Rate 0 keeps every unit (a uniform draw
    is always < 1), as nn.Dropout's shortcut does."""

    broadcast_dims: tuple[int, ...] = ()

    @nn.compact
    def __call__(self, inputs: jax.Array, rate: jax.Array, deterministic: bool) -> jax.Array:
        if deterministic:
            return inputs
        keep_prob = 1.0 - rate
        rng = self.make_rng("dropout")
        shape = list(inputs.shape)
        for dim in self.broadcast_dims:
            shape[dim] = 1
        mask = jnp.broadcast_to(jax.random.bernoulli(rng, p=keep_prob, shape=shape), inputs.shape)
        # x * (1 / keep_prob), not x / keep_prob: XLA compiles nn.Dropout's division
        # by its constant keep_prob into this product, so the numbers stay the same.
        return jax.lax.select(mask, inputs * (1.0 / keep_prob), jnp.zeros_like(inputs))


class DropoutMLP(nn.Module):
    """x [n, d] -> logits [n, C] with dropout (rate: a [] f32, may be traced)
    after each hidden layer.

    share_mask: one mask per call, broadcast over the n inputs (sampling);
    otherwise one mask per input (training). Both share the same params.
    """

    hidden_sizes: tuple[int, ...]
    num_classes: int
    share_mask: bool

    @nn.compact
    def __call__(self, x: jax.Array, rate: jax.Array, deterministic: bool = False) -> jax.Array:
        broadcast = (0,) if self.share_mask else ()
        for i, width in enumerate(self.hidden_sizes):
            x = nn.relu(nn.Dense(width, kernel_init=truncated_normal_init)(x))
            x = _Dropout(broadcast, name=f"Dropout_{i}")(x, rate, deterministic)
        return nn.Dense(self.num_classes, kernel_init=truncated_normal_init)(x)


DropoutState = core.TrainState  # params: flax params of DropoutMLP


class DropoutHyper(NamedTuple):
    """The traced hyperparameters of DropoutConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    dropout_rate: jax.Array
    length_scale: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array


def l2_weight(spec: ProblemSpec, config: DropoutConfig, num_seen: jax.Array) -> jax.Array:
    """l * d * sqrt(beta) / T (testbed) or 2 * sqrt(beta) * l / t (sequential). [] f32."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen, base="length_scale")


@core.cached_functions
def _functions(*, hidden_sizes: tuple[int, ...], num_classes: int, input_dim: int, regularization: str):
    """dropout's functions for one static setting; the same objects for the same
    setting, so every dropout agent of that shape shares its compiled programs."""
    train_net = DropoutMLP(hidden_sizes, num_classes, share_mask=False)
    sample_net = DropoutMLP(hidden_sizes, num_classes, share_mask=True)

    def init(hyper: Any, key: jax.Array) -> core.TrainState:
        dummy = jnp.zeros((1, input_dim), jnp.float32)
        params = train_net.init(key, dummy, hyper.dropout_rate, deterministic=True)
        return core.TrainState(params=params, opt_state=core.init_optimizer(hyper, params))

    def loss(params: Any, hyper: Any, state: core.TrainState, batch: Batch, key: jax.Array) -> jax.Array:
        """The key draws the training masks, one per example."""
        del state
        logits = train_net.apply(params, batch.x, hyper.dropout_rate, rngs={"dropout": key})
        data_loss = cross_entropy(logits, batch.y).mean()
        return data_loss + core.l2_penalty(
            hyper, params, batch.num_seen, input_dim=input_dim, mode=regularization, base="length_scale"
        )

    def sample_logits(hyper: Any, key: jax.Array, state: core.TrainState, x: jax.Array) -> jax.Array:
        """One dropout mask (from key) applied to all n inputs: [n, d] -> [n, C]."""
        return sample_net.apply(state.params, x, hyper.dropout_rate, rngs={"dropout": key})

    return init, core.sgd_update(loss), sample_logits


def make_dropout(spec: ProblemSpec, config: DropoutConfig) -> Agent:
    return core.make_agent(_functions, spec, config, name="dropout")


ENTRIES = (
    AgentEntry(
        "dropout", DropoutConfig, make_dropout, colour="#d62728", core=2,
        paper_grid={  # App. C.3
            "dropout_rate": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
            "length_scale": (1.0, 3.0, 10.0),
        },
    ),
)
