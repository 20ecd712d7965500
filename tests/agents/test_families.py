"""Agent families: the checks specific to one family (regularisation formulas, dropout,
the prior and logistic baselines); ensembles have test_ensemble.py, fit test_training.py."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from decision_bench import agents
from decision_bench.agents import baselines, dropout, ensemble, mlp
from decision_bench.agents.regularization import decayed_weight
from decision_bench.priors import MLPPrior
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

from test_contract import SPEC, fitted, sampler


# ---------------------------------------------------------------- regularisation


def test_decayed_weight_matches_hand_computed_numbers():
    root_beta = math.sqrt(0.1)
    # testbed: lambda d sqrt(beta) / (M T)
    w = decayed_weight(1.0, 1000, input_dim=2, temperature=0.1, mode="testbed")
    assert float(w) == pytest.approx(2 * root_beta / 1000, rel=1e-6)  # 6.3246e-4
    w = decayed_weight(1.0, 1000, input_dim=2, temperature=0.1, num_members=100)
    assert float(w) == pytest.approx(6.324555e-6, rel=1e-6)
    w = decayed_weight(3.0, 10, input_dim=10, temperature=0.5)
    assert float(w) == pytest.approx(3 * 10 * math.sqrt(0.5) / 10, rel=1e-6)
    # sequential: lambda 2 sqrt(beta) / (M t), independent of d
    w = decayed_weight(1.0, 50, input_dim=7, temperature=0.1, mode="sequential")
    assert float(w) == pytest.approx(0.0126491106, rel=1e-6)
    w = decayed_weight(1.0, 50, input_dim=7, temperature=0.1, mode="sequential", num_members=10)
    assert float(w) == pytest.approx(0.00126491106, rel=1e-6)
    # before any data the weight is that of one observation, not infinite
    w0 = decayed_weight(1.0, 0, input_dim=2, temperature=0.1, mode="sequential")
    assert float(w0) == pytest.approx(2 * root_beta, rel=1e-6)


def test_agent_weights_follow_the_formulas():
    spec = ProblemSpec(input_dim=2, temperature=0.1, num_train=1000)
    rb = math.sqrt(0.1)
    T, t = 1000, 37
    cases = [
        (mlp.l2_weight, mlp.MLPConfig(l2=1.0), 2 * rb / T, 2 * rb / t),
        (baselines.l2_weight, baselines.LogisticConfig(l2=0.5), 0.5 * 2 * rb / T, 0.5 * 2 * rb / t),
        (
            ensemble.l2_weight,
            ensemble.EnsembleConfig(num_ensemble=100),
            2 * rb / (100 * T),
            2 * rb / (100 * t),
        ),
        (
            ensemble.l2_weight,
            ensemble.EnsemblePlusConfig(num_ensemble=10, l2=3.0),
            3 * 2 * rb / (10 * T),
            3 * 2 * rb / (10 * t),
        ),
        # dropout: l d sqrt(beta) / T and 2 sqrt(beta) l / t
        (
            dropout.l2_weight,
            dropout.DropoutConfig(length_scale=3.0),
            3 * 2 * rb / T,
            2 * rb * 3 / t,
        ),
    ]
    for weight_fn, config, testbed, sequential in cases:
        assert float(weight_fn(spec, config, T)) == pytest.approx(testbed, rel=1e-6)
        sequential_spec = dataclasses.replace(spec, regularization="sequential")
        assert float(weight_fn(sequential_spec, config, t)) == pytest.approx(sequential, rel=1e-6)


# ---------------------------------------------------------------- specific agents


def test_dropout_identical_inputs_get_identical_logits():
    agent, data, initial, state = fitted("dropout")
    x = jnp.stack([data.x[0], data.x[0], data.x[1], data.x[0]])
    logits = sampler("dropout")(jax.random.split(jax.random.key(4), 6), state, x)
    np.testing.assert_array_equal(logits[:, 0], logits[:, 1])
    np.testing.assert_array_equal(logits[:, 0], logits[:, 3])
    assert len({np.asarray(l[0]).tobytes() for l in logits}) > 1  # masks vary by key


def test_prior_baseline_has_the_generative_statistics():
    agent = agents.make("prior", SPEC)
    state = agent.init(jax.random.key(0))
    x = jnp.array([[0.0, 0.0], [1.0, -0.5], [-2.0, 1.5]])
    n = 4000
    ours = np.asarray(
        jax.jit(jax.vmap(agent.sample_logits, (0, None, None)))(
            jax.random.split(jax.random.key(9), n), state, x
        )
    )
    gen = MLPPrior(2, temperature=SPEC.temperature)
    theirs = np.asarray(
        jax.jit(jax.vmap(lambda k: gen.logits(gen.init(k), x)))(
            jax.random.split(jax.random.key(10), n)
        )
    )
    assert ours.shape == theirs.shape == (n, 3, 2)
    m1, m2 = ours.mean(0), theirs.mean(0)
    v1, v2 = ours.var(0), theirs.var(0)
    # Means: the prior is symmetric (zero-mean last layer), so E[logit] = 0; and
    # the two samples agree, each within 5 standard errors.
    assert np.all(np.abs(m1) < 5 * np.sqrt(v1 / n))
    assert np.all(np.abs(m1 - m2) < 5 * np.sqrt(v1 / n + v2 / n))
    # Variances: the standard error of a sample variance is sqrt((mu4 - var^2) / n).
    se_var = np.sqrt(
        ((((ours - m1) ** 4).mean(0) - v1**2) + (((theirs - m2) ** 4).mean(0) - v2**2)) / n
    )
    assert np.all(np.abs(v1 - v2) < 5 * se_var)
    # The logits are divided by the temperature: raw scale is order 1, so 1/beta = 10.
    assert 1.0 < float(np.sqrt(v1.mean())) < 100.0


def test_logistic_agent_finds_the_bayesian_posterior_mode():
    """L2-regularised logistic regression = MAP of Bayesian logistic regression.

    1-D input, temperature 1, T = 30, l2 = 1: the agent minimises
    F(W, b) = mean xent + w (|W|^2 + |b|^2) with w = l2 d sqrt(beta) / T = 1/30.
    The logit difference z = theta x + c, theta = W1 - W0, c = b1 - b0, and at the
    optimum the penalty is (w / 2)(theta^2 + c^2): T F is the negative log
    posterior of (theta, c) under the prior N(0, I / (w T)) = N(0, I). We compute
    that posterior's mode independently (scipy, float64) and bound the agent's
    distance to it by strong convexity: F has Hessian >= 2w I in (W, b), so
    |p - p*| <= |grad F(p)| / (2w), and |(theta, c) - (theta*, c*)| <= sqrt(2) |p - p*|.
    """
    T = 30
    spec = ProblemSpec(input_dim=1, temperature=1.0, num_train=T)
    rng = np.random.default_rng(0)
    x = rng.normal(size=T)
    y = (rng.uniform(size=T) < 1 / (1 + np.exp(-(2.0 * x + 0.5)))).astype(np.int64)
    data = Dataset(jnp.asarray(x[:, None], jnp.float32), jnp.asarray(y, jnp.int32))

    # A small learning rate makes the final iterate's gradient (and so the
    # derived tolerance) small; 1-D steps are cheap.
    agent = agents.make("logistic", spec, learning_rate=1e-3, num_steps=20_000)
    state = agents.fit_checked(agent, jax.random.key(0), data, spec, batch_size=T)
    kernel = np.asarray(state.params["params"]["kernel"], np.float64)  # [1, 2]
    bias = np.asarray(state.params["params"]["bias"], np.float64)  # [2]

    w = 1.0 * 1 * math.sqrt(1.0) / T
    sign = 2 * y - 1

    def neg_log_posterior(v):  # v = (theta, c); prior variance 1 / (w T) = 1
        z = v[0] * x + v[1]
        return np.logaddexp(0.0, -sign * z).sum() + 0.5 * w * T * (v @ v)

    mode = optimize.minimize(
        neg_log_posterior, np.zeros(2), method="BFGS", options={"gtol": 1e-12}
    ).x

    # Gradient of the agent's objective at its fitted params, written from the formula.
    z = kernel[0, 1] * x + bias[1] - kernel[0, 0] * x - bias[0]
    p1 = 1 / (1 + np.exp(-z))
    r = (p1 - y) / T  # d mean-xent / d z
    g_w1, g_b1 = (r * x).sum(), r.sum()
    grad = np.array([-g_w1, g_w1, -g_b1, g_b1]) + 2 * w * np.concatenate([kernel[0], bias])
    tolerance = math.sqrt(2) * np.linalg.norm(grad) / (2 * w) + 1e-6
    fitted_v = np.array([kernel[0, 1] - kernel[0, 0], bias[1] - bias[0]])
    assert np.linalg.norm(fitted_v - mode) <= tolerance, (fitted_v, mode, tolerance)
    # The bound must be tight enough to matter: far below the scale of the mode.
    assert tolerance < 0.05 * np.linalg.norm(mode)


def test_agent_networks_start_with_the_reference_initialiser():
    """haiku's hk.Linear default (the reference agents'): std 0.8796/sqrt(fan_in)."""
    spec = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=10)
    for name in ("mlp", "dropout"):
        agent = agents.make(name, spec)
        kernels = []
        for i in range(100):
            params = agent.init(jax.random.key(i)).params["params"]
            kernels.append(np.asarray(params[sorted(params)[1]]["kernel"]).ravel())
        w = np.concatenate(kernels)
        fan_in = 50 if name == "mlp" else 100
        std = 0.8796256610342398 / np.sqrt(fan_in)
        assert abs(w.std() - std) < 5 * std / np.sqrt(2 * w.size), name


def test_released_code_bandit_weight_is_linear_in_beta():
    """The reference code's bandit L2: lambda * 2 * beta / (M t); the paper's: 2 sqrt(beta)."""
    linear = decayed_weight(3.0, 50.0, input_dim=2, temperature=0.1, mode="sequential_linear_beta", num_members=4)
    paper = decayed_weight(3.0, 50.0, input_dim=2, temperature=0.1, mode="sequential", num_members=4)
    assert float(linear) == pytest.approx(3.0 * 2 * 0.1 / (4 * 50))
    assert float(paper) == pytest.approx(3.0 * 2 * math.sqrt(0.1) / (4 * 50))
    spec = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, regularization="sequential_linear_beta")
    config = agents.config("epinet")
    from decision_bench.agents import epinet

    assert float(epinet.l2_weight(spec, config, jnp.float32(50.0))) == pytest.approx(
        config.l2 * 2 * 0.1 / 50
    )
