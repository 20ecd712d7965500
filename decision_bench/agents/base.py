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

``num_steps`` is the default number of SGD steps for ``fit`` on a fixed data set;
``update_mode`` says how the bandit feeds ``update`` ("replay" or "online").
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp


class Batch(NamedTuple):
    x: jax.Array  # [B, input_dim] f32
    y: jax.Array  # [B] i32
    num_seen: jax.Array  # [] f32: observations the regulariser is scaled by
    index: jax.Array  # [B] i32: position of each example in its data set or replay
    # buffer (bootstrap weights are looked up by it)


UPDATE_MODES = ("replay", "online")


def _as_pytree_function(fn: Any) -> Any:
    """A callable as a pytree: jax's Partial keeps the function in the tree
    structure (static, compared by identity) and its bound arguments as leaves."""
    if fn is None or isinstance(fn, jax.tree_util.Partial):
        return fn
    if not callable(fn):
        raise ValueError(f"an Agent's functions must be callable, got {type(fn).__name__}")
    return jax.tree_util.Partial(fn)


@dataclasses.dataclass(frozen=True)
class Agent:
    """The record of an agent's pure functions; a pytree.

    Fields: ``init``, ``update``, ``sample_logits``, ``member_logits`` (or None),
    ``num_steps`` (default SGD steps for ``fit``), ``name`` and ``update_mode``
    ("replay": the bandit trains on minibatches drawn from a replay buffer;
    "online": one update per observation with exactly that observation, for
    exact conjugate updates such as ``beta_bernoulli``).

    Each function is held as a ``jax.tree_util.Partial``: the function itself is
    static (part of the tree structure, compared by identity) and the arguments
    bound to it, a family's real-valued hyperparameters, are array leaves. So an
    Agent passes through ``jax.jit`` as an ordinary argument: two agents of one
    family that differ only in hyperparameter values share one compiled program,
    and a stack of agents (leaves with a leading axis) can be vmapped. A plain
    function given here (a user's own agent) is wrapped with no bound arguments.
    """

    init: Callable[[jax.Array, Any], Any]
    update: Callable[[Any, Batch, jax.Array], Any]
    sample_logits: Callable[[Any, jax.Array, jax.Array], jax.Array]
    member_logits: Optional[Callable[[Any, jax.Array], jax.Array]] = None
    num_steps: int = 1000
    name: str = "agent"
    update_mode: str = "replay"

    def __post_init__(self):
        for field in ("init", "update", "sample_logits", "member_logits"):
            object.__setattr__(self, field, _as_pytree_function(getattr(self, field)))
        if self.update_mode not in UPDATE_MODES:
            raise ValueError(f"update_mode must be one of {list(UPDATE_MODES)}, got {self.update_mode!r}")

    def replace(self, **changes: Any) -> "Agent":
        """A copy with some fields changed (functions, num_steps, name, update_mode)."""
        return dataclasses.replace(self, **changes)

    # The record was a NamedTuple before it became a pytree dataclass; keep its copy method.
    _replace = replace


jax.tree_util.register_dataclass(
    Agent,
    data_fields=["init", "update", "sample_logits", "member_logits"],
    meta_fields=["num_steps", "name", "update_mode"],
)


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
