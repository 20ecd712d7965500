"""Tests of the Bayesian agent families: bbb, hypermodel, epinet, sgmcmc.

Small configs via registry overrides keep each fit to a fraction of a second
after compilation. The posterior check runs SGLD / SGHMC on Bayesian logistic
regression in one dimension and compares with quadrature, with a tolerance
derived from the between-chain Monte Carlo error.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench.agents import Batch, fit, make
from decision_bench.agents import bbb as bbb_mod
from decision_bench.agents import epinet as epinet_mod
from decision_bench.agents import hypermodel as hypermodel_mod
from decision_bench.agents import sgmcmc as sgmcmc_mod
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=100)

# Small versions of each registered agent ("sgmcmc" differs from "sgmcmc_quick"
# only in its defaults); the defaults are exercised by the formula tests and by
# the registry-wide contract tests.
SMALL = {
    "bbb": dict(hidden_sizes=(16, 16), num_steps=300),
    "hypermodel": dict(hidden_sizes=(16, 16), num_index_samples=4, num_steps=300),
    "epinet": dict(hidden_sizes=(16, 16), num_index_samples=4, num_steps=300),
    "sgmcmc_quick": dict(hidden_sizes=(16, 16), num_steps=1200, burn_in=200, keep_every=50),
}
NAMES = sorted(SMALL)


def _separable_data(key: jax.Array, n: int) -> Dataset:
    """x ~ N(0, I_2), y = 1[x_0 + x_1 > 0]: linearly separable."""
    x = jax.random.normal(key, (n, 2), jnp.float32)
    return Dataset(x, (x.sum(-1) > 0).astype(jnp.int32))


def _sig(tree):
    return jax.tree.map(lambda a: (jnp.shape(a), jnp.result_type(a)), tree)


@pytest.fixture(scope="module")
def trained():
    """name -> (agent, state at init, state after fit, train data, test data)."""
    train = _separable_data(jax.random.key(1), SPEC.num_train)
    test = _separable_data(jax.random.key(2), 200)
    out = {}
    for name in NAMES:
        agent = make(name, SPEC, **SMALL[name])
        k_fit = jax.random.key(3)
        # fit splits its key into (init, steps) and inits under jit: the same
        # key and jit give its exact initial state.
        init_state = jax.jit(agent.init)(jax.random.split(k_fit)[0])
        state = fit(agent, k_fit, train, SPEC)
        out[name] = (agent, init_state, state, train, test)
    return out


def _mean_probs(agent, state, x, num_samples=32):
    """Posterior-predictive class probabilities [n, C] from num_samples draws."""
    keys = jax.random.split(jax.random.key(7), num_samples)
    draw = jax.jit(jax.vmap(agent.sample_logits, (0, None, None)))
    return jax.nn.softmax(draw(keys, state, x), -1).mean(0)


def _nll(probs, y):
    return float(-jnp.log(jnp.take_along_axis(probs, y[:, None], -1) + 1e-12).mean())


# ---------------------------------------------------------------- contract


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_learning(trained, name):
    agent, init_state, state, _, test = trained[name]
    logits = agent.sample_logits(jax.random.key(0), state, test.x)
    assert logits.shape == (test.x.shape[0], SPEC.num_classes)
    assert logits.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(logits)))
    before = _mean_probs(agent, init_state, test.x)
    after = _mean_probs(agent, state, test.x)
    accuracy = float((after.argmax(-1) == test.y).mean())
    assert accuracy > 0.9, accuracy
    assert _nll(after, test.y) < _nll(before, test.y) - 0.1


@pytest.mark.parametrize("name", NAMES)
def test_same_key_same_sample_different_keys_differ(trained, name):
    agent, _, state, _, test = trained[name]
    a = agent.sample_logits(jax.random.key(11), state, test.x)
    b = agent.sample_logits(jax.random.key(11), state, test.x)
    c = agent.sample_logits(jax.random.key(12), state, test.x)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert float(jnp.abs(a - c).max()) > 1e-4


@pytest.mark.parametrize("name", NAMES)
def test_sample_is_joint_across_inputs(trained, name):
    agent, _, state, _, test = trained[name]
    x = test.x[:10]
    k = jax.random.key(5)
    twice = jnp.concatenate([x[:1], x[:1], x[1:]], 0)
    logits = agent.sample_logits(k, state, twice)
    np.testing.assert_array_equal(np.asarray(logits[0]), np.asarray(logits[1]))
    # One draw: the logits of an input do not depend on which other inputs are
    # in the call.
    np.testing.assert_allclose(
        np.asarray(agent.sample_logits(k, state, x)[:4]),
        np.asarray(agent.sample_logits(k, state, x[:4])),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", NAMES)
def test_state_signature_stable_under_jit_update(trained, name):
    agent, init_state, _, train, _ = trained[name]
    batch = Batch(train.x[:20], train.y[:20], jnp.float32(100.0), jnp.arange(20))
    new = jax.jit(agent.update)(jax.random.key(0), init_state, batch)
    assert _sig(new) == _sig(init_state)
    assert jax.tree.structure(new) == jax.tree.structure(init_state)


@pytest.mark.parametrize("name", NAMES)
def test_wrong_input_shape_names_both_shapes(trained, name):
    agent, _, state, _, _ = trained[name]
    with pytest.raises(ValueError, match=r"\(5, 3\).*input_dim=2"):
        agent.sample_logits(jax.random.key(0), state, jnp.zeros((5, 3)))


# ------------------------------------------------------------- per family


def test_fixed_priors_unchanged_by_fit(trained):
    _, init_state, state, _, _ = trained["hypermodel"]
    np.testing.assert_array_equal(np.asarray(init_state.prior_a), np.asarray(state.prior_a))
    _, init_state, state, _, _ = trained["epinet"]
    for a, b in zip(jax.tree.leaves(init_state.prior), jax.tree.leaves(state.prior)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sgmcmc_members_and_buffer(trained):
    agent, _, state, _, test = trained["sgmcmc_quick"]
    cfg = sgmcmc_mod.SGMCMCQuickConfig(**SMALL["sgmcmc_quick"])
    assert cfg.num_kept == (1200 - 200) // 50 == 20
    assert int(state.step) == 1200 and int(state.num_saved) == 20
    members = agent.member_logits(state, test.x[:7])
    assert members.shape == (20, 7, 2)
    # Kept models differ from one another (the chain moves) ...
    assert float(jnp.abs(members[0] - members[-1]).max()) > 1e-3
    # ... and every sample is one of the kept models.
    sample = agent.sample_logits(jax.random.key(3), state, test.x[:7])
    distance = jnp.abs(members - sample[None]).max(axis=(1, 2))
    assert float(distance.min()) < 1e-5


def test_sgmcmc_before_burn_in_uses_current_params(trained):
    agent, init_state, _, _, test = trained["sgmcmc_quick"]
    members = agent.member_logits(init_state, test.x[:3])
    sample = agent.sample_logits(jax.random.key(0), init_state, test.x[:3])
    np.testing.assert_allclose(np.asarray(members[0]), np.asarray(sample), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(members[-1]), np.asarray(sample), rtol=1e-6)


def test_bbb_sampled_kl_matches_analytical_kl():
    """E_q[log q(w) - log p(w)] = KL(q || p); the Monte Carlo mean over draws must
    agree within 4 standard errors computed from the draws themselves."""
    cfg = bbb_mod.BBBConfig(hidden_sizes=(8,), kl_method="sample")
    agent = bbb_mod.make_bbb(SPEC, cfg)
    state = agent.init(jax.random.key(0))
    # Widen the posterior so both KL terms matter.
    params = bbb_mod.BBBParams(
        mu=jax.tree.map(lambda m: 0.7 * m + 0.1, state.params.mu),
        rho=jax.tree.map(lambda r: jnp.full_like(r, -1.0), state.params.rho),
    )
    keys = jax.random.split(jax.random.key(1), 4000)
    draws = jax.jit(
        jax.vmap(lambda k: bbb_mod.sampled_kl(params, bbb_mod.sample_weights(params, k), cfg))
    )(keys)
    exact = float(bbb_mod.analytical_kl(params, cfg.sigma_1))
    se = float(draws.std()) / math.sqrt(draws.shape[0])
    assert abs(float(draws.mean()) - exact) < 4 * se, (float(draws.mean()), exact, se)


# ------------------------------------------------------------- formulas


@pytest.mark.parametrize("mode", ["testbed", "sequential"])
def test_regulariser_formulas(mode):
    spec = ProblemSpec(input_dim=10, temperature=0.25, num_train=300, regularization=mode)
    d, beta = 10, 0.25
    for n in (300.0, 7.0):
        numerator = d if mode == "testbed" else 2.0
        expected = numerator * math.sqrt(beta) / n
        w = bbb_mod.kl_weight(spec, bbb_mod.BBBConfig(kl_scale=1.5), n)
        assert float(w) == pytest.approx(1.5 * expected, rel=1e-6)
        w = hypermodel_mod.l2_weight(
            spec, hypermodel_mod.HypermodelConfig(l2=3.0), n
        )
        assert float(w) == pytest.approx(3.0 * expected, rel=1e-6)
        w = sgmcmc_mod.prior_weight(
            spec, sgmcmc_mod.SGMCMCConfig(prior_variance=0.1), n
        )
        assert float(w) == pytest.approx(expected / 0.1, rel=1e-6)
        w = epinet_mod.l2_weight(spec, epinet_mod.EpinetConfig(), n)
        want = 0.2 * (d / n) ** 0.7 if mode == "testbed" else 0.2 * expected
        assert float(w) == pytest.approx(want, rel=1e-6)


def test_sgmcmc_step_size_conventions():
    cfg = sgmcmc_mod.SGMCMCConfig(learning_rate=1e-4)
    assert float(sgmcmc_mod.step_size(cfg, 50.0)) == pytest.approx(2 * 1e-4 / 50, rel=1e-6)
    absolute = sgmcmc_mod.SGMCMCConfig(learning_rate=1e-4, per_example_lr=False)
    assert float(sgmcmc_mod.step_size(absolute, 50.0)) == pytest.approx(1e-4, rel=1e-6)


def test_paper_defaults():
    assert make("bbb", SPEC).num_steps == 1000
    assert make("hypermodel", SPEC).num_steps == 2000
    assert make("sgmcmc", SPEC).num_steps == 500_000
    assert make("sgmcmc_quick", SPEC).num_steps == 5_000
    assert sgmcmc_mod.SGMCMCConfig().num_kept == 400
    cfg = epinet_mod.EpinetConfig()
    assert (cfg.index_dim, cfg.l2, cfg.prior_scale) == (8, 0.2, 0.3)
    # 10x the steps when T / d > 500.
    assert make("epinet", ProblemSpec(input_dim=2, num_train=1000)).num_steps == 1000
    assert make("epinet", ProblemSpec(input_dim=2, num_train=1002)).num_steps == 10_000


# ------------------------------------------------------------- validation

BAD = [
    (bbb_mod.BBBConfig, dict(learning_rate=0.0), "learning_rate"),
    (bbb_mod.BBBConfig, dict(num_index_samples=0), "num_index_samples"),
    (bbb_mod.BBBConfig, dict(sigma_1=-1.0), "sigma_1"),
    (bbb_mod.BBBConfig, dict(mixture_weight=1.5), "mixture_weight"),
    (bbb_mod.BBBConfig, dict(kl_scale=-0.1), "kl_scale"),
    (bbb_mod.BBBConfig, dict(kl_method="exact"), "kl_method"),
    (bbb_mod.BBBConfig, dict(kl_method="analytical", mixture_weight=0.5), "mixture_weight"),
    (hypermodel_mod.HypermodelConfig, dict(index_dim=0), "index_dim"),
    (hypermodel_mod.HypermodelConfig, dict(l2=-1.0), "l2"),
    (hypermodel_mod.HypermodelConfig, dict(learning_rate=-1e-3), "learning_rate"),
    (hypermodel_mod.HypermodelConfig, dict(hidden_sizes=(0,)), "hidden_sizes"),
    (epinet_mod.EpinetConfig, dict(index_dim=0), "index_dim"),
    (epinet_mod.EpinetConfig, dict(l2=-0.2), "l2"),
    (epinet_mod.EpinetConfig, dict(prior_scale=-1.0), "prior_scale"),
    (epinet_mod.EpinetConfig, dict(num_steps=-1), "num_steps"),
    (sgmcmc_mod.SGMCMCConfig, dict(burn_in=500_000), "burn_in"),
    (sgmcmc_mod.SGMCMCConfig, dict(momentum=1.0), "momentum"),
    (sgmcmc_mod.SGMCMCConfig, dict(learning_rate=0.0), "learning_rate"),
    (sgmcmc_mod.SGMCMCConfig, dict(prior_variance=-0.1), "prior_variance"),
    (sgmcmc_mod.SGMCMCConfig, dict(num_steps=1000, burn_in=500, keep_every=600), "keep_every"),
    (sgmcmc_mod.SGMCMCQuickConfig, dict(burn_in=5_000), "burn_in"),
]


@pytest.mark.parametrize("config_class, kwargs, param", BAD)
def test_invalid_config_names_parameter_and_value(config_class, kwargs, param):
    with pytest.raises(ValueError, match=param) as info:
        config_class(**kwargs)
    value = next(iter(kwargs.values())) if len(kwargs) == 1 else kwargs[param]
    assert repr(value) in str(info.value) or str(value) in str(info.value)


def test_registry_overrides_reach_config():
    with pytest.raises(ValueError, match="index_dim"):
        make("epinet", SPEC, index_dim=0)
    with pytest.raises(ValueError, match="valid hyperparameters"):
        make("sgmcmc", SPEC, step_size=0.1)


# ----------------------------------------------------- posterior by quadrature


def _quadrature_moments(x, y, prior_var):
    """Posterior mean and variance of (dw, db) for P(y=1|x) = sigmoid(dw x + db),
    dw, db ~ N(0, prior_var) iid, by a fine 2-D grid (spacing 0.01 over +-7 prior
    std; the integrand is smooth and decays like a Gaussian, so the Riemann sum
    is accurate far beyond the Monte Carlo error)."""
    half = 7.0 * math.sqrt(prior_var)
    grid = np.linspace(-half, half, int(2 * half / 0.01) + 1)
    dw, db = np.meshgrid(grid, grid, indexing="ij")
    log_post = -(dw**2 + db**2) / (2 * prior_var)
    for xi, yi in zip(x, y):  # accumulate per example: no [grid, grid, n] array
        z = dw * xi + db
        log_post -= np.logaddexp(0.0, -z if yi == 1 else z)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = np.array([(w * dw).sum(), (w * db).sum()])
    var = np.array([(w * (dw - mean[0]) ** 2).sum(), (w * (db - mean[1]) ** 2).sum()])
    return mean, var


@pytest.mark.parametrize(
    "momentum, per_example_lr, learning_rate",
    [(0.0, False, 3e-3), (0.9, True, 3e-2)],  # both give the Langevin step h = 3e-3
    ids=["sgld", "sghmc"],
)
def test_sgmcmc_matches_quadrature_posterior(momentum, per_example_lr, learning_rate):
    """Logistic regression (hidden_sizes=()) in d = 1 with temperature 1: the
    agent's energy is sum_i xent_i + |theta|^2 / prior_variance, so the logit
    difference parameters (dw, db) = (W_1 - W_0, b_1 - b_0) have prior
    N(0, prior_variance) each and the usual logistic likelihood; the orthogonal
    directions decouple. Full-batch updates, 32 independent chains; the
    tolerance is 4 standard errors of the between-chain spread (which accounts
    for autocorrelation). At h = 3e-3 the discretisation bias of the variance
    is below 1% (exact for the Gaussian case: h * curvature / 4), far below the
    Monte Carlo error."""
    num_train, prior_var, num_chains = 20, 2.0, 32
    spec = ProblemSpec(input_dim=1, temperature=1.0, num_train=num_train)
    k_x, k_y = jax.random.split(jax.random.key(42))
    x = np.asarray(jax.random.normal(k_x, (num_train,)), np.float64)
    p = 1.0 / (1.0 + np.exp(-(1.5 * x + 0.3)))
    y = np.asarray(jax.random.uniform(k_y, (num_train,)) < p, np.int32)

    cfg = sgmcmc_mod.SGMCMCConfig(
        hidden_sizes=(),
        learning_rate=learning_rate,
        per_example_lr=per_example_lr,
        prior_variance=prior_var,
        momentum=momentum,
        num_steps=24_000,
        burn_in=4_000,
        keep_every=10,
    )
    agent = sgmcmc_mod.make_sgmcmc(spec, cfg)
    batch = Batch(
        jnp.asarray(x, jnp.float32)[:, None],
        jnp.asarray(y),
        jnp.float32(num_train),
        jnp.arange(num_train),
    )

    def chain(key):
        k_init, k_run = jax.random.split(key)
        state = agent.init(k_init)
        step = lambda s, k: (agent.update(k, s, batch), None)  # noqa: E731
        state, _ = jax.lax.scan(step, state, jax.random.split(k_run, cfg.num_steps))
        w, b = state.kept[0]["w"], state.kept[0]["b"]  # [K, 1, 2], [K, 2]
        return jnp.stack([w[:, 0, 1] - w[:, 0, 0], b[:, 1] - b[:, 0]], -1)  # [K, 2]

    samples = np.asarray(
        jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(0), num_chains)), np.float64
    )  # [chains, K, 2]
    mean_q, var_q = _quadrature_moments(x, y, prior_var)

    chain_means = samples.mean(1)  # [chains, 2]
    # Centred at the exact mean, each chain's average is an unbiased estimate of
    # the variance, so the between-chain spread is its standard error.
    chain_vars = ((samples - mean_q) ** 2).mean(1)
    for estimates, exact, what in ((chain_means, mean_q, "mean"), (chain_vars, var_q, "var")):
        estimate = estimates.mean(0)
        se = estimates.std(0, ddof=1) / math.sqrt(num_chains)
        # The check is only meaningful if it is sharp: the standard error must be
        # small compared with the posterior spread.
        assert np.all(se < 0.05 * np.sqrt(var_q) if what == "mean" else se < 0.05 * var_q), se
        assert np.all(np.abs(estimate - exact) < 4 * se), (what, estimate, exact, se)
