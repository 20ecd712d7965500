"""The facts every bandit of this package reports in ``info``: at each step, and at reset."""

from __future__ import annotations

import jax
import jax.numpy as jnp

# The keys of ``optimum``: what a Gymnasium reset reports about the action set it shows.
OPTIMUM_KEYS = ("optimal_action", "optimal_expected_reward")


def optimum(expected: jax.Array) -> dict[str, jax.Array]:
    """optimal_action and optimal_expected_reward of an action set whose actions have
    expected rewards expected [A]."""
    return {
        "optimal_action": jnp.argmax(expected).astype(jnp.int32),
        "optimal_expected_reward": jnp.max(expected),
    }


def step_info(expected: jax.Array, action: jax.Array) -> dict[str, jax.Array]:
    """expected_reward, optimal_expected_reward, regret and optimal_action, from the
    actions' expected rewards expected [A] (P(reward = 1) for Bernoulli rewards, the
    arms' means at this context for Gaussian ones)."""
    chosen = expected[action]
    best = optimum(expected)
    return {
        "expected_reward": chosen,
        "optimal_expected_reward": best["optimal_expected_reward"],
        # XLA may fuse the two reads of expected differently; clamp the rounding.
        "regret": jnp.maximum(best["optimal_expected_reward"] - chosen, 0.0),
        "optimal_action": best["optimal_action"],
    }
