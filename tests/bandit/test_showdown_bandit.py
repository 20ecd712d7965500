"""The bandit loop on the Showdown's Gaussian-reward bandits: regret accounting
against closed forms, the real-reward agent, the slow Gymnasium path, refusals."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import decision_bench  # noqa: F401  (registers the ids)
from decision_bench.bandit import BanditLoopConfig, ThompsonPolicy, make_loop, run_bandit
from decision_bench.envs import LinearBandit, WheelBandit

SMALL_LINEAR = dict(context_dim=3, num_actions=4)
# The real-reward agent is fed online and the uniform policy trains nothing: the
# replay only stores, so a small one keeps the compiled programs small.
REPLAY = BanditLoopConfig(replay_capacity=64)
UNIFORM = BanditLoopConfig(policy="uniform", replay_capacity=64)


def test_uniform_policy_regret_on_the_wheel_is_the_closed_form():
    """Uniform play: E[regret per step] = E[max_a mu_a(x)] - E[mean_a mu_a(x)]
    = (1.2 d^2 + 50 (1 - d^2)) - (1.2 + 4 + 49 (1 - d^2)) / 5, with d = delta."""
    delta, steps, seeds = 0.5, 500, 4
    df = run_bandit("mlp", WheelBandit(delta=delta), steps, seeds, UNIFORM, progress=False)
    outside = 1.0 - delta**2
    closed_form = (1.2 * delta**2 + 50.0 * outside) - (1.2 + 4.0 + 49.0 * outside) / 5
    per_step = df.groupby("seed").final_regret.first().sum() / (steps * seeds)
    # per-step regrets are iid (fresh context, fresh uniform action) and lie in [0, 49]:
    # their standard deviation is at most 49 / 2 (Popoviciu)
    assert abs(per_step - closed_form) <= 5 * (49.0 / 2) / np.sqrt(steps * seeds)


def test_linear_gaussian_thompson_learns_the_linear_bandit():
    kwargs = dict(env_kwargs=SMALL_LINEAR, progress=False, log_every=300)
    ts = run_bandit("linear_gaussian", "LinearBandit-v0", 600, [0, 1], REPLAY, **kwargs)
    uniform = run_bandit("mlp", "LinearBandit-v0", 600, [0, 1], UNIFORM, **kwargs)
    assert (ts.error == "").all()
    ts_final = ts.groupby("seed").final_regret.first()
    uniform_final = uniform.groupby("seed").final_regret.first()
    assert (ts_final < 0.5 * uniform_final).all(), (ts_final, uniform_final)
    # and it has mostly stopped paying: the second 300 steps cost far less than the first
    curve = ts.pivot(index="seed", columns="step", values="cumulative_regret")
    assert ((curve[600] - curve[300]) < 0.5 * curve[300]).all()


def test_replay_stores_real_rewards_for_gaussian_bandits_and_labels_otherwise():
    gaussian, _ = make_loop("linear_gaussian", "LinearBandit-v0", env_kwargs=SMALL_LINEAR)
    bernoulli, _ = make_loop("mlp", "BernoulliBandit-v0")
    assert gaussian.init_learner(jnp.int32(0)).replay.y.dtype == jnp.float32
    assert bernoulli.init_learner(jnp.int32(0)).replay.y.dtype == jnp.int32


def test_slow_gymnasium_path_takes_the_compiled_actions_with_real_rewards():
    num_steps, seed = 15, 3
    env = gymnasium.make("decision_bench/WheelBandit-v0", delta=0.5)
    policy = ThompsonPolicy("linear_gaussian", env, seed=seed, config=REPLAY)
    obs, _ = env.reset(seed=seed)
    slow_actions = []
    for _ in range(num_steps):
        action = policy.act(obs)
        next_obs, reward, _, _, _ = env.step(action)
        assert reward not in (0.0, 1.0)  # a Gaussian reward reaches the agent as it is
        policy.observe(obs, action, reward)
        slow_actions.append(action)
        obs = next_obs
    assert float(policy.agent_state.count) == num_steps  # online: each observation once
    loop = policy.loop
    carry, params = jax.vmap(loop.init_carry)(jnp.asarray([seed]))
    _, out = jax.jit(loop.run_chunk, static_argnums=2)(carry, params, num_steps)
    assert np.asarray(out.action[0]).tolist() == slow_actions


def test_01_agents_are_refused_on_gaussian_bandits_unless_uniform():
    with pytest.raises(ValueError, match="'mlp' predicts 0/1 rewards.*LinearBandit-v0"):
        make_loop("mlp", "LinearBandit-v0")
    make_loop("mlp", "LinearBandit-v0", policy="uniform")  # regret accounting only
    with pytest.raises(ValueError, match="'linear_gaussian' models real-valued.*NeuralBandit-v0 has 0/1"):
        make_loop("linear_gaussian", "NeuralBandit-v0")
    with pytest.raises(ValueError, match="reward must be a finite number"):
        ThompsonPolicy("linear_gaussian", gymnasium.make("decision_bench/LinearBandit-v0"), seed=0).observe(
            np.zeros((8, 88), np.float32), 0, float("nan")
        )


def test_linear_bandit_core_is_a_static_loop_argument():
    """Two loops on equal cores share one compiled program (the core is hashable)."""
    assert hash(LinearBandit(**SMALL_LINEAR)) == hash(LinearBandit(**SMALL_LINEAR))
    assert WheelBandit(delta=0.5) == WheelBandit(delta=0.5) != WheelBandit(delta=0.7)
