"""The agent contract: a small record of pure functions (in the spirit of optax).

An agent is built from a name, a ProblemSpec and a config (``agents.make``):

- ``init(key, spec) -> state``: params, optimiser state and anything fixed
  (prior networks, bootstrap weights). State is a NamedTuple of arrays.
- ``update(state, batch, key) -> state``: one gradient step on a minibatch. The
  batch carries ``num_seen``, the number of observations the regulariser is
  scaled by (T when fitting a fixed data set, t in the bandit).
- ``sample_logits(state, key, x) -> [n, num_classes]``: ONE draw of the
  epistemic index applied to all n inputs, so predictions are joint.
- ``member_logits(state, x) -> [num_members, n, num_classes]`` or None: all
  members of a finite index set at once (ensembles, SGLD's kept models), so
  evaluation can enumerate them exactly with equal weights.

``num_steps`` is the default number of SGD steps for ``fit`` on a fixed data set.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp


class Batch(NamedTuple):
    x: jax.Array  # [B, input_dim] f32
    y: jax.Array  # [B] i32
    num_seen: jax.Array  # [] f32: observations the regulariser is scaled by
    index: jax.Array  # [B] i32: position of each example in its data set or replay
    # buffer (bootstrap weights are looked up by it)


class Agent(NamedTuple):
    init: Callable[[jax.Array, Any], Any]
    update: Callable[[Any, Batch, jax.Array], Any]
    sample_logits: Callable[[Any, jax.Array, jax.Array], jax.Array]
    member_logits: Optional[Callable[[Any, jax.Array], jax.Array]] = None
    num_steps: int = 1000
    name: str = "agent"


def params_are_finite(state: Any) -> jax.Array:
    """True when every floating leaf of the state is finite. Returns a [] bool."""
    leaves = [
        jnp.all(jnp.isfinite(leaf))
        for leaf in jax.tree.leaves(state)
        if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating)
    ]
    if not leaves:
        return jnp.array(True)
    return jnp.all(jnp.stack(leaves))
