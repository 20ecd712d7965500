"""The agent contract: a small record of pure functions (in the spirit of optax).

An agent is built from a name, a ProblemSpec and a config (``agents.make``):

- ``init(key) -> state``: params, optimiser state and anything fixed
  (prior networks, bootstrap weights). State is a NamedTuple of arrays. The
  shapes come from the spec the agent was built with.
- ``update(key, state, batch) -> state``: one gradient step on a minibatch. The
  batch carries ``num_seen``, the number of observations the regulariser is
  scaled by (T when fitting a fixed data set, t in the bandit).
- ``sample_logits(key, state, x) -> [n, num_classes]``: ONE draw of the
  epistemic index applied to all n inputs, so predictions are joint.
- ``member_logits(state, x) -> [num_members, n, num_classes]`` or None: all
  members of a finite index set at once (ensembles, SGLD's kept models), so
  evaluation can enumerate them exactly with equal weights.
- ``fit_data(key, state, data, num_train) -> state`` or None: the part of fitting
  a fixed data set that needs all of it at once (a full-batch sampler, a forest,
  stored neighbours). ``data`` is a ``Dataset`` (x [rows, d] f32, y [rows] i32)
  whose first ``num_train`` ([] i32, may be traced) rows are the training set and
  the rest padding. ``fit`` calls it once, after its ``num_steps`` updates.
- ``diagnose(state) -> [] bool`` or None: whether the fitted state can be trusted
  (an MCMC run's convergence checks); jittable, vmap it over stacked states.

The PRNG key always comes first, as in gymnax and this project's env API, so
every random function in the project reads ``f(key, ...)`` (before 0.2 the order
was ``init(key, spec)``, ``update(state, batch, key)``, ``sample_logits(state,
key, x)``; ``Agent`` refuses a user's function that clearly follows it, with
``_src.deprecations.refuse_pre_0_2_order``).

``num_steps`` is the default number of SGD steps for ``fit`` on a fixed data set;
``update_mode`` says how the bandit feeds ``update`` ("replay" or "online").
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from decision_bench._src import deprecations


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


# The key-first order of each function, named in the error for an old-order one.
_NEW_ORDER = {"init": "(key)", "update": "(key, state, batch)", "sample_logits": "(key, state, x)"}


def _is_key(value: Any) -> bool:
    """A PRNG key: a typed key array (``jax.random.key``) or a raw uint32 one
    (``jax.random.PRNGKey``: [..., 2], or [..., 4] for the rbg implementations)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return True
    return dtype == jnp.uint32 and tuple(getattr(value, "shape", ()))[-1:] in ((2,), (4,))


def check_key_argument(field: str, value: Any) -> None:
    """Raises ValueError when the first argument of ``init`` / ``update`` /
    ``sample_logits`` is not a PRNG key: most often a state passed in the pre-0.2
    order (``sample_logits(state, key, x)``), which otherwise fails deep inside
    the family's code (an AttributeError on a key). Checked while tracing, so a
    compiled call costs nothing."""
    # None is no state: an agent that draws nothing (knn, random_forest) may be called without a key.
    if value is None or _is_key(value):
        return
    what = type(value).__name__
    shape = getattr(value, "shape", None)
    if shape is not None:
        what += f" of shape {tuple(shape)} and dtype {value.dtype}"
    raise ValueError(
        f"Agent.{field} takes {_NEW_ORDER[field]} since decision_bench 0.2 (key first); its first "
        f"argument is a {what}, not a PRNG key (jax.random.key); was a state passed first?"
    )


# The Agent fields that hold functions (pytree data; the other fields are static).
_FUNCTIONS = ("init", "update", "sample_logits", "member_logits", "fit_data", "diagnose")


@dataclasses.dataclass(frozen=True)
class Agent:
    """The record of an agent's pure functions; a pytree.

    Fields: ``init``, ``update``, ``sample_logits``, ``member_logits`` (or None),
    ``num_steps`` (default SGD steps for ``fit``), ``name``, ``update_mode``
    ("replay": the bandit trains on minibatches drawn from a replay buffer;
    "online": one update per observation with exactly that observation, for
    exact conjugate updates such as ``beta_bernoulli``), and the optional
    ``fit_data`` (full-batch fitting, see the module docstring) and ``diagnose``
    (``(state) -> [] bool``, True when the fit can be trusted).

    The functions take the PRNG key first: ``init(key)``, ``update(key, state,
    batch)``, ``sample_logits(key, state, x)`` (``member_logits(state, x)`` has no
    key), as in gymnax and this project's env API, so every random function in the
    project reads ``f(key, ...)``. A user's plain function that clearly follows the
    pre-0.2 order (``init(key, spec)``, or ``update`` / ``sample_logits`` whose first
    parameter is ``state`` or ``params``) is refused with a ValueError rather than
    run with its arguments swapped.

    Each function is held as a ``jax.tree_util.Partial``: the function itself is
    static (part of the tree structure, compared by identity) and the arguments
    bound to it, a family's real-valued hyperparameters, are array leaves. So an
    Agent passes through ``jax.jit`` as an ordinary argument: two agents of one
    family that differ only in hyperparameter values share one compiled program,
    and a stack of agents (leaves with a leading axis) can be vmapped. A plain
    function given here (a user's own agent) is wrapped with no bound arguments.
    """

    init: Callable[[jax.Array], Any]
    update: Callable[[jax.Array, Any, Batch], Any]
    sample_logits: Callable[[jax.Array, Any, jax.Array], jax.Array]
    member_logits: Optional[Callable[[Any, jax.Array], jax.Array]] = None
    num_steps: int = 1000
    name: str = "agent"
    update_mode: str = "replay"
    fit_data: Optional[Callable[[jax.Array, Any, Any, jax.Array], Any]] = None
    diagnose: Optional[Callable[[Any], jax.Array]] = None

    def __post_init__(self):
        for field in _FUNCTIONS:
            fn = getattr(self, field)
            # Functions already wrapped in a Partial (the built-in families) are not checked.
            if field in _NEW_ORDER and fn is not None and not isinstance(fn, jax.tree_util.Partial):
                deprecations.refuse_pre_0_2_order(field, fn, _NEW_ORDER[field])
            object.__setattr__(self, field, _as_pytree_function(getattr(self, field)))
        if self.update_mode not in UPDATE_MODES:
            raise ValueError(f"update_mode must be one of {list(UPDATE_MODES)}, got {self.update_mode!r}")

    def replace(self, **changes: Any) -> "Agent":
        """A copy with some fields changed (functions, num_steps, name, update_mode)."""
        return dataclasses.replace(self, **changes)

    # The record was a NamedTuple before it became a pytree dataclass: its copy method, until 0.4.
    _replace = deprecations.method_alias("Agent", "_replace", "replace")


jax.tree_util.register_dataclass(
    Agent,
    data_fields=list(_FUNCTIONS),
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
