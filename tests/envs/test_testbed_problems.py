import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench.envs import (
    label_log_likelihood,
    make_testbed_problem,
    polyadic_inputs,
    sample_environment,
)
from decision_bench.priors import MLPPrior


def _distinct_rows(x):
    return len({row.tobytes() for row in np.asarray(x)})


@pytest.mark.parametrize("kappa, most", [(1, 1), (2, 2), (3, 3)])
def test_polyadic_inputs_use_at_most_kappa_distinct_inputs(kappa, most):
    prior = MLPPrior(input_dim=3)
    for i in range(20):
        x = polyadic_inputs(jax.random.key(i), prior, tau=10, kappa=kappa)
        assert x.shape == (10, 3)
        assert 1 <= _distinct_rows(x) <= most


def test_monadic_gives_one_distinct_input_and_iid_gives_tau():
    prior = MLPPrior(input_dim=2)
    assert _distinct_rows(polyadic_inputs(jax.random.key(0), prior, 10, 1)) == 1
    assert _distinct_rows(polyadic_inputs(jax.random.key(0), prior, 10, None)) == 10


def test_dyadic_uses_both_anchors_most_of_the_time():
    prior = MLPPrior(input_dim=2)
    counts = [_distinct_rows(polyadic_inputs(jax.random.key(i), prior, 10, 2)) for i in range(50)]
    # P(all ten picks equal one anchor) = 2 / 2**10, so nearly every sample uses both.
    assert sum(c == 2 for c in counts) >= 45


@pytest.mark.parametrize("prior", ["mlp", "logistic", "coins"])
@pytest.mark.parametrize("kappa", [None, 2])
def test_env_log_likelihood_is_the_sum_of_log_softmax_at_the_labels(prior, kappa):
    problem = make_testbed_problem(prior, input_dim=4, num_train=5, temperature=0.5, tau=7, kappa=kappa, seed=3)
    sample = problem.sample_test(jax.random.key(1))
    log_p = jax.nn.log_softmax(problem.logits(sample.x), axis=-1)
    expected = sum(float(log_p[i, int(sample.y[i])]) for i in range(7))
    assert float(sample.env_log_likelihood) == pytest.approx(expected, rel=1e-5)
    assert sample.x.shape == (7, problem.spec.input_dim) and sample.y.shape == (7,)


def test_test_labels_follow_the_environment_probabilities():
    problem = make_testbed_problem("mlp", input_dim=2, num_train=0, temperature=0.5, tau=1, seed=0)
    x = jnp.ones((1, 2)) * 0.3
    k = jax.random.split(jax.random.key(0), 20_000)
    from decision_bench.envs import testbed

    y = jax.vmap(lambda kk: testbed.sample_labels(kk, problem.prior, problem.env_params, x)[0])(k)
    p = float(jax.nn.softmax(problem.logits(x))[0, 1])
    assert abs(float(y.mean()) - p) < 5 * np.sqrt(p * (1 - p) / len(k)) + 1e-6


def test_training_data_shapes_and_labels():
    problem = make_testbed_problem("mlp", input_dim=3, num_train=30, temperature=0.1, seed=1)
    assert problem.train_data.x.shape == (30, 3)
    assert problem.train_data.y.shape == (30,) and problem.train_data.y.dtype == jnp.int32
    assert set(np.unique(problem.train_data.y)) <= {0, 1}


def test_spec_carries_what_agents_may_know():
    problem = make_testbed_problem("mlp", input_dim=3, num_train=30, temperature=0.5, tau=10, kappa=2)
    s = problem.spec
    assert (s.input_dim, s.num_classes, s.temperature, s.num_train, s.tau, s.kappa) == (3, 2, 0.5, 30, 10, 2)


def test_same_seed_same_problem_and_different_seeds_differ():
    a = make_testbed_problem("mlp", input_dim=2, num_train=10, seed=4)
    b = make_testbed_problem("mlp", input_dim=2, num_train=10, seed=4)
    c = make_testbed_problem("mlp", input_dim=2, num_train=10, seed=5)
    assert np.array_equal(a.train_data.x, b.train_data.x)
    assert not np.array_equal(a.train_data.x, c.train_data.x)


def test_problems_of_equal_shapes_vmap_over_seeds():
    prior = MLPPrior(input_dim=2)
    keys = jax.random.split(jax.random.key(0), 4)
    params, data = jax.vmap(sample_environment, (0, None, None))(keys, prior, 12)
    assert data.x.shape == (4, 12, 2) and data.y.shape == (4, 12)
    one_params, one_data = sample_environment(keys[2], prior, 12)
    np.testing.assert_array_equal(data.x[2], one_data.x)
    np.testing.assert_array_equal(params[0]["w"][2], one_params[0]["w"])


def test_label_log_likelihood_batches():
    logits = jax.random.normal(jax.random.key(0), (3, 5, 2))
    y = jnp.zeros((3, 5), jnp.int32)
    out = label_log_likelihood(logits, y)
    assert out.shape == (3,)
    np.testing.assert_allclose(out, jax.nn.log_softmax(logits)[..., 0].sum(-1), rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(input_dim=0), "input_dim"),
        (dict(num_train=-1), "num_train"),
        (dict(temperature=0.0), "temperature"),
        (dict(tau=0), "tau"),
        (dict(kappa=0), "kappa"),
        (dict(prior="gp"), "prior"),
        (dict(num_classes=1), "num_classes"),
        (dict(prior="logistic", num_classes=3), "num_classes"),
    ],
)
def test_invalid_problem_arguments_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        make_testbed_problem(**kwargs)


def _env_bytes(problem):
    return b"".join(np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(problem.env_params))


def test_each_setting_has_its_own_environment_and_designs_share_it():
    """As in the reference sweeps: a new environment per (T, beta, seed); tau and kappa
    do not change the environment or the training data."""
    base = make_testbed_problem("mlp", 2, 10, 0.1, tau=1, seed=0)
    same = [
        make_testbed_problem("mlp", 2, 10, 0.1, tau=10, seed=0),
        make_testbed_problem("mlp", 2, 10, 0.1, tau=10, kappa=2, seed=0),
    ]
    for other in same:
        assert _env_bytes(other) == _env_bytes(base)
        np.testing.assert_array_equal(other.train_data.x, base.train_data.x)
    different = [
        make_testbed_problem("mlp", 2, 100, 0.1, seed=0),
        make_testbed_problem("mlp", 2, 10, 0.5, seed=0),
        make_testbed_problem("mlp", 2, 10, 0.1, seed=1),
    ]
    for other in different:
        assert _env_bytes(other) != _env_bytes(base)


def test_fit_and_evaluation_streams_never_reuse_the_data_keys():
    """Regression: under partitionable threefry split(k)[i] == fold_in(k, i); the fit
    key once equalled the training-data key. Every purpose key of a problem, and the
    first-level children of the data and environment keys, must be distinct."""
    from decision_bench._src import keys

    root = keys.problem_key(0, 2, 10, 0.1)
    tags = (keys.ENV_TAG, keys.DATA_TAG, keys.FIT_TAG, keys.EVAL_TAG)
    purpose = [jax.random.fold_in(root, t) for t in tags]
    children = [jax.random.fold_in(k, i) for k in purpose[:2] for i in range(4)]
    seen = {np.asarray(jax.random.key_data(k)).tobytes() for k in purpose + children}
    assert len(seen) == len(purpose) + len(children)


@pytest.mark.parametrize("kappa", [None, 2, 10])
def test_polyadic_test_is_the_same_draw_as_sample_test(kappa):
    """sample_polyadic_test keeps the design (distinct inputs, positions) of the
    tau-sample that sample_test returns for the same key."""
    from decision_bench.envs.testbed import sample_polyadic_test, sample_test

    prior = MLPPrior(input_dim=2, temperature=0.1)
    params = prior.init(jax.random.key(0))
    key = jax.random.key(7)
    design = sample_polyadic_test(key, prior, params, 10, kappa)
    plain = sample_test(key, prior, params, 10, kappa)
    assert design.inputs.shape == (10 if kappa is None else kappa, 2)
    np.testing.assert_array_equal(np.asarray(design.inputs[design.pick]), np.asarray(plain.x))
    np.testing.assert_array_equal(np.asarray(design.y), np.asarray(plain.y))
    if kappa is None:
        np.testing.assert_array_equal(np.asarray(design.pick), np.arange(10))
