"""agents/training.py: fit's shape checks, empty data, non-finite results and its batches."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.envs.testbed import Dataset

from test_contract import NUM_TRAIN, SPEC, separable_data, small_agent


def test_data_shape_mismatch_names_both_shapes():
    agent = small_agent("mlp")
    bad = Dataset(jnp.zeros((NUM_TRAIN, 3)), jnp.zeros((NUM_TRAIN,), jnp.int32))
    with pytest.raises(ValueError, match=r"\(64, 3\).*\(64, 2\)"):
        agents.fit(agent, jax.random.key(0), bad, SPEC)


def test_empty_data_returns_the_initial_state():
    spec = dataclasses.replace(SPEC, num_train=0)
    agent = agents.make("mlp", spec, num_steps=5)
    empty = Dataset(jnp.zeros((0, 2)), jnp.zeros((0,), jnp.int32))
    state = agents.fit(agent, jax.random.key(0), empty, spec)
    initial = jax.jit(agent.init)(jax.random.split(jax.random.key(0))[0])
    jax.tree.map(np.testing.assert_array_equal, state, initial)


def test_non_finite_fit_is_reported():
    agent = agents.make("logistic", SPEC, num_steps=20)
    data = separable_data(jax.random.key(0))
    poisoned = Dataset(data.x.at[3, 0].set(jnp.nan), data.y)
    state = agents.fit(agent, jax.random.key(0), poisoned, SPEC)
    assert not bool(agents.params_are_finite(state))
    with pytest.raises(agents.NonFiniteParamsError, match="logistic"):
        agents.fit_checked(agent, jax.random.key(0), poisoned, SPEC)


def test_fit_batches_are_epoch_shuffles_of_full_size():
    """The reference's batching: per-epoch shuffles laid end to end, batches of exactly
    batch_size (with T = 10 a batch of 100 holds every point 10 times)."""
    from decision_bench.agents.training import epoch_shuffled_batch

    key = jax.random.key(0)
    for step in range(3):
        batch = np.asarray(epoch_shuffled_batch(key, step, 10, 100))
        assert batch.shape == (100,)
        np.testing.assert_array_equal(np.bincount(batch, minlength=10), np.full(10, 10))
    # T = 7, batches of 3 straddle epochs; the stream's epochs are permutations.
    stream = np.concatenate([np.asarray(epoch_shuffled_batch(key, i, 7, 3)) for i in range(14)])
    for epoch in stream.reshape(6, 7):
        np.testing.assert_array_equal(np.sort(epoch), np.arange(7))
    assert len({tuple(e) for e in stream.reshape(6, 7)}) > 1  # reshuffled every epoch
    # T = 1000, batches of 100: ten batches cover one epoch exactly once.
    epoch = np.concatenate([np.asarray(epoch_shuffled_batch(key, i, 1000, 100)) for i in range(10)])
    np.testing.assert_array_equal(np.sort(epoch), np.arange(1000))
