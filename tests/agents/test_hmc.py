"""The hmc agent (issue 13): exactness of the truncated-normal reparameterisation,
posterior moments against quadrature, prior sampling without data, the
registered agent through fit and estimate_kl, diagnostics and bad configs.

Monte Carlo tolerances are 4 standard errors with the effective sample size of
the very draws being tested (Stan's estimator on split chains, in numpy), never
fitted to the outcome.
"""

from __future__ import annotations

import functools
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

pytest.importorskip("blackjax")

from decision_bench import agents  # noqa: E402
from decision_bench.agents import hmc  # noqa: E402
from decision_bench.envs.testbed import Dataset, make_testbed_problem  # noqa: E402
from decision_bench.evaluation.kl import FittedAgent, estimate_kl  # noqa: E402
from decision_bench.priors import TRUNCATED_NORMAL_STD, CoinsPrior, LogisticPrior, MLPPrior  # noqa: E402
from decision_bench.specs import ProblemSpec  # noqa: E402

# Small sampler settings for the fast tests: a few seconds each on a busy CPU.
SMALL = dict(num_chains=4, num_warmup=200, num_samples=250, thinning=2, num_integration_steps=8)
# The truncated normal N(0, 1) on [-2, 2].
TRUNC = stats.truncnorm(-2.0, 2.0)


def _effective_sample_size(chains: np.ndarray) -> np.ndarray:
    """Multi-chain ESS of each column, chains [m, n, k] -> [k]: Stan's estimator
    (Gelman et al., BDA3 Sec. 11.5) with Geyer's initial monotone sequence. numpy,
    so it costs no compilation."""
    m, n, k = chains.shape
    centered = chains - chains.mean(1, keepdims=True)
    spectrum = np.fft.rfft(centered, n=2 * n, axis=1)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=2 * n, axis=1)[:, :n] / n  # [m, n, k]
    within = (acov[:, 0] * n / (n - 1)).mean(0)  # W
    var_plus = within * (n - 1) / n + (chains.mean(1).var(0, ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (within - acov.mean(0)) / var_plus  # [n, k]
    rho[0] = 1.0
    ess = np.empty(k)
    for j in range(k):
        pairs = rho[: 2 * (n // 2), j].reshape(-1, 2).sum(1)
        positive = np.cumprod(pairs > 0).astype(bool)  # initial positive sequence
        pairs = np.minimum.accumulate(pairs[positive])  # initial monotone sequence
        ess[j] = m * n / max(-1.0 + 2.0 * pairs.sum(), 1e-3)
    return ess


def _mcse_zscores(draws: np.ndarray, exact: np.ndarray, num_chains: int) -> np.ndarray:
    """(mean of draws - exact) / its Monte Carlo standard error, per column.

    draws [num_chains * num_samples, k], chain-major; the standard error is
    sd / sqrt(ESS), the ESS of the split chains (halves count as chains).
    """
    chains = draws.reshape(num_chains, -1, draws.shape[-1])
    half = chains.shape[1] // 2
    split = np.concatenate([chains[:, :half], chains[:, half : 2 * half]], axis=0)
    ess = _effective_sample_size(split)
    return (draws.mean(0) - exact) / (draws.std(0) / np.sqrt(ess))


# ---------------------------------------------------------------- reparameterisation


def test_truncated_coordinate_has_exactly_the_truncated_normal_law():
    """Quadrature of exp(log p(u)) over u pushes forward to N(0, 1) on (-2, 2)."""
    coords = hmc.coordinates.Coordinates("mlp", 1, (1,), "relu", 2)
    # blocks: w0 (truncated), b0 (Gaussian), w1 (truncated, 2 entries)
    np.testing.assert_array_equal(coords.truncated_mask, [True, False, True, True])

    def density(index, u):
        v = np.zeros(coords.dim, np.float32)
        v[index] = u
        return math.exp(float(coords.log_prior(jnp.asarray(v))))

    z = lambda u: 2 * math.tanh(u / 2)  # noqa: E731
    trunc = functools.partial(density, 0)
    norm = integrate.quad(trunc, -60, 60, limit=200)[0]
    second = integrate.quad(lambda u: trunc(u) * z(u) ** 2, -60, 60, limit=200)[0] / norm
    tail = 2 * integrate.quad(trunc, 2 * math.atanh(0.75), 60, limit=200)[0] / norm  # P(|z| > 1.5)
    assert second == pytest.approx(TRUNCATED_NORMAL_STD**2, rel=1e-6)
    assert second == pytest.approx(TRUNC.var(), rel=1e-6)
    assert tail == pytest.approx(2 * TRUNC.sf(1.5), rel=1e-6)
    gauss = functools.partial(density, 1)
    norm = integrate.quad(gauss, -30, 30)[0]
    assert integrate.quad(lambda u: gauss(u) * u * u, -30, 30)[0] / norm == pytest.approx(1.0, rel=1e-6)


def test_coordinates_round_trip_the_priors_own_draws():
    prior = MLPPrior(3, hidden_sizes=(5, 4), activation="tanh", num_classes=3)
    coords = hmc.coordinates.coordinates_of_prior(prior)
    assert coords.dim == 3 * 5 + 5 + 5 * 4 + 4 * 3
    params = prior.init(jax.random.key(0))
    back = jax.jit(lambda p: coords.to_params(coords.from_params(p)))(params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6), back, params)
    x = prior.sample_inputs(jax.random.key(1), 6)
    np.testing.assert_allclose(prior.logits(back, x), prior.logits(params, x), rtol=1e-4, atol=1e-4)
    # Far-out coordinates still map inside the truncation, scaled by 1/sqrt(fan_in).
    w = jax.jit(coords.to_params)(jnp.full((coords.dim,), 40.0))
    assert float(jnp.max(w[1]["w"])) <= 2 / math.sqrt(5) + 1e-6
    assert np.all(np.asarray(w[1]["b"]) == 0) and np.all(np.asarray(w[2]["b"]) == 0)


# ---------------------------------------------------------------- posteriors


def _logistic_quadrature(x: np.ndarray, y: np.ndarray, temperature: float, half_width=7.0, n=1401):
    """Posterior mean and variance of phi (d = 2) by quadrature on a grid (float64)."""
    grid = np.linspace(-half_width, half_width, n)
    p0, p1 = np.meshgrid(grid, grid, indexing="ij")
    phi = np.stack([p0.ravel(), p1.ravel()], -1)  # [n*n, 2]
    z = phi @ x.T / temperature  # [n*n, T]
    sign = 2 * y - 1
    log_post = -0.5 * (phi**2).sum(-1) + special.log_expit(sign * z).sum(-1)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = w @ phi
    var = w @ (phi - mean) ** 2
    return mean, var


def _logistic_problem(num_train: int, temperature: float, seed: int):
    prior = LogisticPrior(2, temperature=temperature)
    key = jax.random.key(seed)
    params = prior.init(jax.random.fold_in(key, 0))
    x = prior.sample_inputs(jax.random.fold_in(key, 1), num_train)
    y = jax.random.categorical(jax.random.fold_in(key, 2), prior.logits(params, x)).astype(jnp.int32)
    return prior, Dataset(x, y)


def _check_logistic_moments(prior, data, config):
    post = hmc.hmc_posterior(jax.random.key(7), prior, data, config)
    assert hmc.diagnostic_problems(post.diagnostics, config) == []
    phi = np.asarray(post.members["phi"], np.float64)  # [C * N, 2]
    mean, var = _logistic_quadrature(
        np.asarray(data.x, np.float64), np.asarray(data.y), float(prior.temperature)
    )
    z_mean = _mcse_zscores(phi, mean, config.num_chains)
    # The variance as the mean of (phi - exact mean)^2: its own standard error.
    z_var = _mcse_zscores((phi - mean) ** 2, var, config.num_chains)
    assert np.all(np.abs(z_mean) < 4), (z_mean, phi.mean(0), mean)
    assert np.all(np.abs(z_var) < 4), (z_var, phi.var(0), var)
    # A log-concave likelihood can only narrow the N(0, I) prior (Brascamp-Lieb):
    # a check of the reference itself.
    assert np.all(var < 1.0)


def test_logistic_posterior_moments_match_quadrature():
    prior, data = _logistic_problem(num_train=6, temperature=1.0, seed=0)
    _check_logistic_moments(prior, data, hmc.HMCConfig(prior="logistic", **SMALL))


@pytest.mark.slow
def test_sharp_logistic_posterior_moments_match_quadrature():
    """beta = 0.1 (the testbed's): a wedge-shaped posterior, default sampler settings."""
    prior, data = _logistic_problem(num_train=10, temperature=0.1, seed=1)
    _check_logistic_moments(prior, data, hmc.HMCConfig(prior="logistic"))


# Slow: ~6 s of compilation whatever the sizes. The fast set checks the truncated
# coordinates' density by quadrature and the sampler on the logistic posterior.
@pytest.mark.slow
def test_without_data_the_chains_sample_the_mlp_prior():
    """T = 0: every weight's z = w sqrt(fan_in) follows the truncated normal and the
    first bias N(0, 1/d), checked through E z^2 and P(|z| > 1.5) per coordinate."""
    prior = MLPPrior(1, hidden_sizes=(3,), temperature=0.1)
    empty = Dataset(jnp.zeros((0, 1), jnp.float32), jnp.zeros((0,), jnp.int32))
    config = hmc.HMCConfig(hidden_sizes=(3,), **SMALL)
    post = hmc.hmc_posterior(jax.random.key(3), prior, empty, config)
    assert hmc.diagnostic_problems(post.diagnostics, config) == []
    m = post.members
    n = config.num_members
    z = np.concatenate(
        [np.asarray(m[0]["w"]).reshape(n, -1), np.asarray(m[1]["w"]).reshape(n, -1) * math.sqrt(3)], 1
    ).astype(np.float64)
    bias = np.asarray(m[0]["b"], np.float64).reshape(n, -1)  # input_dim 1: N(0, 1)
    assert np.abs(z).max() < 2.0  # inside the truncation, always
    tail = 2 * TRUNC.sf(1.5)
    for stat, exact in [(z**2, TRUNC.var()), ((np.abs(z) > 1.5).astype(float), tail), (z, 0.0)]:
        scores = _mcse_zscores(stat, np.full(stat.shape[1], exact), config.num_chains)
        assert np.all(np.abs(scores) < 4), scores
    for stat, exact in [(bias**2, 1.0), (bias, 0.0)]:
        scores = _mcse_zscores(stat, np.full(stat.shape[1], exact), config.num_chains)
        assert np.all(np.abs(scores) < 4), scores


# ---------------------------------------------------------------- the registered agent


# Slow: compiling fit with the chains inside takes ~10 s whatever the sizes (the
# run itself takes a fraction of a second). The fast set still fits hmc through
# `agents.fit` (one update, T = 64) in tests/agents/test_contract.py's registry-wide tests.
@pytest.mark.slow
def test_registered_agent_fits_and_evaluates():
    """T = 150 > fit's batch of 100: fit hands the whole training set to fit_data,
    which runs the chains on all of it; then estimate_kl."""
    problem = make_testbed_problem("mlp", input_dim=2, num_train=150, tau=10, seed=0)
    agent = agents.make("hmc", problem.spec, hidden_sizes=(8,), num_warmup=100, num_samples=10,
                        thinning=2, num_integration_steps=8, num_probes=3)
    assert agent.name == "hmc" and agent.num_steps == 0 and agent.fit_data is not None
    state = agents.fit(agent, jax.random.key(0), problem.train_data, problem.spec)
    initial = jax.jit(agent.init)(jax.random.key(0))
    signature = lambda tree: jax.tree.map(lambda a: (a.shape, a.dtype), tree)  # noqa: E731
    assert signature(state) == signature(initial)
    d = state.diagnostics
    assert bool(d.sampled)
    assert float(d.num_data) == float(d.num_seen) == 150
    assert d.rhat.shape == d.ess.shape == (1 + 3,) and d.step_size.shape == (4,)
    # The chains' data are the training set exactly.
    np.testing.assert_array_equal(state.data.x, problem.train_data.x)
    np.testing.assert_array_equal(state.data.y, problem.train_data.y)
    x = problem.prior.sample_inputs(jax.random.key(5), 7)
    members = jax.jit(agent.member_logits)(state, x)
    assert members.shape == (40, 7, 2) and bool(jnp.all(jnp.isfinite(members)))
    # Members use the environment's own forward pass: logits / temperature.
    first = jax.tree.map(lambda leaf: leaf[0], state.members)
    np.testing.assert_allclose(members[0], problem.prior.logits(first, x), rtol=1e-5, atol=1e-5)
    # A sample is one member, the same one for every input.
    draw = jax.jit(agent.sample_logits)(jax.random.key(6), state, x)
    assert np.min(np.abs(np.asarray(members) - np.asarray(draw)).max(axis=(1, 2))) == 0.0
    result = estimate_kl(FittedAgent(agent, state), problem, jax.random.key(1), num_test=50)
    assert result.method == "exact" and result.num_models == 40
    assert math.isfinite(result.kl) and result.fraction_finite == 1.0
    # The tiny run is too short to pass its diagnostics, and says so.
    assert not bool(hmc.diagnostics_pass(d)) and not bool(agent.diagnose(state))
    assert any("R-hat" in p or "ESS" in p for p in hmc.diagnostic_problems(d))


@pytest.mark.slow
def test_each_update_reruns_the_chains_on_every_row_stored():
    """The bandit's use (update_mode "online"): one observation per update, and the
    members condition on all of them."""
    spec = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=4)
    agent = agents.make("hmc", spec, hidden_sizes=(4,), num_chains=2, num_warmup=10, num_samples=4,
                        thinning=1, num_integration_steps=2, num_probes=1)
    assert agent.update_mode == "online"
    update = jax.jit(agent.update)
    state = agent.init(jax.random.key(0))
    rows = np.array([[0.5, -1.0], [2.0, 0.3]], np.float32)
    for t, (x, y) in enumerate(zip(rows, [1, 0]), start=1):
        batch = agents.Batch(x=jnp.array([x], jnp.float32), y=jnp.array([y], jnp.int32),
                             num_seen=jnp.float32(t), index=jnp.array([t - 1], jnp.int32))
        before = state.members
        state = update(jax.random.key(t), state, batch)
        d = state.diagnostics
        assert bool(d.sampled) and float(d.num_data) == float(d.num_seen) == t
        assert int(state.data.seen.sum()) == t
        assert not np.array_equal(state.members[0]["w"], before[0]["w"])
    np.testing.assert_array_equal(state.data.x[:2], rows)


def test_without_data_the_agent_is_the_prior():
    """T = 0: fit takes no step, and the members (exact prior draws) give the prior
    agent's d_KL within Monte Carlo error."""
    problem = make_testbed_problem("mlp", input_dim=2, num_train=0, tau=10, seed=0)
    agent = agents.make("hmc", problem.spec, hidden_sizes=(8,), num_chains=4, num_samples=250)
    state = agents.fit(agent, jax.random.key(0), problem.train_data, problem.spec)
    assert not bool(state.diagnostics.sampled) and bool(hmc.diagnostics_pass(state.diagnostics))
    assert bool(agent.diagnose(state))
    agents.check_finite(state, "hmc")  # the unsampled diagnostics are zeros, not NaN
    assert hmc.diagnostic_problems(state.diagnostics) == []
    ours = estimate_kl(FittedAgent(agent, state), problem, jax.random.key(1), num_test=300)
    prior_agent = agents.make("prior", problem.spec, hidden_sizes=(8,))
    prior_state = agents.fit(prior_agent, jax.random.key(0), problem.train_data, problem.spec)
    theirs = estimate_kl(
        FittedAgent(prior_agent, prior_state), problem, jax.random.key(1), num_test=300, num_models=1000
    )
    assert ours.num_models == theirs.num_models == 1000
    assert abs(ours.kl - theirs.kl) < 4 * math.hypot(ours.kl_stderr, theirs.kl_stderr)


# ---------------------------------------------------------------- diagnostics


def _diagnostics(**changes) -> hmc.HMCDiagnostics:
    good = hmc.HMCDiagnostics(
        sampled=jnp.array(True),
        num_data=jnp.float32(10),
        num_seen=jnp.float32(10),
        rhat=jnp.array([1.01, 1.0]),
        ess=jnp.array([300.0, 400.0]),
        acceptance_rate=jnp.array([0.9, 0.9]),
        step_size=jnp.array([0.1, 0.1]),
        integration_steps=jnp.array([8.0, 8.0]),
        num_divergent=jnp.array([0, 1], jnp.int32),
    )
    return good._replace(**{k: jnp.asarray(v) for k, v in changes.items()})


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(rhat=[1.2, 1.0]), "R-hat 1.200 > 1.1"),
        (dict(rhat=[float("nan"), 1.0]), "R-hat"),
        (dict(ess=[50.0, 400.0]), "ESS 50.0 < 100"),
        (dict(num_data=5.0), "condition on 5 of 10"),
        (dict(sampled=False), "never ran"),
        (dict(num_divergent=[30, 30]), "60 of 2000 sampling transitions diverged"),
    ],
)
def test_diagnostics_flag_failed_runs(changes, message):
    config = hmc.HMCConfig(num_chains=2, num_samples=200, thinning=5)
    assert hmc.diagnostic_problems(_diagnostics(), config) == []
    assert bool(hmc.diagnostics_pass(_diagnostics(), num_transitions=1000))
    bad = _diagnostics(**changes)
    problems = hmc.diagnostic_problems(bad, config)
    assert len(problems) == 1 and message in problems[0], problems
    assert not bool(hmc.diagnostics_pass(bad, num_transitions=1000))


def test_diagnostics_pass_works_on_stacked_fits():
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), _diagnostics(), _diagnostics(rhat=[1.5, 1.0]))
    np.testing.assert_array_equal(hmc.diagnostics_pass(stacked), [True, False])
    unsampled = _diagnostics(sampled=False, num_seen=0.0)  # no data: exact prior draws
    assert bool(hmc.diagnostics_pass(unsampled)) and hmc.diagnostic_problems(unsampled) == []
    with pytest.raises(ValueError, match="diagnostics_pass"):
        hmc.diagnostic_problems(stacked)


# ---------------------------------------------------------------- bad input

SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=10)


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        (dict(num_chains=0), "num_chains"),
        (dict(num_warmup=0), "num_warmup"),
        (dict(num_samples=3), "num_samples"),
        (dict(thinning=0), "thinning"),
        (dict(num_integration_steps=0), "num_integration_steps"),
        (dict(max_num_doublings=0), "max_num_doublings"),
        (dict(initial_step_size=0.0), "initial_step_size"),
        (dict(initial_step_size=float("inf")), "initial_step_size"),
        (dict(target_acceptance_rate=1.0), "target_acceptance_rate"),
        (dict(target_acceptance_rate=0.0), "target_acceptance_rate"),
        (dict(step_size_jitter=1.0), "step_size_jitter"),
        (dict(algorithm="mala"), "algorithm"),
        (dict(prior="coins"), "prior"),
        (dict(hidden_sizes=()), "hidden_sizes"),
        (dict(hidden_sizes=(50, 0)), "hidden_sizes"),
        (dict(activation="softplus"), "activation"),
        (dict(num_probes=0), "num_probes"),
        (dict(batch_size=0), "batch_size"),
        (dict(num_chains=2.5), "num_chains"),
    ],
)
def test_bad_config_values_fail_with_one_line_errors(overrides, parameter):
    with pytest.raises(ValueError, match=parameter) as err:
        agents.make("hmc", SPEC, **overrides)
    assert "\n" not in str(err.value)


def test_model_mismatches_are_refused():
    with pytest.raises(ValueError, match="num_classes"):
        agents.make("hmc", ProblemSpec(input_dim=2, num_classes=3), prior="logistic")
    empty = Dataset(jnp.zeros((0, 2)), jnp.zeros((0,), jnp.int32))
    with pytest.raises(ValueError, match="hidden_sizes"):
        hmc.hmc_posterior(jax.random.key(0), MLPPrior(2), empty, hmc.HMCConfig(hidden_sizes=(8,)))
    with pytest.raises(ValueError, match="prior"):
        hmc.hmc_posterior(jax.random.key(0), LogisticPrior(2), empty, hmc.HMCConfig())
    with pytest.raises(ValueError, match="CoinsPrior"):
        hmc.hmc_posterior(jax.random.key(0), CoinsPrior(2), empty)
    with pytest.raises(ValueError, match="input_dim=3"):
        hmc.hmc_posterior(jax.random.key(0), MLPPrior(3), empty)


# ---------------------------------------------------------------- default settings


@pytest.mark.slow
def test_default_agent_passes_its_diagnostics_and_beats_the_prior():
    """d = 2, T = 100 at the defaults (the bench's setting): R-hat <= 1.1, bulk
    ESS >= 100, and the posterior predicts the environment better than the prior."""
    problem = make_testbed_problem("mlp", input_dim=2, num_train=100, tau=1, seed=0)
    agent = agents.make("hmc", problem.spec)
    state = agents.fit(agent, jax.random.key(0), problem.train_data, problem.spec)
    config = agents.config("hmc")
    assert hmc.diagnostic_problems(state.diagnostics, config) == []
    ours = estimate_kl(FittedAgent(agent, state), problem, jax.random.key(1), num_test=500)
    prior_agent = agents.make("prior", problem.spec)
    prior_state = prior_agent.init(jax.random.key(0))
    theirs = estimate_kl(FittedAgent(prior_agent, prior_state), problem, jax.random.key(1), num_test=500)
    assert ours.kl + 4 * ours.kl_stderr < theirs.kl, (ours.kl, theirs.kl)


def test_missing_blackjax_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "blackjax", None)  # reads as not installed
    with pytest.raises(ImportError, match=r"decision-bench\[bayes\]"):
        agents.make("hmc", SPEC)


@pytest.mark.slow
def test_on_a_small_logistic_problem_hmc_has_the_lowest_joint_kl_of_every_core_agent():
    """Exact inference on the generative model is the floor: on the logistic prior
    (d = 2, T = 10, beta = 0.1; 10 seeds, each its own environment) every core agent's
    d_KL^10 exceeds hmc's, by more than 3 standard errors of the paired difference
    over seeds. (Measured before this test was written, for mlp, ensemble+ and the
    logistic baseline: differences of 4 to 6 standard errors.)"""
    from decision_bench.evaluation import run_testbed
    from decision_bench.evaluation.sweeps import custom_sweep
    from decision_bench.experiments.presets import CORE_AGENTS

    sweep = custom_sweep(2, 10, 0.1, taus=(10,), num_seeds=10, prior="logistic")
    frame = run_testbed(
        list(CORE_AGENTS) + ["logistic", "hmc"], sweep, 10,
        overrides={"hmc": {"prior": "logistic"}}, progress=False,
    )
    kl = frame.pivot_table(index="seed", columns="agent", values="kl")
    assert len(kl) == 10
    for agent in kl.columns.drop("hmc"):
        difference = kl[agent] - kl["hmc"]
        stderr = difference.std(ddof=1) / math.sqrt(len(difference))
        assert difference.mean() > 3 * stderr, (agent, difference.mean(), stderr)
