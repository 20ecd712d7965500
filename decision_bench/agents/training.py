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

``fit_checked`` is the host-side entry point that refuses non-finite parameters.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from decision_bench._validation import check_int
from decision_bench.agents.base import Agent, Batch, params_are_finite
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec


def check_data(train_data: Dataset, spec: ProblemSpec) -> None:
    """Raises ValueError unless x is [num_train, input_dim] and y is [num_train]."""
    x_shape, y_shape = tuple(jnp.shape(train_data.x)), tuple(jnp.shape(train_data.y))
    want_x, want_y = (spec.num_train, spec.input_dim), (spec.num_train,)
    if x_shape != want_x or y_shape != want_y:
        raise ValueError(
            f"training data shapes x {x_shape}, y {y_shape} disagree with the spec, which "
            f"expects x {want_x}, y {want_y} (num_train={spec.num_train}, "
            f"input_dim={spec.input_dim})"
        )


def fit(
    agent: Agent,
    key: jax.Array,
    train_data: Dataset,
    spec: ProblemSpec | None = None,
    num_steps: int | None = None,
    batch_size: int = 100,
) -> Any:
    """Trains ``agent`` on ``train_data`` (x [T, d] f32, y [T] i32); returns its state.

    num_steps: SGD steps (None: the agent's default, ``agent.num_steps``). With
    T = 0 no step is taken and the initial state is returned. Given a ``spec``,
    shapes are checked against it before tracing, so a mismatch names both
    shapes. Inside jit (spec None) it traces into the caller's program.
    """
    if spec is not None:
        check_data(train_data, spec)
    steps = agent.num_steps if num_steps is None else check_int("num_steps", num_steps, 0)
    batch_size = check_int("batch_size", batch_size, 1)
    data = Dataset(jnp.asarray(train_data.x, jnp.float32), jnp.asarray(train_data.y, jnp.int32))
    return _fit(agent, steps, batch_size, key, data)


def epoch_shuffled_batch(key: jax.Array, step: jax.Array, num_train: int, batch_size: int) -> jax.Array:
    """Positions [batch_size] i32 of batch ``step`` in a stream of per-epoch shuffles.

    Epoch e is a fresh permutation of 0..num_train-1 (key ``fold_in(key, e)``);
    the epochs laid end to end are cut into consecutive batches, so batch i is
    stream positions i*batch_size .. (i+1)*batch_size - 1. Only the epochs that
    batch touches are drawn (at most batch_size // num_train + 2), so memory does
    not grow with the number of steps.
    """
    start = jnp.asarray(step, jnp.int32) * batch_size
    first_epoch = start // num_train
    epochs = first_epoch + jnp.arange(batch_size // num_train + 2)
    perms = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(key, e), num_train))(epochs)
    offset = start - first_epoch * num_train
    return perms.reshape(-1)[offset + jnp.arange(batch_size)].astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _fit(agent: Agent, num_steps: int, batch_size: int, key: jax.Array, data: Dataset) -> Any:
    k_init, k_shuffle, k_updates = jax.random.split(key, 3)
    # spec None: an agent knows its spec from construction (make(name, spec)); a
    # spec given here would have to be static and would compile once per value.
    state = agent.init(k_init, None)
    num_train = data.x.shape[0]
    if num_train == 0 or num_steps == 0:
        return state
    num_seen = jnp.asarray(num_train, jnp.float32)

    def step(state: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        i, k_update = inputs
        index = epoch_shuffled_batch(k_shuffle, i, num_train, batch_size)
        batch = Batch(x=data.x[index], y=data.y[index], num_seen=num_seen, index=index)
        return agent.update(state, batch, k_update), None

    steps = (jnp.arange(num_steps), jax.random.split(k_updates, num_steps))
    state, _ = jax.lax.scan(step, state, steps)
    return state


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
