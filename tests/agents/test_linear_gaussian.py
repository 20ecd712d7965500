"""linear_gaussian: the Normal-Inverse-Gamma posterior against its closed form, and
where the registry lets it (and 0/1-reward agents) run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents.base import Batch
from decision_bench.agents.linear_gaussian import posterior
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.specs import ProblemSpec

DIM = 3
SPEC = ProblemSpec(input_dim=DIM, num_classes=2, temperature=1.0, num_train=100)


def _data(n=40):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    y = (x @ np.array([0.5, -1.0, 2.0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return x, y


def _batch(x, y):
    return Batch(x=jnp.asarray(x), y=jnp.asarray(y), num_seen=jnp.float32(len(y)), index=jnp.arange(len(y)))


def test_posterior_is_the_closed_form_normal_inverse_gamma():
    agent = agents.make("linear_gaussian", SPEC, prior_a=3.0, prior_b=2.0, prior_precision=0.5)
    x, y = _data()
    state = agent.update(jax.random.key(0), agent.init(jax.random.key(0)), _batch(x, y))
    mean, chol, a_n, b_n = posterior(agent.init.args[0], state)
    # closed form, independently in float64
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    precision = x64.T @ x64 + 0.5 * np.eye(DIM)
    mu = np.linalg.solve(precision, x64.T @ y64)
    np.testing.assert_allclose(np.asarray(mean), mu, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(chol @ chol.T), precision, rtol=1e-5)
    assert float(a_n) == pytest.approx(3.0 + len(y) / 2)
    assert float(b_n) == pytest.approx(2.0 + (y64 @ y64 - mu @ precision @ mu) / 2, rel=1e-3)


def test_one_batch_update_equals_one_update_per_observation():
    agent = agents.make("linear_gaussian", SPEC)
    x, y = _data(10)
    whole = agent.update(jax.random.key(0), agent.init(jax.random.key(0)), _batch(x, y))
    online = agent.init(jax.random.key(0))
    for i in range(len(y)):
        online = agent.update(jax.random.key(i), online, _batch(x[i : i + 1], y[i : i + 1]))
    for a, b in zip(whole, online):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_draws_have_the_posterior_mean_and_student_t_variance():
    agent = agents.make("linear_gaussian", SPEC)
    x, y = _data(8)  # few observations: a wide posterior
    state = agent.update(jax.random.key(0), agent.init(jax.random.key(0)), _batch(x, y))
    probe = jnp.asarray([[1.0, 0.5, -0.5]], jnp.float32)
    draws = 20_000
    logits = jax.jit(jax.vmap(lambda k: agent.sample_logits(k, state, probe)))(jax.random.split(jax.random.key(1), draws))
    assert np.all(np.asarray(logits[..., 0]) == 0.0)  # scores: (0, sampled mean reward)
    score = np.asarray(logits[:, 0, 1], np.float64)
    mean, chol, a_n, b_n = (np.asarray(v, np.float64) for v in posterior(agent.init.args[0], state))
    p = np.asarray(probe[0], np.float64)
    covariance = np.linalg.inv(chol @ chol.T)
    # marginally w is multivariate t: E = mu_n, Var = b_n / (a_n - 1) Lambda_n^{-1}
    variance = float(b_n / (a_n - 1) * p @ covariance @ p)
    assert abs(score.mean() - p @ mean) <= 5 * np.sqrt(variance / draws)
    # the sample variance's standard error, with the t's kurtosis (2 a_n degrees of freedom)
    nu = 2 * float(a_n)
    excess_kurtosis = 6 / (nu - 4)
    assert abs(score.var(ddof=1) - variance) <= 5 * variance * np.sqrt((2 + excess_kurtosis) / draws)


def test_registry_keeps_real_reward_agents_and_01_agents_apart():
    check_inputs_fit("linear_gaussian", "WheelBandit-v0", one_hot=False, real_rewards=True)
    check_inputs_fit("mlp", "NeuralBandit-v0", one_hot=False)
    with pytest.raises(ValueError, match="linear_gaussian.*real-valued.*the testbed has 0/1 labels"):
        check_inputs_fit("linear_gaussian", "the testbed", one_hot=False)
    with pytest.raises(ValueError, match="'mlp' predicts 0/1 rewards.*WheelBandit-v0; use linear_gaussian"):
        check_inputs_fit("mlp", "WheelBandit-v0", one_hot=False, real_rewards=True)


def test_bad_prior_is_a_one_line_error_naming_it():
    with pytest.raises(ValueError, match=r"^prior_precision must be a finite number > 0, got -1"):
        agents.make("linear_gaussian", SPEC, prior_precision=-1)
