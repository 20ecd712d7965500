"""A fixed-size store of the training rows an agent has seen, addressed by ``Batch.index``.

Agents that are not trained by gradient steps alone (knn, random_forest) or that
need every training input at prediction time (deep_kernel's kernel matrix) keep
the data themselves. The store has one row per position a batch can name:

- in ``fit`` a batch's ``index`` is each example's row in the training set, below
  ``spec.num_train`` (padding rows are never drawn);
- in the bandit it is the replay-buffer position, below the replay capacity, which
  ``bandit_spec`` passes as ``spec.num_train``.

So a buffer of ``spec.num_train`` rows holds every example at its own position.
Writing is idempotent: an example drawn in many minibatches is stored once, so the
stored set is exactly "the training data seen so far", however the batches repeat
rows. Positions outside the buffer are dropped (JAX scatter semantics).

``fit`` hands such an agent the whole training set through its ``fit_data``
(agents/base.py), which stores it with :func:`from_dataset`; ``update`` writes the
rows of a batch, as the bandit feeds them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from decision_bench.agents.base import Batch
from decision_bench.envs.testbed import Dataset


class DataBuffer(NamedTuple):
    x: jax.Array  # [R, input_dim] f32
    y: jax.Array  # [R] i32
    seen: jax.Array  # [R] i32: 1 where the row holds an observation, else 0


def empty(capacity: int, input_dim: int) -> DataBuffer:
    """A buffer of ``capacity`` rows, none seen."""
    return DataBuffer(
        x=jnp.zeros((capacity, input_dim), jnp.float32),
        y=jnp.zeros((capacity,), jnp.int32),
        seen=jnp.zeros((capacity,), jnp.int32),
    )


def write(buffer: DataBuffer, batch: Batch) -> DataBuffer:
    """Stores each example of the batch at its position ``batch.index``."""
    index = batch.index
    return DataBuffer(
        x=buffer.x.at[index].set(batch.x.astype(jnp.float32), mode="drop"),
        y=buffer.y.at[index].set(batch.y.astype(jnp.int32), mode="drop"),
        seen=buffer.seen.at[index].set(1, mode="drop"),
    )


def from_dataset(capacity: int, data: Dataset, num_train: jax.Array) -> DataBuffer:
    """A buffer of ``capacity`` rows holding row i of ``data`` (x [rows, d], y [rows])
    at position i for every i < num_train ([] i32, may be traced); the rows after
    num_train are padding and are not stored, nor are positions past the capacity."""
    position = jnp.arange(data.x.shape[0], dtype=jnp.int32)
    index = jnp.where(position < num_train, position, capacity)  # past the end: dropped
    rows = Batch(x=data.x, y=data.y, num_seen=jnp.asarray(num_train, jnp.float32), index=index)
    return write(empty(capacity, data.x.shape[1]), rows)


def count(buffer: DataBuffer) -> jax.Array:
    """The number of rows seen, a [] i32."""
    return buffer.seen.sum()
