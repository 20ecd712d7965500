"""The per-step facts every bandit of this package reports in ``info``."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def step_info(expected: jax.Array, action: jax.Array) -> dict[str, jax.Array]:
    """expected_reward, optimal_expected_reward, regret and optimal_action, from the
    actions' expected rewards expected [A] (P(reward = 1) for Bernoulli rewards, the
    arms' means at this context for Gaussian ones)."""
    chosen = expected[action]
    best = jnp.max(expected)
    return {
        "expected_reward": chosen,
        "optimal_expected_reward": best,
        # XLA may fuse the two reads of expected differently; clamp the rounding.
        "regret": jnp.maximum(best - chosen, 0.0),
        "optimal_action": jnp.argmax(expected).astype(jnp.int32),
    }
