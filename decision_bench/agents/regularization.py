"""Regularisation that decays with the number of observations seen.

One mechanism for both uses: the weight of the L2 (or KL) term is a function of
``num_seen``. When fitting a fixed data set the testbed passes T; the bandit
passes t, the number of observations so far.

- ``"testbed"`` (paper 000, App. C, the "adaptive" scale):
  weight = base * input_dim * sqrt(beta) / (num_members * num_seen)
- ``"sequential"`` (paper 000, App. E.2 as printed):
  weight = base * 2 * sqrt(beta) / (num_members * num_seen)
- ``"sequential_linear_beta"`` (the released reference code,
  neural_testbed/bandit/agents.py, which multiplies by 2 * temperature):
  weight = base * 2 * beta / (num_members * num_seen)

The paper's text and the released code disagree; both are offered. The bandit's
default is chosen by ``decision_bench.bandit.DEFAULT_REGULARIZATION`` (see its
docstring for the evidence). Prior networks are never regularised.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from decision_bench.specs import REGULARIZATION_MODES

__all__ = ["REGULARIZATION_MODES", "decayed_weight", "true_divisor"]


def true_divisor(num_seen: jax.Array) -> jax.Array:
    """max(num_seen, 1) as a [] f32 that XLA cannot constant-fold.

    In ``fit`` num_seen is the constant T, and XLA compiles ``x / constant`` as
    ``x * (1 / constant)``, an ulp away from the true quotient. With the
    hyperparameters traced (agents/core.py) the weight is no longer a constant
    folded with a true division, and Adam grows such an ulp (bbb's KL weight) to
    1e-3 in the parameters over 1000 steps. Hiding the divisor keeps a true
    division, as in the reference. In the bandit num_seen is traced anyway.
    """
    return jax.lax.optimization_barrier(jnp.maximum(jnp.asarray(num_seen, jnp.float32), 1.0))


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
    n = true_divisor(num_seen)
    if mode == "testbed":
        scale = input_dim * jnp.sqrt(temperature)
    elif mode == "sequential":
        scale = 2.0 * jnp.sqrt(temperature)
    else:
        scale = 2.0 * jnp.asarray(temperature, jnp.float32)
    return base * scale / (num_members * n)
