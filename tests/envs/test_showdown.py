"""The Showdown's synthetic bandits against closed forms and the published facts.

Statistical checks use bounds derived from the sampled quantity's own standard
deviation: 5 standard errors, a false failure about 1 in 3 million.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench.envs import (
    LinearBandit,
    SparseLinearBandit,
    TableBandit,
    WheelBandit,
    make_bandit,
    real_valued_rewards,
)

N = 20_000  # contexts per statistical check: one vmapped call each


def _contexts(core, key, n=N):
    params = core.sample_params(jax.random.key(0))
    keys = jax.random.split(key, n)
    return params, jax.jit(jax.vmap(lambda k: core.sample_context(k, params)))(keys)


def _step_all(core, params, key, action, n=N):
    """n independent (reset, step(action)) pairs: (reward [n], info of [n], contexts [n, d])."""

    def one(k):
        k_reset, k_step = jax.random.split(k)
        _, state = core.reset(k_reset, params)
        _, _, reward, info = core.step(k_step, state, jnp.int32(action), params)
        return reward, info, state.context

    return jax.jit(jax.vmap(one))(jax.random.split(key, n))


# ----------------------------------------------------------------------------
# Wheel


def test_wheel_facts_match_the_paper():
    wheel = WheelBandit()
    assert (wheel.context_dim, wheel.num_actions, wheel.input_dim) == (2, 5, 15)
    assert (wheel.centre_mean, wheel.outer_mean, wheel.large_mean) == (1.2, 1.0, 50.0)
    assert wheel.noise_std == 0.01 and wheel.delta == 0.95
    assert real_valued_rewards(wheel) and make_bandit("decision_bench/WheelBandit-v0", delta=0.5).delta == 0.5


@pytest.mark.parametrize(
    "x, means",
    [
        # inside the inner disc: every outer action 1.0, the centre action (index 4) 1.2
        ((0.1, 0.2), [1.0, 1.0, 1.0, 1.0, 1.2]),
        ((-0.3, -0.1), [1.0, 1.0, 1.0, 1.0, 1.2]),
        # outside: the action of x's quadrant pays 50 (the code's quadrant order)
        ((0.6, 0.6), [50.0, 1.0, 1.0, 1.0, 1.2]),
        ((0.6, -0.6), [1.0, 50.0, 1.0, 1.0, 1.2]),
        ((-0.6, 0.6), [1.0, 1.0, 50.0, 1.0, 1.2]),
        ((-0.6, -0.6), [1.0, 1.0, 1.0, 50.0, 1.2]),
    ],
)
def test_wheel_expected_rewards_by_region(x, means):
    wheel = WheelBandit(delta=0.5)
    params = wheel.sample_params(jax.random.key(0))
    got = wheel.expected_rewards(params, jnp.asarray(x, jnp.float32))
    np.testing.assert_allclose(np.asarray(got), means, rtol=1e-6)


@pytest.mark.parametrize("delta", [0.5, 0.9])
def test_wheel_contexts_are_uniform_on_the_unit_disc(delta):
    wheel = WheelBandit(delta=delta)
    _, x = _contexts(wheel, jax.random.key(1))
    radius = np.linalg.norm(np.asarray(x), axis=1)
    assert radius.max() <= 1.0 + 1e-6
    # P(||x|| >= delta) = 1 - delta^2 for the uniform law on the disc
    p = 1.0 - delta**2
    assert abs((radius >= delta).mean() - p) <= 5 * np.sqrt(p * (1 - p) / N)
    # every quadrant a quarter of the mass
    quadrant = (np.asarray(x)[:, 0] > 0) * 2 + (np.asarray(x)[:, 1] > 0)
    for q in range(4):
        assert abs((quadrant == q).mean() - 0.25) <= 5 * np.sqrt(0.25 * 0.75 / N)


@pytest.mark.parametrize("delta", [0.0, 0.5, 0.95])
def test_wheel_optimal_expected_reward_is_the_closed_form_in_delta(delta):
    wheel = WheelBandit(delta=delta)
    closed_form = 1.2 * delta**2 + 50.0 * (1.0 - delta**2)
    assert wheel.optimal_expected_reward() == pytest.approx(closed_form, rel=1e-12)
    params = wheel.sample_params(jax.random.key(0))
    _, info, _ = _step_all(wheel, params, jax.random.key(2), action=4)
    optimal = np.asarray(info["optimal_expected_reward"], np.float64)
    # each step's optimum is 1.2 or 50: a scaled Bernoulli(1 - delta^2)
    p = 1.0 - delta**2
    stderr = (50.0 - 1.2) * np.sqrt(p * (1 - p) / N)
    assert abs(optimal.mean() - closed_form) <= 5 * stderr + 1e-4
    # the centre action is optimal exactly inside delta, an outer one outside
    assert set(np.unique(optimal).round(4)) <= {1.2, 50.0}


def test_wheel_rewards_are_gaussian_around_the_means_with_sigma():
    wheel = WheelBandit(delta=0.5)
    params = wheel.sample_params(jax.random.key(0))
    reward, info, _ = _step_all(wheel, params, jax.random.key(3), action=0)
    noise = np.asarray(reward, np.float64) - np.asarray(info["expected_reward"], np.float64)
    assert abs(noise.mean()) <= 5 * 0.01 / np.sqrt(N)
    # the sample variance of N normals has standard error sigma^2 sqrt(2 / (N - 1))
    assert abs(noise.var(ddof=1) - 0.01**2) <= 5 * 0.01**2 * np.sqrt(2 / (N - 1))
    # without noise a reward is its expectation exactly, and regret is optimum - chosen
    quiet = WheelBandit(delta=0.5, noise_std=0.0)
    reward, info, _ = _step_all(quiet, quiet.sample_params(jax.random.key(0)), jax.random.key(4), 2, n=200)
    np.testing.assert_array_equal(np.asarray(reward), np.asarray(info["expected_reward"]))
    np.testing.assert_array_equal(
        np.asarray(info["regret"]),
        np.asarray(info["optimal_expected_reward"]) - np.asarray(info["expected_reward"]),
    )


def test_observation_is_the_disjoint_encoding_of_the_context():
    wheel = WheelBandit()
    obs, state = wheel.reset(jax.random.key(5), wheel.sample_params(jax.random.key(0)))
    obs, x = np.asarray(obs), np.asarray(state.context)
    for a in range(5):
        block = np.zeros(15, np.float32)
        block[3 * a : 3 * a + 3] = [x[0], x[1], 1.0]
        np.testing.assert_array_equal(obs[a], block)


# ----------------------------------------------------------------------------
# Linear and sparse linear


def test_linear_defaults_are_the_showdowns():
    linear, sparse = LinearBandit(), SparseLinearBandit()
    assert (linear.context_dim, linear.num_actions) == (10, 8)
    assert (sparse.context_dim, sparse.num_actions, sparse.sparse_dim) == (10, 7, 3)
    stds = np.asarray(linear.sample_params(jax.random.key(0)).noise_stds)
    np.testing.assert_allclose(stds, 0.01 * np.arange(1, 9), rtol=1e-6)


@pytest.mark.parametrize("core", [LinearBandit(), SparseLinearBandit()])
def test_linear_optimal_action_is_the_argmax_of_the_true_linear_means(core):
    params = core.sample_params(jax.random.key(7))
    betas = np.asarray(params.betas, np.float64)
    np.testing.assert_allclose(np.linalg.norm(betas, axis=0), 1.0, rtol=1e-5)
    _, info, x = _step_all(core, params, jax.random.key(8), action=1, n=500)
    means = np.asarray(x, np.float64) @ betas  # [n, A], independently in float64
    np.testing.assert_array_equal(np.asarray(info["optimal_action"]), means.argmax(axis=1))
    np.testing.assert_allclose(np.asarray(info["expected_reward"]), means[:, 1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(info["optimal_expected_reward"]), means.max(axis=1), rtol=1e-4, atol=1e-5)


def test_sparse_betas_have_sparse_dim_nonzeros_on_uniform_supports():
    core = SparseLinearBandit(context_dim=6, num_actions=4, sparse_dim=2)
    draws = 2_000
    sample = jax.jit(jax.vmap(lambda k: core.sample_params(k).betas))
    betas = np.asarray(sample(jax.random.split(jax.random.key(9), draws)))
    nonzero = betas != 0
    assert (nonzero.sum(axis=1) == 2).all()  # per arm, per draw
    # each coordinate is in an arm's support with probability s / d = 1/3
    p = 2 / 6
    freq = nonzero.mean(axis=0)  # [d, A]
    assert np.abs(freq - p).max() <= 5 * np.sqrt(p * (1 - p) / draws)
    # supports are drawn per arm: not all arms share one support
    assert (nonzero[:, :, 0] != nonzero[:, :, 1]).any()


def test_linear_noise_is_per_arm():
    core = LinearBandit(context_dim=3, num_actions=4, noise_scale=0.5)
    params = core.sample_params(jax.random.key(0))
    reward, info, _ = _step_all(core, params, jax.random.key(10), action=3)
    noise = np.asarray(reward, np.float64) - np.asarray(info["expected_reward"], np.float64)
    sigma = 0.5 * 4  # arm 3 (0-based): noise_scale * (3 + 1)
    assert abs(noise.var(ddof=1) - sigma**2) <= 5 * sigma**2 * np.sqrt(2 / (N - 1))


@pytest.mark.parametrize(
    "cls, kwargs, parameter",
    [
        (WheelBandit, dict(delta=1.5), "delta must be a number in [0, 1]"),
        (WheelBandit, dict(delta=-0.1), "delta must be a finite number >= 0"),
        (WheelBandit, dict(noise_std=-1.0), "noise_std"),
        (WheelBandit, dict(large_mean=float("nan")), "large_mean must be a finite number"),
        (LinearBandit, dict(context_dim=0), "context_dim must be an integer >= 1"),
        (LinearBandit, dict(num_actions=2.5), "num_actions must be an integer"),
        (LinearBandit, dict(noise_scale=-0.01), "noise_scale"),
        (SparseLinearBandit, dict(sparse_dim=0), "sparse_dim must be an integer >= 1"),
        (SparseLinearBandit, dict(sparse_dim=11), "sparse_dim must be an integer in [1, context_dim = 10]"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_parameter(cls, kwargs, parameter):
    with pytest.raises(ValueError) as error:
        cls(**kwargs)
    assert parameter in str(error.value) and "\n" not in str(error.value)


def test_the_wheel_has_no_num_actions_setting():
    with pytest.raises(ValueError, match="unknown keyword argument.*num_actions.*WheelBandit-v0"):
        make_bandit("WheelBandit-v0", num_actions=3)


# ----------------------------------------------------------------------------
# A table of contexts and rewards (the Showdown's real data sets)


class _Table:
    name = "toy"
    contexts = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], np.float32)
    rewards = np.array([[0.0, 5.0], [0.0, -35.0], [1.0, 2.0]], np.float32)
    expected_rewards = np.array([[0.0, 5.0], [0.0, -15.0], [1.0, 2.0]], np.float32)


def test_table_bandit_pays_the_shown_rows_reward_and_regret_on_expectations():
    core = TableBandit(_Table())
    assert (core.context_dim, core.num_actions, core.input_dim, core.name) == (2, 2, 6, "toy")
    params = core.sample_params(jax.random.key(0))

    def play(k):
        k_reset, k_step = jax.random.split(k)
        _, state = core.reset(k_reset, params)
        _, _, reward, info = core.step(k_step, state, jnp.int32(1), params)
        return state.row, state.actions, reward, info

    rows, obs, reward, info = jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(1), 3000))
    rows = np.asarray(rows)
    np.testing.assert_array_equal(np.asarray(reward), _Table.rewards[rows, 1])
    best = _Table.expected_rewards[rows].max(axis=1)
    np.testing.assert_array_equal(np.asarray(info["regret"]), best - _Table.expected_rewards[rows, 1])
    np.testing.assert_array_equal(np.asarray(obs)[:, 1, 3:5], _Table.contexts[rows])  # action 1's block
    for r in range(3):  # rows drawn uniformly
        assert abs((rows == r).mean() - 1 / 3) <= 5 * np.sqrt(2 / 9 / 3000)


def test_table_bandit_refuses_a_table_of_the_wrong_form():
    with pytest.raises(ValueError, match="data must have contexts"):
        TableBandit(np.zeros((3, 2)))
    bad = _Table()
    bad.rewards = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="of one n"):
        TableBandit(bad)
