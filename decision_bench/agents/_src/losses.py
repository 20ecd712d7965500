"""The loss pieces the agent families compose.

Two cross-entropies are kept because they compile to different arithmetic and
each family's results are pinned bit for bit (tests/agents/golden):
``cross_entropy`` is optax's (max-shifted logsumexp minus the label logit), used
by the families that follow the reference's flax/haiku agents; ``mean_cross_entropy``
is -log_softmax at the label, used by the families on layer tuples.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax


def cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example cross-entropy. logits [..., B, C], y [B] i32 -> [..., B]."""
    labels = jnp.broadcast_to(y, logits.shape[:-1])  # optax wants matching batch dims
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels)


def mean_cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Mean over the batch of -log softmax(logits)[y]. logits [B, C], y [B] -> []."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_p, y[:, None].astype(jnp.int32), axis=-1).mean()


def sum_of_squares(tree: Any) -> jax.Array:
    """sum(theta**2) over every leaf of a pytree, leaf sums added in leaf order. Returns []."""
    return optax.tree.norm(tree, squared=True)
