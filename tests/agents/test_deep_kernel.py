"""deep_kernel: the Bayesian linear head against its closed form, and joint (not
product-of-marginal) predictions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents._src.networks import relu_mlp
from decision_bench.agents.core import hyper_of
from decision_bench.agents.deep_kernel import features, head_factor, logit_covariance, logit_scale
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=40)


@functools.lru_cache(maxsize=None)
def _fitted():
    agent = agents.make("deep_kernel", SPEC, hidden_sizes=(16, 8), num_steps=200)
    x = jax.random.normal(jax.random.key(0), (40, 2), jnp.float32)
    data = Dataset(x, (x[:, 0] * x[:, 1] > 0).astype(jnp.int32))
    return agent, data, agents.fit(agent, jax.random.key(1), data, SPEC)


def test_head_factor_is_the_textbook_posterior_covariance():
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(20, 4)).astype(np.float32)
    phi[15:] = 0.0  # unseen rows are zeroed and must not count
    phi_test = rng.normal(size=(6, 4))
    sigma2 = 0.4
    a = np.asarray(head_factor(jnp.asarray(phi), jnp.float32(sigma2)), np.float64)
    p = phi[:15].astype(np.float64)
    # Bayesian linear regression, w ~ N(0, I), z = Phi w + N(0, sigma^2): Cov = (I + Phi^T Phi / sigma^2)^-1.
    textbook = np.linalg.inv(np.eye(4) + p.T @ p / sigma2)
    # f32 Cholesky and solve: error ~ cond(M) * eps32 = (0.4 + |Phi|^2) / 0.4 * 1.2e-7 ~ 1e-5.
    np.testing.assert_allclose(a @ a.T, textbook, rtol=1e-4, atol=1e-6)
    # The paper's GP form with the T x T inverse (App. C.9) gives the same test covariance.
    k_ss, k_st, k_tt = phi_test @ phi_test.T, phi_test @ p.T, p @ p.T
    gp = k_ss - k_st @ np.linalg.solve(sigma2 * np.eye(15) + k_tt, k_st.T)
    np.testing.assert_allclose(phi_test @ a @ a.T @ phi_test.T, gp, rtol=1e-4, atol=1e-5)
    # No data: the prior, A A^T = I.
    empty = np.asarray(head_factor(jnp.zeros((5, 4)), jnp.float32(sigma2)))
    np.testing.assert_allclose(empty @ empty.T, np.eye(4), rtol=1e-6, atol=1e-7)


def test_sampled_logits_have_the_closed_form_mean_and_covariance():
    agent, data, state = _fitted()
    hyper = hyper_of(agent)
    x = jnp.concatenate([data.x[:2], jnp.array([[0.5, -1.5]])])
    n_draws = 4000
    keys = jax.random.split(jax.random.key(2), n_draws)
    draws = np.asarray(jax.jit(jax.vmap(agent.sample_logits, (0, None, None)))(keys, state, x), np.float64)
    mean = np.asarray(relu_mlp(state.params, x), np.float64)
    cov = np.asarray(logit_covariance(hyper, state, x), np.float64)  # [3, 3], each class
    assert np.all(np.diag(cov) > 0)
    dev = draws - mean  # [N, 3, C]
    var = np.diag(cov)
    for c in range(SPEC.num_classes):
        # Mean: standard error sqrt(var / N); covariance entry (i, j) of a Gaussian
        # sample: standard error sqrt((var_i var_j + cov_ij^2) / N). 5 standard errors.
        np.testing.assert_array_less(np.abs(dev[:, :, c].mean(0)), 5 * np.sqrt(var / n_draws))
        emp = dev[:, :, c].T @ dev[:, :, c] / n_draws
        bound = 5 * np.sqrt((np.outer(var, var) + cov**2) / n_draws)
        np.testing.assert_array_less(np.abs(emp - cov), bound)
    # Classes are drawn independently: zero cross-class covariance.
    cross = dev[:, :, 0].T @ dev[:, :, 1] / n_draws
    np.testing.assert_array_less(np.abs(cross), 5 * np.sqrt(np.outer(var, var) / n_draws))


def test_joint_predictions_are_not_products_of_marginals():
    agent, data, state = _fitted()
    # An input near the class boundary (x0 x1 = 0), twice, and a training input.
    x = jnp.array([[0.05, 1.0], [0.05, 1.0], [-1.0, 0.5]], jnp.float32)
    keys = jax.random.split(jax.random.key(3), 2000)
    draws = jax.vmap(agent.sample_logits, (0, None, None))(keys, state, x)
    # One head per draw, applied to every input: the duplicated input gets the very
    # same logits within a draw, while different keys give different logits.
    np.testing.assert_array_equal(draws[:, 0], draws[:, 1])
    assert not np.allclose(draws[0], draws[1])
    # So the joint probability of one label at both copies is E[p^2] = (E p)^2 + Var p,
    # above the product of marginals by Var p / (E p)^2 relative; f32 rounding of p
    # is ~1e-7 relative, so a 0.1% margin is the sampled head's doing (here the
    # excess is ~0.7%, known to ~3% of itself from 2000 draws).
    p = np.asarray(jax.nn.softmax(draws, -1)[:, 0, 1], np.float64)
    joint, product = float(np.mean(p * p)), float(np.mean(p)) ** 2
    assert joint > 1.001 * product, (joint, product)


def test_state_keeps_every_row_and_the_scale_uses_num_seen():
    agent, data, state = _fitted()
    assert int(state.data.seen.sum()) == SPEC.num_train
    np.testing.assert_array_equal(state.data.x, data.x)
    assert float(state.num_seen) == SPEC.num_train
    hyper = hyper_of(agent)
    # c = scale_factor / sqrt(T beta) = 2 / sqrt(40 * 0.1)
    np.testing.assert_allclose(logit_scale(hyper, state.num_seen), 1.0, rtol=1e-6)
    assert features(state.params, data.x).shape == (SPEC.num_train, 8)


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        (dict(scale_factor=0.0), "scale_factor"),
        (dict(sigma_squared_factor=-1.0), "sigma_squared_factor"),
        (dict(hidden_sizes=()), "hidden_sizes"),
        (dict(l2=-1.0), "l2"),
    ],
)
def test_bad_hyperparameters_name_the_parameter(overrides, parameter):
    with pytest.raises(ValueError, match=parameter) as err:
        agents.make("deep_kernel", SPEC, **overrides)
    assert "\n" not in str(err.value)
