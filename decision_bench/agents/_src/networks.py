"""The two network forms of the agent families, in one place.

- ``MLP``: a flax module (mlp, ensemble, ensemble+; dropout's ``DropoutMLP`` and
  logistic's ``nn.Dense`` are the same form). Its parameters start from flax's
  per-module keys.
- layer tuples ``({"w": [fan_in, fan_out], "b": [fan_out]}, ...)`` from
  ``priors.init_mlp_layers`` (bbb, hypermodel, epinet, sgmcmc, deep_kernel, hmc):
  these families sample, generate or move the parameters themselves.

They are not merged: the two draw their initial weights from different keys, so
moving a family to the other form would change its numbers, and every family's
numbers are pinned (tests/agents/golden).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from decision_bench.priors import mlp_forward, truncated_normal_init


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
                bias_init = truncated_bias_init(x.shape[-1])
            x = nn.relu(nn.Dense(width, kernel_init=truncated_normal_init, bias_init=bias_init)(x))
        return nn.Dense(self.num_classes, kernel_init=truncated_normal_init)(x)


def truncated_bias_init(fan_in: int):
    """A flax bias initialiser: (1/sqrt(fan_in)) * N(0, 1) truncated to [-2, 2]."""

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        return jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype) / fan_in**0.5

    return init


def relu_features(layers: tuple, x: jax.Array) -> jax.Array:
    """The last hidden activation of a ReLU MLP. x [n, d] -> [n, last hidden width]."""
    h = x
    for layer in layers[:-1]:
        h = jax.nn.relu(h @ layer["w"] + layer["b"])
    return h


def relu_mlp(layers: tuple, x: jax.Array) -> jax.Array:
    """x [n, d] -> [n, out] through a ReLU MLP given as a tuple of layers."""
    return mlp_forward(layers, x, "relu")
