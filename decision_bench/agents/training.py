"""Fitting an agent to a fixed data set: init, then ``lax.scan`` over SGD steps.

``fit`` is a pure function of (agent, key, data): it is jitted with only the
step count and batch size static. The agent is a pytree whose functions are
compared by identity and whose hyperparameters are array leaves, so every agent
of one family and shape shares one compiled program per data-set size, and it
vmaps over keys, data sets and hyperparameters::

    states = jax.vmap(lambda k, d: fit(agent, k, d, spec))(keys, datasets)

Batches follow the reference implementation (enn's dataset iterator as used by
neural_testbed): the data set is shuffled afresh every epoch, the epochs are laid
end to end, and step i takes positions i*B .. (i+1)*B - 1 of that stream. Every
batch holds exactly ``batch_size`` examples even when T < batch_size (with T = 10
a batch of 100 holds each point 10 times, in a fresh order), batches may straddle
two epochs, and over the run every point is used equally often (within one
epoch). An earlier version drew min(B, T) positions with replacement, which adds
sampling noise the reference does not have and, for T < B, uses smaller batches.
The batch carries ``num_seen = T`` for the decayed regulariser and ``index`` =
the positions, for bootstrap weights.

An agent with ``fit_data`` (agents/base.py) is then handed the whole data set
once, after the updates: a full-batch sampler, a forest or a store of
neighbours is fitted there, and takes no update steps by default.

``fit_checked`` is the host-side entry point that refuses non-finite parameters.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.validation import check_int
from decision_bench.agents.base import Agent, Batch, params_are_finite
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec


def check_data(train_data: Dataset, spec: ProblemSpec, num_rows: int | None = None) -> None:
    """Raises ValueError unless x is [rows, input_dim] and y is [rows], where rows is
    spec.num_train, or ``num_rows`` for a training set padded past it."""
    rows = spec.num_train if num_rows is None else num_rows
    x_shape, y_shape = tuple(jnp.shape(train_data.x)), tuple(jnp.shape(train_data.y))
    want_x, want_y = (rows, spec.input_dim), (rows,)
    if x_shape != want_x or y_shape != want_y:
        raise ValueError(
            f"training data shapes x {x_shape}, y {y_shape} disagree with the spec, which "
            f"expects x {want_x}, y {want_y} (num_train={spec.num_train}, "
            f"input_dim={spec.input_dim})"
        )
    if not isinstance(train_data.y, jax.core.Tracer) and y_shape[0]:
        labels = np.asarray(train_data.y)
        low, high = labels.min(), labels.max()
        if low < 0 or high >= spec.num_classes:
            # A label outside the spec's classes trains a softmax over fewer classes on
            # an index it does not have (JAX clamps it): a wrong fit, with no error.
            raise ValueError(
                f"training labels y must lie in [0, num_classes - 1] = [0, {spec.num_classes - 1}], "
                f"got values from {low} to {high}"
            )


def fit(
    agent: Agent,
    key: jax.Array,
    train_data: Dataset,
    spec: ProblemSpec | None = None,
    num_steps: int | None = None,
    batch_size: int = 100,
    num_train: int | jax.Array | None = None,
) -> Any:
    """Trains ``agent`` on ``train_data`` (x [rows, d] f32, y [rows] i32); returns its state.

    num_steps: SGD steps (None: the agent's default, ``agent.num_steps``). An
    agent with ``fit_data`` then gets the whole data set (its first num_train
    rows) at once. With no rows nothing is done and the initial state is
    returned. Given a ``spec``, shapes are checked against it before tracing, so
    a mismatch names both shapes. Inside jit (spec None) it traces into the caller's program.

    num_train: None trains on every row. Otherwise only the first num_train rows
    are data and the rest padding that is never drawn; it may be traced (one
    program for every num_train in a bucket), and must lie in
    [bucket_floor(rows), rows]. The result equals the fit on the first num_train
    rows alone, for the same key: pad to ``bucket_size(T)`` rows to share
    programs across T.
    """
    rows = int(jnp.shape(train_data.x)[0])
    if spec is not None:
        check_data(train_data, spec, None if num_train is None else rows)
    steps = check_int("agent.num_steps", agent.num_steps, 0) if num_steps is None else check_int("num_steps", num_steps, 0)
    batch_size = check_int("batch_size", batch_size, 1)
    if num_train is None:
        num_train, min_train = rows, rows
    else:
        min_train = bucket_floor(rows)
        if not isinstance(num_train, jax.core.Tracer):
            value = int(num_train)
            if not min_train <= value <= rows:
                raise ValueError(
                    f"num_train must lie in [{min_train}, {rows}] for a training set padded to "
                    f"{rows} rows, got {value}"
                )
            if spec is not None and value != spec.num_train:
                raise ValueError(f"num_train={value} disagrees with spec.num_train={spec.num_train}")
    data = Dataset(jnp.asarray(train_data.x, jnp.float32), jnp.asarray(train_data.y, jnp.int32))
    return _fit(agent, steps, batch_size, min_train, key, data, jnp.asarray(num_train, jnp.int32))


def bucket_size(num_train: int) -> int:
    """Rows a training set of ``num_train`` examples is padded to: 0, 1, 10, 100, ...

    The smallest power of ten >= num_train. Training sets in one bucket share one
    compiled ``fit`` program (the padding rows are never drawn). Decades suit the
    papers' grids, whose sizes are 10^k or sit between them (T in {1, 3, 10, 30,
    ...} and lambda * d with lambda in {1, 10, 100, 1000}): a paper size 10^k is
    never padded, and padding costs only the per-step shuffle, since every batch
    gathers batch_size rows whatever the number of rows.
    """
    num_train = check_int("num_train", num_train, 0)
    size = 0 if num_train == 0 else 1
    while size < num_train:
        size *= 10
    return size


def bucket_floor(num_rows: int) -> int:
    """The smallest num_train that ``bucket_size`` pads to ``num_rows`` rows: a
    static lower bound on a traced num_train (1 for a size that is not a bucket)."""
    if num_rows <= 1 or bucket_size(num_rows) != num_rows:
        return min(num_rows, 1)
    return num_rows // 10 + 1


def epoch_order(key: jax.Array, epoch: jax.Array, num_rows: int, num_train: jax.Array) -> jax.Array:
    """Positions [num_rows] i32: a uniformly random order of 0..num_train-1, then the
    padding rows num_train..num_rows-1 in order.

    The order sorts one uint32 per row (stable, so ties keep row order); padding
    rows get the largest value and sort last. Threefry is counter-based
    (``jax_threefry_partitionable``, JAX's default), so the bits of the first
    num_train rows do not depend on num_rows: the order of the real rows is the
    same however much padding follows, which makes a padded fit equal an
    unpadded one.
    """
    bits = jax.random.bits(jax.random.fold_in(key, epoch), (num_rows,), jnp.uint32)
    sort_keys = jnp.where(jnp.arange(num_rows) < num_train, bits, jnp.uint32(jnp.iinfo(jnp.uint32).max))
    return jnp.argsort(sort_keys, stable=True).astype(jnp.int32)


def epoch_shuffled_batch(
    key: jax.Array,
    step: jax.Array,
    num_train: int | jax.Array,
    batch_size: int,
    num_rows: int | None = None,
    min_train: int | None = None,
) -> jax.Array:
    """Positions [batch_size] i32 of batch ``step`` in a stream of per-epoch shuffles.

    Epoch e is a fresh order of 0..num_train-1 (``epoch_order`` with key
    ``fold_in(key, e)``); the epochs laid end to end are cut into consecutive
    batches, so batch i is stream positions i*batch_size .. (i+1)*batch_size - 1.
    Only the epochs that batch touches are drawn, so memory does not grow with
    the number of steps.

    num_train may be traced when the data hold ``num_rows`` (static) rows, the
    rest padding; ``min_train`` (static, <= num_train) bounds how many epochs one
    batch can touch: batch_size // min_train + 2. Both default to num_train,
    which must then be a Python int.
    """
    num_rows = num_train if num_rows is None else num_rows
    min_train = num_train if min_train is None else min_train
    n = jnp.asarray(num_train, jnp.int32)
    start = jnp.asarray(step, jnp.int32) * batch_size
    first_epoch = start // n
    epochs = first_epoch + jnp.arange(batch_size // min_train + 2)
    orders = jax.vmap(lambda e: epoch_order(key, e, num_rows, n))(epochs)
    position = start - first_epoch * n + jnp.arange(batch_size)
    return orders[position // n, position % n]


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _fit(
    agent: Agent,
    num_steps: int,
    batch_size: int,
    min_train: int,
    key: jax.Array,
    data: Dataset,
    num_train: jax.Array,
) -> Any:
    k_init, k_shuffle, k_updates = jax.random.split(key, 3)
    state = agent.init(k_init)
    num_rows = data.x.shape[0]
    if num_rows == 0:
        return state
    num_seen = jnp.asarray(num_train, jnp.float32)

    def step(state: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        i, k_update = inputs
        index = epoch_shuffled_batch(k_shuffle, i, num_train, batch_size, num_rows, min_train)
        batch = Batch(x=data.x[index], y=data.y[index], num_seen=num_seen, index=index)
        return agent.update(k_update, state, batch), None

    if num_steps > 0:
        steps = (jnp.arange(num_steps), jax.random.split(k_updates, num_steps))
        state, _ = jax.lax.scan(step, state, steps)
    if agent.fit_data is not None:
        state = agent.fit_data(_fit_data_key(k_updates, num_train, batch_size, num_rows), state, data, num_train)
    return state


def _fit_data_key(k_updates: jax.Array, num_train: jax.Array, batch_size: int, num_rows: int) -> jax.Array:
    """The key of update ceil(T / batch_size) - 1, the first by which the batch
    stream has delivered every row (T = num_train, traced).

    fit_data stands in for the updates that would collect the data set, so it
    takes the key the last of them gets: an agent draws the same whether it
    collects its rows update by update or is handed them at once. split's i-th
    key does not depend on the count (threefry is counter-based), so a static
    count covering every T of the bucket gives the same key.
    """
    covering = jnp.maximum(1, -(-num_train // batch_size))
    return jax.random.split(k_updates, max(1, -(-num_rows // batch_size)))[covering - 1]


class NonFiniteParamsError(FloatingPointError):
    """A fit produced NaN or inf parameters."""


def check_finite(state: Any, agent_name: str = "agent") -> Any:
    """Returns ``state`` if every floating leaf is finite, else raises NonFiniteParamsError.

    Host-side (it reads a bool back), so call it outside jit; on a state stacked
    over seeds it checks all seeds at once.
    """
    if not bool(params_are_finite(state)):
        raise NonFiniteParamsError(
            f"{agent_name}: training produced NaN or inf parameters; the state must not be "
            "used (try a smaller learning_rate or fewer steps, and check the data for "
            "non-finite values)"
        )
    return state


def fit_checked(
    agent: Agent,
    key: jax.Array,
    train_data: Dataset,
    spec: ProblemSpec,
    num_steps: int | None = None,
    batch_size: int = 100,
) -> Any:
    """``fit`` followed by ``check_finite``: never returns non-finite parameters."""
    state = fit(agent, key, train_data, spec, num_steps, batch_size)
    return check_finite(state, agent.name)
