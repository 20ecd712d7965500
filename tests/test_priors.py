import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench.priors import CoinsPrior, LogisticPrior, MLPPrior, make_prior


def _many_mlps(prior, n, seed=0):
    return jax.vmap(prior.init)(jax.random.split(jax.random.key(seed), n))


def test_first_layer_bias_has_variance_one_over_input_dim():
    d, n = 4, 2000
    params = _many_mlps(MLPPrior(input_dim=d), n)
    bias = np.asarray(params[0]["b"]).ravel()  # n * 50 draws of N(0, 1/d)
    # var of a sample variance of m normals is 2 sigma^4 / (m - 1); allow 5 standard errors
    # (draws within one MLP are independent, so m = bias.size).
    target = 1.0 / d
    assert abs(bias.var() - target) < 5 * target * np.sqrt(2.0 / (bias.size - 1))
    assert abs(bias.mean()) < 5 * np.sqrt(target / bias.size)


def test_other_biases_are_zero():
    params = MLPPrior(input_dim=3).init(jax.random.key(1))
    assert all(np.all(np.asarray(layer["b"]) == 0) for layer in params[1:])


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_weights_are_uncorrected_truncated_normal_as_in_the_reference(layer):
    """haiku's hk.Linear default: (1/sqrt(fan_in)) * N(0, 1) truncated to [-2, 2],
    WITHOUT dividing by the truncated normal's std, so std = 0.8796 / sqrt(fan_in)."""
    prior = MLPPrior(input_dim=5)
    params = _many_mlps(prior, 200)
    w = np.asarray(params[layer]["w"]).ravel()
    fan_in = prior.layer_sizes[layer]
    std = 0.8796256610342398 / np.sqrt(fan_in)
    # sd of a sample std is at most std / sqrt(2 n) here (the truncated normal has
    # lighter tails than a normal, whose value this is); 5 of them
    assert abs(w.std() - std) < 5 * std / np.sqrt(2 * w.size)
    # the corrected (flax lecun_normal) scale is 14% wider: far outside that bound
    assert abs(w.std() - 1.0 / np.sqrt(fan_in)) > 20 * std / np.sqrt(2 * w.size)
    # truncated at two standard deviations of the untruncated normal 1/sqrt(fan_in)
    assert np.abs(w).max() <= 2.0 / np.sqrt(fan_in) + 1e-6
    assert np.abs(w).max() > 1.9 / np.sqrt(fan_in)


def test_logits_scale_as_one_over_temperature():
    hot, cold = MLPPrior(input_dim=2, temperature=0.5), MLPPrior(input_dim=2, temperature=0.01)
    params = hot.init(jax.random.key(2))
    x = hot.sample_inputs(jax.random.key(3), 7)
    np.testing.assert_allclose(cold.logits(params, x) * 0.01, hot.logits(params, x) * 0.5, rtol=1e-5)
    np.testing.assert_allclose(hot.logits(params, x), hot.raw_logits(params, x) / 0.5, rtol=1e-6)


def test_sampling_many_environments_is_one_vmap():
    prior = MLPPrior(input_dim=2, hidden_sizes=(7,), num_classes=3)
    params = _many_mlps(prior, 4)
    assert params[0]["w"].shape == (4, 2, 7) and params[1]["w"].shape == (4, 7, 3)
    x = prior.sample_inputs(jax.random.key(0), 5)
    logits = jax.vmap(prior.logits, (0, None))(params, x)
    assert logits.shape == (4, 5, 3)
    assert not np.allclose(logits[0], logits[1])


@pytest.mark.parametrize("activation", ["relu", "tanh", "swish", "sigmoid", "selu", "leaky_relu", "gelu"])
def test_every_activation_gives_finite_logits(activation):
    prior = MLPPrior(input_dim=3, activation=activation)
    x = prior.sample_inputs(jax.random.key(0), 10)
    assert np.all(np.isfinite(prior.logits(prior.init(jax.random.key(1)), x)))


def test_logistic_prior_probability_is_sigmoid_of_phi_x_over_temperature():
    prior = LogisticPrior(input_dim=3, temperature=0.1)
    params = prior.init(jax.random.key(0))
    x = prior.sample_inputs(jax.random.key(1), 6)
    p1 = jax.nn.softmax(prior.logits(params, x))[:, 1]
    np.testing.assert_allclose(p1, jax.nn.sigmoid(x @ params["phi"] / 0.1), rtol=1e-5)


def test_coins_prior_inputs_are_one_hot_and_probabilities_are_the_coins():
    prior = CoinsPrior(num_coins=4)
    params = prior.init(jax.random.key(0))
    x = prior.sample_inputs(jax.random.key(1), 50)
    assert np.all(np.asarray(x).sum(1) == 1)
    p1 = jax.nn.softmax(prior.logits(params, x))[:, 1]
    np.testing.assert_allclose(p1, x @ params["p"], rtol=1e-5)


def test_coin_probabilities_are_uniform():
    p = np.asarray(jax.vmap(CoinsPrior(8).init)(jax.random.split(jax.random.key(0), 500))["p"]).ravel()
    # mean of U(0,1) is 1/2 with variance 1/12
    assert abs(p.mean() - 0.5) < 5 * np.sqrt(1 / 12 / p.size)


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(input_dim=0), "input_dim"),
        (dict(input_dim=2, temperature=0.0), "temperature"),
        (dict(input_dim=2, temperature=float("nan")), "temperature"),
        (dict(input_dim=2, activation="softplus"), "activation"),
        (dict(input_dim=2, hidden_sizes=()), "hidden_sizes"),
        (dict(input_dim=2, hidden_sizes=(10, 0)), "hidden_sizes"),
        (dict(input_dim=2, num_classes=1), "num_classes"),
    ],
)
def test_invalid_mlp_prior_arguments_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        MLPPrior(**kwargs)


def test_unknown_prior_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="coins"):
        make_prior("gaussian_process", 2)
