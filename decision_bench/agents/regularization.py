"""Regularisation that decays with the number of observations seen.

One mechanism for both uses: the weight of the L2 (or KL) term is a function of
``num_seen``. When fitting a fixed data set the testbed passes T; the bandit
passes t, the number of observations so far.

- ``"testbed"`` (paper 000, App. C, the "adaptive" scale):
  weight = base * input_dim * sqrt(beta) / (num_members * num_seen)
- ``"sequential"`` (paper 000, App. E.2):
  weight = base * 2 * sqrt(beta) / (num_members * num_seen)

The released reference code uses 2 * beta where the paper writes
2 * sqrt(beta); we follow the paper. Prior networks are never regularised.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

REGULARIZATION_MODES = ("testbed", "sequential")


def decayed_weight(
    base: float,
    num_seen: jax.Array,
    *,
    input_dim: int,
    temperature: float,
    mode: str = "testbed",
    num_members: int = 1,
) -> jax.Array:
    """The regulariser weight after num_seen observations. Returns a [] f32.

    num_seen below 1 is treated as 1, so a weight is finite before any data.
    """
    if mode not in REGULARIZATION_MODES:
        raise ValueError(f"mode must be one of {list(REGULARIZATION_MODES)}, got {mode!r}")
    numerator = input_dim if mode == "testbed" else 2.0
    n = jnp.maximum(jnp.asarray(num_seen, jnp.float32), 1.0)
    return base * numerator * jnp.sqrt(temperature) / (num_members * n)
