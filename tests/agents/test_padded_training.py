"""Training sets padded to a bucket: same results as unpadded, one program per bucket."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import make_testbed_problem
from decision_bench.agents import fit, make
from decision_bench.agents.training import bucket_floor, bucket_size, epoch_shuffled_batch
from decision_bench.envs.testbed import Dataset, sample_environment
from decision_bench.priors import make_prior

from compile_counting import count_compilations


def test_bucket_sizes_are_decades_and_floors_their_smallest_member():
    assert [bucket_size(t) for t in (0, 1, 2, 3, 10, 11, 30, 100, 101, 1000)] == [
        0, 1, 10, 10, 10, 100, 100, 100, 1000, 1000]
    for t in (1, 2, 9, 10, 11, 99, 100, 101, 5000):
        rows = bucket_size(t)
        assert bucket_floor(rows) <= t <= rows
        assert bucket_size(bucket_floor(rows)) == rows
    assert bucket_floor(50) == 1  # not a bucket: no bound but 1


def test_bad_bucket_input_names_the_parameter():
    with pytest.raises(ValueError, match="num_train"):
        bucket_size(-1)


@pytest.mark.parametrize("num_train, num_rows", [(3, 10), (10, 10), (30, 100), (1, 1), (11, 100)])
def test_padded_batch_stream_equals_the_unpadded_one(num_train, num_rows):
    key = jax.random.key(4)
    for step in (0, 1, 7, 33):
        plain = np.asarray(epoch_shuffled_batch(key, step, num_train, 100))
        padded = np.asarray(epoch_shuffled_batch(
            key, step, jnp.int32(num_train), 100, num_rows, bucket_floor(num_rows)))
        np.testing.assert_array_equal(plain, padded)
        assert plain.max() < num_train


def test_epochs_of_a_padded_stream_are_permutations_of_the_real_rows():
    key = jax.random.key(0)
    # T = 7 padded to 10 rows, batches of 7: batch i is epoch i exactly.
    epochs = [np.asarray(epoch_shuffled_batch(key, i, jnp.int32(7), 7, 10, 2)) for i in range(5)]
    for epoch in epochs:
        np.testing.assert_array_equal(np.sort(epoch), np.arange(7))
    assert len({tuple(e) for e in epochs}) > 1


@pytest.mark.parametrize("agent_name", ["mlp", "ensemble+"])
def test_a_padded_fit_equals_the_unpadded_fit_for_the_same_key(agent_name):
    problem = make_testbed_problem("mlp", input_dim=2, num_train=30, temperature=0.1)
    rows = bucket_size(30)
    junk = jax.random.normal(jax.random.key(9), (rows - 30, 2))
    padded = Dataset(
        jnp.concatenate([problem.train_data.x, junk]),
        jnp.concatenate([problem.train_data.y, jnp.ones(rows - 30, jnp.int32)]),
    )
    agent = make(agent_name, problem.spec)
    plain = fit(agent, jax.random.key(1), problem.train_data, problem.spec, num_steps=25)
    bucketed = fit(agent, jax.random.key(1), padded, problem.spec, num_steps=25, num_train=30)
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(bucketed)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    # The padding rows are never drawn: changing them changes nothing.
    other = Dataset(padded.x.at[30:].set(100.0), padded.y.at[30:].set(0))
    again = fit(agent, jax.random.key(1), other, problem.spec, num_steps=25, num_train=30)
    for a, b in zip(jax.tree.leaves(bucketed), jax.tree.leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_training_data_sampling_is_prefix_stable():
    """The runner samples bucket_size(T) rows and uses the first T: they must be the
    rows an unpadded sample of T holds."""
    for name, dim in (("mlp", 2), ("logistic", 3), ("coins", 4)):
        prior = make_prior(name, dim, 0.1)
        _, small = sample_environment(jax.random.key(3), prior, 7)
        _, large = sample_environment(jax.random.key(3), prior, 10)
        np.testing.assert_array_equal(small.x, large.x[:7])
        np.testing.assert_array_equal(small.y, large.y[:7])


def test_num_train_outside_the_bucket_is_refused():
    problem = make_testbed_problem("mlp", input_dim=2, num_train=10, temperature=0.1)
    agent = make("mlp", problem.spec)
    with pytest.raises(ValueError, match=r"num_train must lie in \[2, 10\]"):
        fit(agent, jax.random.key(0), problem.train_data, num_steps=2, num_train=11)
    with pytest.raises(ValueError, match="disagrees with spec.num_train"):
        fit(agent, jax.random.key(0), problem.train_data, problem.spec, num_steps=2, num_train=5)


def test_a_testbed_sweep_within_one_bucket_compiles_the_fit_once():
    from decision_bench.evaluation import run_testbed
    from decision_bench.evaluation.sweeps import custom_sweep

    # T in {11, 30, 100} share the bucket of 100 rows; two temperatures.
    sweep = custom_sweep(2, [11, 30, 100], [0.1, 0.5], taus=[1], num_seeds=2)
    overrides = {"mlp": {"num_steps": 10}}
    rows = run_testbed("mlp", sweep, num_test=20, num_models=5, overrides=overrides,
                       progress=False)
    compiled = rows[rows.compile_seconds > 0][["num_train", "temperature"]].drop_duplicates()
    assert len(compiled) == 1, compiled
    assert set(rows.num_train) == {11, 30, 100}
    with count_compilations() as again:
        run_testbed("mlp", custom_sweep(2, [50], [0.3], taus=[1], num_seeds=2), num_test=20,
                    num_models=5, overrides=overrides, progress=False)
    assert again == []
