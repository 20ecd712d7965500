"""ClassificationBandit-v0: a classification data set as a contextual bandit."""

from __future__ import annotations

import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")

import decision_bench  # noqa: E402,F401  (registers the ids)
from decision_bench.bandit import BanditLoopConfig, run_bandit  # noqa: E402
from decision_bench.cli import main as cli_main  # noqa: E402
from decision_bench.envs.bandits import make_bandit  # noqa: E402
from decision_bench.envs.classification import ClassificationBandit, arm_features  # noqa: E402


def test_arm_features_are_the_disjoint_encoding_with_intercept():
    feats = arm_features(jnp.array([2.0, -3.0]), 3)
    expected = np.array(
        [
            [2, -3, 1, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 2, -3, 1, 0, 0, 0],
            [0, 0, 0, 0, 0, 0, 2, -3, 1],
        ],
        np.float32,
    )
    np.testing.assert_array_equal(np.asarray(feats), expected)


def test_static_facts_and_params():
    env = ClassificationBandit("wine")
    assert (env.name, env.num_examples, env.num_classes, env.num_actions) == ("wine", 178, 3, 3)
    assert env.feature_dim == 13 and env.input_dim == 14 * 3 and env.temperature == 1.0
    params = env.sample_params(jax.random.key(0))
    assert params.x.shape == (178, 13) and params.y.shape == (178,)
    # standardised with the data set's own statistics
    np.testing.assert_allclose(np.asarray(params.x).mean(0), 0.0, atol=1e-5)
    assert hash(env) == hash(ClassificationBandit("wine")) and env == ClassificationBandit("wine")


def _rollout(env, policy, num_steps, key):
    """Functional rollout: policy(state) -> action; returns per-step (reward, regret)."""
    params = env.sample_params(key)
    _, state = env.reset(jax.random.fold_in(key, 1), params)

    def body(state, k):
        k_act, k_step = jax.random.split(k)
        action = policy(k_act, state)
        _, state, reward, info = env.step(k_step, state, action, params)
        return state, (reward, info["regret"], info["expected_reward"])

    return jax.lax.scan(body, state, jax.random.split(jax.random.fold_in(key, 2), num_steps))[1]


def test_oracle_policy_has_zero_regret():
    env = ClassificationBandit("iris")
    rewards, regret, _ = jax.jit(lambda k: _rollout(env, lambda _, s: s.label, 500, k))(jax.random.key(0))
    assert float(regret.sum()) == 0.0 and bool(jnp.all(rewards == 1.0))


def test_regret_of_every_action_averages_to_one_minus_one_over_c():
    # Exact expectation of a uniform policy's per-step regret: mean over the C arms.
    env = ClassificationBandit("digits")
    params = env.sample_params(jax.random.key(0))
    _, state = env.reset(jax.random.key(1), params)
    regrets = jax.vmap(lambda a: env.step(jax.random.key(2), state, a, params)[3]["regret"])(
        jnp.arange(env.num_actions)
    )
    assert float(regrets.sum()) == env.num_actions - 1  # exactly one arm is right
    assert float(regrets.mean()) == pytest.approx(1 - 1 / env.num_actions)


def test_uniform_policy_regret_is_t_times_one_minus_one_over_c():
    num_steps, num_seeds, c = 200, 64, 3
    frame = run_bandit(
        "uniform",
        "ClassificationBandit-v0",
        num_steps,
        num_seeds,
        BanditLoopConfig(policy="uniform", replay_capacity=num_steps),
        env_kwargs={"dataset": "iris"},
        progress=False,
    )
    final = frame.groupby("seed").final_regret.first().to_numpy()
    p = 1 - 1 / c
    # Each step's regret is Bernoulli(p), independent across steps and seeds.
    stderr = math.sqrt(num_steps * p * (1 - p) / num_seeds)
    assert abs(final.mean() - num_steps * p) < 5 * stderr
    assert set(frame["num_actions"]) == {3} and set(frame["input_dim"]) == {15}


def test_thompson_logistic_learns_iris():
    num_steps = 300
    frame = run_bandit(
        "logistic",
        "decision_bench/ClassificationBandit-v0",
        num_steps,
        2,
        BanditLoopConfig(replay_capacity=num_steps, batch_size=32, learning_rate=1e-2),
        env_kwargs={"dataset": "iris"},
        progress=False,
    )
    # The disjoint encoding makes the classes linearly separable per arm: far
    # below the uniform policy's 200 expected regret.
    assert frame.groupby("seed").final_regret.first().max() < 0.5 * num_steps * (1 - 1 / 3)


def test_gymnasium_env_replays_the_functional_core():
    env = gymnasium.make("decision_bench/ClassificationBandit-v0", dataset="iris")
    obs, _ = env.reset(seed=7)
    core = ClassificationBandit("iris")
    key = jax.random.key(7)
    k_params, k_reset, key = jax.random.split(key, 3)
    params = core.sample_params(k_params)
    core_obs, state = core.reset(k_reset, params)
    np.testing.assert_array_equal(obs, np.asarray(core_obs))
    assert env.observation_space.shape == (3, 15) and env.action_space.n == 3
    for action in (0, 1, 2, 1, 0):
        key, k_step = jax.random.split(key)
        core_obs, state, reward, info = core.step(k_step, state, jnp.int32(action), params)
        obs, r, terminated, truncated, env_info = env.step(action)
        np.testing.assert_array_equal(obs, np.asarray(core_obs))
        assert r == float(reward) and env_info["regret"] == 1.0 - r and not terminated


def test_user_arrays_and_bad_arguments():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 2)), np.arange(20) % 4
    env = make_bandit("ClassificationBandit-v0", dataset=(x, y), standardize=False)
    assert env.num_actions == 4 and env.input_dim == 12
    hash(env)  # arrays were wrapped, so the core can be a static jit argument
    np.testing.assert_allclose(np.asarray(env.sample_params(jax.random.key(0)).x), x.astype(np.float32))
    with pytest.raises(ValueError, match="single class"):
        ClassificationBandit((x, np.zeros(20)))
    with pytest.raises(ValueError, match="unknown keyword argument"):
        make_bandit("ClassificationBandit-v0", input_dim=3)
    with pytest.raises(ValueError, match="dataset must be one of"):
        make_bandit("ClassificationBandit-v0", dataset="mnist")


def test_cli_bandit_with_dataset(tmp_path):
    code = cli_main(
        [
            "bandit", "--env", "ClassificationBandit-v0", "--dataset", "iris", "--agents", "uniform",
            "--policy", "uniform", "--steps", "20", "--seeds", "2", "--replay-capacity", "20",
            "--out", str(tmp_path), "--no-progress",
        ]
    )
    assert code == 0
    frame = pd.read_csv(tmp_path / "bandit.csv")
    assert set(frame["dataset"]) == {"iris"} and set(frame["env"]) == {"ClassificationBandit-v0"}
