"""Agent families: the checks specific to one family (regularisation formulas, dropout,
ensembles and bootstrap, the prior and logistic baselines, fit's batching)."""

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
from decision_bench.envs.testbed import Dataset
from decision_bench.priors import MLPPrior, mlp_forward
from decision_bench.specs import ProblemSpec

from test_contract import NUM_TRAIN, SPEC, fitted, sampler, separable_data, small_agent, small_overrides


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


def test_ensemble_plus_prior_is_fixed_and_members_are_trained():
    agent, data, initial, state = fitted("ensemble+")
    jax.tree.map(np.testing.assert_array_equal, state.prior_params, initial.prior_params)
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), state.params, initial.params)
    assert all(jax.tree.leaves(changed))
    # The prior contributes prior_scale / sqrt(beta) times a 50-50 ReLU MLP's output,
    # initialised as enn's ensemble MLP with nonzero_bias=True: a truncated-normal
    # first-layer bias of scale 1/sqrt(d), the other biases zero.
    config = agents.config("ensemble+", **small_overrides("ensemble+"))
    member0 = jax.tree.map(lambda p: p[0], state.prior_params)
    first_bias = np.asarray(state.prior_params[0]["b"])
    assert np.all(first_bias != 0) and np.abs(first_bias).max() <= 2 / np.sqrt(2) + 1e-6
    assert all(np.all(np.asarray(layer["b"]) == 0) for layer in member0[1:])
    trained_bias = np.asarray(initial.params["params"]["Dense_0"]["bias"])
    assert np.all(trained_bias != 0) and np.abs(trained_bias).max() <= 2 / np.sqrt(2) + 1e-6
    trained0 = jax.tree.map(lambda p: p[0], state.params)
    net = mlp.MLP((50, 50), 2)
    expected = net.apply(trained0, data.x[:4]) + config.prior_scale / math.sqrt(
        SPEC.temperature
    ) * mlp_forward(member0, data.x[:4], "relu")
    members = jax.jit(agent.member_logits)(state, data.x[:4])
    np.testing.assert_allclose(members[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["exponential", "bernoulli"])
def test_bootstrap_weights_have_mean_one(kind):
    weights = np.asarray(ensemble.bootstrap_weights(jax.random.key(5), kind, (5, 2000)))
    # Both laws have mean 1 and standard deviation 1: 5 standard errors.
    assert abs(weights.mean() - 1.0) < 5.0 / math.sqrt(weights.size)
    assert np.all(weights >= 0)
    if kind == "bernoulli":
        assert set(np.unique(weights)) == {0.0, 2.0}
    assert np.all(np.asarray(ensemble.bootstrap_weights(jax.random.key(5), "none", (2, 3))) == 1)


def test_bootstrap_weights_are_stored_and_looked_up_by_index():
    agent, data, initial, state = fitted("ensemble+")
    # Default "none": a [M, 1] table of ones, the same for every index.
    assert initial.bootstrap_weights.shape == (5, 1)
    assert np.all(np.asarray(initial.bootstrap_weights) == 1.0)
    # Member 0 has weight 0 on every example, member 1 weight 2; with l2 = 0
    # member 0 gets no gradient at all. Indices 4..7 wrap to 0..3 (modulo 4).
    weights = jnp.zeros((5, 4)).at[1:].set(2.0)
    start = initial._replace(bootstrap_weights=weights)
    # every member in every step, so only the bootstrap weights decide who moves
    update = jax.jit(
        agents.make("ensemble+", SPEC, num_ensemble=5, l2=0.0, member_sampling="all").update
    )
    x = data.x[:4]
    batch = agents.Batch(x, data.y[:4], jnp.float32(NUM_TRAIN), jnp.arange(4) + 4)
    new = update(jax.random.key(8), start, batch)
    moved = jax.tree.map(
        lambda a, b: np.asarray(jnp.any(a != b, axis=tuple(range(1, a.ndim)))),
        new.params,
        start.params,
    )
    for leaf in jax.tree.leaves(moved):
        assert not leaf[0] and leaf[1:].all()


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


def test_ensemble_members_are_drawn_with_replacement_each_step():
    """The reference averages the loss over M member indices drawn with replacement:
    member weights are counts / M, and about (1 - 1/M)^M of members sit out a step."""
    num_members = 100
    keys = jax.random.split(jax.random.key(0), 200)
    weights = np.asarray(jax.vmap(lambda k: ensemble.member_weights(k, num_members, "with_replacement"))(keys))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(weights * num_members, np.round(weights * num_members), atol=1e-4)
    idle = (weights == 0).mean()
    expected = (1 - 1 / num_members) ** num_members  # 0.366
    # 20,000 Bernoulli-ish indicators, weakly dependent within a row: 5 standard errors
    assert abs(idle - expected) < 5 * math.sqrt(expected * (1 - expected) / 200)
    np.testing.assert_array_equal(ensemble.member_weights(keys[0], 4, "all"), np.full(4, 0.25))


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
