"""random_forest: the exported trees predict as scikit-learn's forest, deterministic in
the key, jittable and vmappable, and with no epistemic index."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.ensemble import RandomForestClassifier  # noqa: E402

from decision_bench import agents  # noqa: E402
from decision_bench.agents.random_forest import (  # noqa: E402
    Forest,
    _floor_to_float32,
    forest_probabilities,
    grow_forest_host,
)
from decision_bench.envs.testbed import Dataset  # noqa: E402
from decision_bench.specs import ProblemSpec  # noqa: E402

SPEC = ProblemSpec(input_dim=3, num_classes=3, temperature=0.1, num_train=50)


def _data(seed: int, n: int = 50, num_classes: int = 3, input_dim: int = 3) -> Dataset:
    kx, ky = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (n, input_dim), jnp.float32)
    return Dataset(x, jax.random.randint(ky, (n,), 0, num_classes, jnp.int32))


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_exported_trees_predict_as_scikit_learn(criterion):
    data = _data(0)
    x, y = np.asarray(data.x), np.asarray(data.y)
    seen = np.ones(50, np.int32)
    seen[45:] = 0  # the last 5 rows were never seen: they must not be used
    arrays = grow_forest_host(x, y, seen, np.uint32(1234), num_trees=7, criterion=criterion, num_classes=3)
    reference = RandomForestClassifier(n_estimators=7, criterion=criterion, random_state=1234, n_jobs=1)
    reference.fit(x[:45], y[:45])
    x_test = np.concatenate([np.random.default_rng(0).normal(size=(30, 3)), x]).astype(np.float32)
    got = np.asarray(jax.jit(forest_probabilities)(Forest(**arrays), jnp.asarray(x_test)))
    np.testing.assert_allclose(got, reference.predict_proba(x_test), rtol=1e-5, atol=1e-6)


def test_a_class_missing_from_the_data_gets_probability_zero_before_clipping():
    data = _data(1, num_classes=2)  # labels 0 and 1 only, of 3 classes
    seen = np.ones(50, np.int32)
    arrays = grow_forest_host(
        np.asarray(data.x), np.asarray(data.y), seen, np.uint32(0), num_trees=5, criterion="gini", num_classes=3
    )
    probs = np.asarray(forest_probabilities(Forest(**arrays), data.x))
    np.testing.assert_array_equal(probs[:, 2], 0.0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)


def test_thresholds_round_down_so_float32_inputs_keep_their_side():
    below = np.float32(1.0)
    above = np.nextafter(below, np.float32(2.0))
    midpoint = (np.float64(below) + np.float64(above)) / 2  # a float64 split between them
    t = _floor_to_float32(np.array([midpoint]))[0]
    assert below <= t < above
    assert _floor_to_float32(np.array([0.5]))[0] == np.float32(0.5)  # exact values stay


def test_fit_is_deterministic_in_the_key_and_uses_every_row():
    agent = agents.make("random_forest", SPEC, num_trees=5)
    data = _data(2)
    fit = jax.jit(lambda k, d: agents.fit(agent, k, d, SPEC))
    first, again, other = fit(jax.random.key(0), data), fit(jax.random.key(0), data), fit(jax.random.key(1), data)
    jax.tree.map(np.testing.assert_array_equal, first, again)
    assert int(first.data.seen.sum()) == 50
    # Another key grows other trees (bootstrap samples and feature draws differ).
    assert not np.array_equal(first.forest.threshold, other.forest.threshold)
    # Before any update every tree is one leaf: uniform predictions.
    initial = agent.init(jax.random.key(0))
    np.testing.assert_allclose(jnp.exp(agent.sample_logits(None, initial, data.x)), 1 / 3, rtol=1e-6)


def test_vmapped_fit_equals_separate_fits():
    agent = agents.make("random_forest", SPEC, num_trees=3)
    datasets = [_data(s) for s in (3, 4)]
    keys = jnp.stack([jax.random.key(s) for s in (3, 4)])
    stacked = Dataset(*(jnp.stack(parts) for parts in zip(*datasets)))
    batched = jax.jit(jax.vmap(lambda k, d: agents.fit(agent, k, d, SPEC)))(keys, stacked)
    for i, (key, data) in enumerate(zip(keys, datasets)):
        single = agents.fit(agent, key, data, SPEC)
        jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[i], b), batched, single)


def test_no_epistemic_index_joint_is_product_of_marginals():
    agent = agents.make("random_forest", SPEC, num_trees=10)
    state = agents.fit(agent, jax.random.key(0), _data(5), SPEC)
    tau = 10
    x = jax.random.normal(jax.random.key(6), (tau, 3))
    y = jax.random.randint(jax.random.key(7), (tau,), 0, 3)
    draws = jax.vmap(agent.sample_logits, (0, None, None))(jax.random.split(jax.random.key(8), 20), state, x)
    np.testing.assert_array_equal(draws[0], draws[1])  # two keys, identical logits
    log_p = jnp.take_along_axis(jax.nn.log_softmax(draws, -1), y[None, :, None], -1)[..., 0]
    joint = jax.nn.logsumexp(log_p.sum(-1)) - jnp.log(20.0)
    marginals = (jax.nn.logsumexp(log_p, axis=0) - jnp.log(20.0)).sum()
    np.testing.assert_allclose(joint, marginals, rtol=1e-5)
    # Clipped to [0.01, 0.99] before renormalising: every logit is >= log(0.01).
    assert float(draws.min()) >= np.log(0.01) - 1e-6


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        (dict(num_trees=0), "num_trees"),
        (dict(criterion="log_loss"), "criterion"),
        (dict(probability_clip=-0.1), "probability_clip"),
    ],
)
def test_bad_hyperparameters_name_the_parameter(overrides, parameter):
    with pytest.raises(ValueError, match=parameter) as err:
        agents.make("random_forest", SPEC, **overrides)
    assert "\n" not in str(err.value)
