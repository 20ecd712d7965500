"""The index-agent core shared by hypermodel and epinet.

Both are epistemic neural networks logits(x, z) with a Gaussian epistemic index
z ~ N(0, I_D) (D = ``index_dim``), a trained part ``params`` and a fixed random
prior that is never trained or decayed. What they share, and this module holds:

- the index distribution: ``sample_index`` / ``sample_indices``;
- the training loss: the batch's mean cross-entropy averaged over
  ``num_index_samples`` draws of z, plus ``weight(num_seen) * |params|^2``;
- ``update``: one ``core.sgd_step`` on that loss (Adam with the
  ``learning_rate`` leaf), the fixed parts of the state carried unchanged;
- ``sample_logits``: ONE z per call, applied to all n inputs (joint predictions);
  there is no finite member set, so ``member_logits`` is None.

What a family supplies (``index_functions``'s arguments), all taking ``hyper``
(the family's NamedTuple of [] f32 leaves, with a ``learning_rate`` field):

- ``context(state, x)``: the z-independent, untrained inputs of the logits (the
  fixed prior, or its outputs on x), computed once per batch for all z draws;
- ``logits(hyper, params, context, z, x)``: z [D], x [n, d] -> [n, C];
- ``l2_weight(hyper, num_seen, input_dim=, mode=)``: the decay weight, [] f32
  (``core.penalty_weight`` or a family's own schedule).

The family keeps its own ``init`` and state NamedTuple (fields ``params``,
``opt_state`` and its fixed prior), its parameterisation, prior and L2 schedule;
the core (agents/core.py) checks shapes and binds the hyper.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from decision_bench.agents._src.losses import mean_cross_entropy, sum_of_squares
from decision_bench.agents.base import Batch
from decision_bench.agents.core import sgd_step


def sample_index(key: jax.Array, index_dim: int) -> jax.Array:
    """One index z ~ N(0, I_D). Returns [D] f32."""
    return jax.random.normal(key, (index_dim,), jnp.float32)


def sample_indices(key: jax.Array, num: int, index_dim: int) -> jax.Array:
    """num independent indices. Returns [num, D] f32."""
    return jax.random.normal(key, (num, index_dim), jnp.float32)


def index_functions(
    *,
    input_dim: int,
    regularization: str,
    index_dim: int,
    num_index_samples: int,
    context: Callable[[Any, jax.Array], Any],
    logits: Callable[..., jax.Array],
    l2_weight: Callable[..., jax.Array],
) -> tuple[Callable, Callable]:
    """(update, sample_logits) of an index agent, both taking ``hyper`` first.

    Call it from a family's cached builder, so the same static setting gives the
    same function objects (and so the same compiled programs).
    """

    def loss_fn(params: Any, hyper: Any, ctx: Any, batch: Batch, key: jax.Array) -> jax.Array:
        zs = sample_indices(key, num_index_samples, index_dim)
        per_index = jax.vmap(
            lambda z: mean_cross_entropy(logits(hyper, params, ctx, z, batch.x), batch.y)
        )(zs)
        weight = l2_weight(hyper, batch.num_seen, input_dim=input_dim, mode=regularization)
        decay = weight * sum_of_squares(params)
        return per_index.mean() + decay

    def update(hyper: Any, key: jax.Array, state: Any, batch: Batch) -> Any:
        params, opt_state = sgd_step(
            loss_fn,
            state.params,
            state.opt_state,
            hyper.learning_rate,
            hyper,
            context(state, batch.x),
            batch,
            key,
        )
        return state._replace(params=params, opt_state=opt_state)

    def sample_logits(hyper: Any, key: jax.Array, state: Any, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one index z shared by all n inputs."""
        z = sample_index(key, index_dim)
        return logits(hyper, state.params, context(state, x), z, x)

    return update, sample_logits
