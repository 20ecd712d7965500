"""knn: neighbour votes against scikit-learn and by hand, the stored data, no epistemic index."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents.base import Batch
from decision_bench.agents.training import bucket_size
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=3, temperature=0.1, num_train=40)


def _data(seed: int, n: int = 40, num_classes: int = 3) -> Dataset:
    kx, ky = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (n, 2), jnp.float32)
    return Dataset(x, jax.random.randint(ky, (n,), 0, num_classes, jnp.int32))


def _fitted(spec=SPEC, data=None, **overrides):
    agent = agents.make("knn", spec, **overrides)
    data = _data(0, spec.num_train, spec.num_classes) if data is None else data
    return agent, data, agents.fit(agent, jax.random.key(1), data, spec)


@pytest.mark.parametrize("k, weighting", [(1, "uniform"), (5, "uniform"), (5, "distance"), (30, "distance")])
def test_probabilities_match_scikit_learn(k, weighting):
    neighbors = pytest.importorskip("sklearn.neighbors")
    agent, data, state = _fitted(num_neighbors=k, weighting=weighting)
    x_test = jax.random.normal(jax.random.key(7), (25, 2), jnp.float32)
    reference = neighbors.KNeighborsClassifier(n_neighbors=k, weights=weighting)
    reference.fit(np.asarray(data.x), np.asarray(data.y))
    assert list(reference.classes_) == [0, 1, 2]  # every class is present in the data
    want = np.log(np.clip(reference.predict_proba(np.asarray(x_test)), 0.01, 0.99))
    got = np.asarray(jax.jit(agent.sample_logits)(jax.random.key(0), state, x_test))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_hand_computed_votes_and_zero_distance_rule():
    spec = ProblemSpec(input_dim=1, num_classes=2, num_train=3)
    data = Dataset(jnp.array([[0.0], [1.0], [3.0]]), jnp.array([0, 1, 1], jnp.int32))
    uniform, _, s_uniform = _fitted(spec, data, num_neighbors=2)
    distance, _, s_distance = _fitted(spec, data, num_neighbors=2, weighting="distance")
    x = jnp.array([[0.25], [1.0]])
    # x = 0.25: neighbours 0 (label 0, distance 0.25) and 1 (label 1, distance 0.75).
    p_uniform = np.exp(np.asarray(uniform.sample_logits(None, s_uniform, x)))
    np.testing.assert_allclose(p_uniform, [[0.5, 0.5], [0.5, 0.5]], rtol=1e-6)
    p_distance = np.exp(np.asarray(distance.sample_logits(None, s_distance, x)))
    # weights 1/0.25 = 4 and 1/0.75 = 4/3: p(0) = 4 / (16/3) = 0.75. x = 1.0 sits on
    # the stored row 1 (label 1): only it counts, p(1) = 1, clipped to 0.99.
    np.testing.assert_allclose(p_distance, [[0.75, 0.25], [0.01, 0.99]], rtol=1e-6)


def test_fewer_rows_than_neighbours_and_no_rows():
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=8)
    agent = agents.make("knn", spec, num_neighbors=100)
    state = agent.init(jax.random.key(0))
    x = jnp.ones((3, 2))
    # Nothing seen: uniform.
    np.testing.assert_allclose(agent.sample_logits(None, state, x), np.log(0.5), rtol=1e-6)
    # Three rows seen (labels 1, 1, 0) of a buffer of 8: all three are the neighbours.
    batch = Batch(
        x=jnp.zeros((3, 2)), y=jnp.array([1, 1, 0], jnp.int32), num_seen=jnp.float32(3),
        index=jnp.array([5, 0, 2], jnp.int32),
    )
    state = agent.update(jax.random.key(1), state, batch)
    assert int(state.data.seen.sum()) == 3
    np.testing.assert_allclose(np.exp(agent.sample_logits(None, state, x)), [[1 / 3, 2 / 3]] * 3, rtol=1e-6)


def test_fit_stores_every_training_row_exactly_once_even_padded():
    rows = bucket_size(150)  # 1000 rows of which the first 150 are data
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=150)
    data = _data(3, rows, 2)
    agent = agents.make("knn", spec)
    assert agent.num_steps == 0 and agent.fit_data is not None  # fit hands it the whole training set
    state = jax.jit(lambda k, d: agents.fit(agent, k, d, num_train=150))(jax.random.key(0), data)
    assert int(state.data.seen.sum()) == 150
    np.testing.assert_array_equal(state.data.x, data.x[:150])
    np.testing.assert_array_equal(state.data.y, data.y[:150])
    # Repeated rows (many epochs) change nothing: storing is idempotent.
    again = agents.fit(agent, jax.random.key(0), data, num_train=150, num_steps=20)
    jax.tree.map(np.testing.assert_array_equal, again, state)


def test_no_epistemic_index_joint_is_product_of_marginals():
    agent, data, state = _fitted()
    tau = 10
    x = jax.random.normal(jax.random.key(4), (tau, 2))
    y = jax.random.randint(jax.random.key(5), (tau,), 0, 3)
    keys = jax.random.split(jax.random.key(6), 50)
    draws = jax.vmap(agent.sample_logits, (0, None, None))(keys, state, x)  # [50, tau, C]
    # Two keys give bitwise identical logits.
    np.testing.assert_array_equal(draws[0], draws[1])
    log_p = jnp.take_along_axis(jax.nn.log_softmax(draws, -1), y[None, :, None], -1)[..., 0]
    joint = jax.nn.logsumexp(log_p.sum(-1)) - jnp.log(50.0)
    marginals = (jax.nn.logsumexp(log_p, axis=0) - jnp.log(50.0)).sum()
    np.testing.assert_allclose(joint, marginals, rtol=1e-5)
    members = agent.member_logits(state, x)
    assert members.shape == (1, tau, 3)
    np.testing.assert_array_equal(members[0], draws[0])


def test_clip_is_a_traced_hyperparameter_that_shares_programs():
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=10)
    a, b = agents.make("knn", spec), agents.make("knn", spec, probability_clip=0.2)
    data = _data(2, 10, 2)
    sample = jax.jit(lambda agent, s, x: agent.sample_logits(None, s, x))
    state = agents.fit(a, jax.random.key(0), data, spec)
    pa = np.exp(np.asarray(sample(a, state, data.x)))
    pb = np.exp(np.asarray(sample(b, state, data.x)))
    assert sample._cache_size() == 1
    assert pa.min() >= 0.01 - 1e-7 and pb.min() >= 0.2 - 1e-7 and pb.max() <= 0.8 + 1e-7


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        (dict(num_neighbors=0), "num_neighbors"),
        (dict(num_neighbors=2.5), "num_neighbors"),
        (dict(weighting="gaussian"), "weighting"),
        (dict(probability_clip=0.5), "probability_clip"),
        (dict(probability_clip=0.0), "probability_clip"),
    ],
)
def test_bad_hyperparameters_name_the_parameter(overrides, parameter):
    with pytest.raises(ValueError, match=parameter) as err:
        agents.make("knn", SPEC, **overrides)
    assert "\n" not in str(err.value)
