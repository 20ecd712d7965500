"""The bandit loop: truths that do not depend on this code, reproducibility, resume, errors."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import warnings
from typing import NamedTuple

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
import pytest

import decision_bench  # noqa: F401  (registers the Gymnasium ids)
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.beta_bernoulli import BetaBernoulliConfig, make_beta_bernoulli
from decision_bench.agents.registry import names as agent_names
from decision_bench.bandit import BanditLoopConfig, ThompsonPolicy, bandit_spec, make_loop, run_bandit
from decision_bench.envs.bandits import make_bandit

NEURAL = {"input_dim": 2, "num_actions": 40, "temperature": 0.1}


# ----------------------------------------------------------------------------
# A tiny agent, so that most tests compile in a second


class LinearState(NamedTuple):
    w: jax.Array  # [d, 2]
    opt_state: optax.OptState
    fail_at: jax.Array  # [] f32: num_seen at which update returns NaN (1e9: never)


def linear_thompson(input_dim: int, fail_probability: float = 0.0) -> Agent:
    """Logistic regression with a Gaussian perturbation as its epistemic draw.

    With fail_probability > 0, a seed (chosen by its init key) turns its weights
    to NaN at num_seen = 30: a stand-in for a diverging agent."""
    opt = optax.sgd(0.1)

    def init(key):
        w = jnp.zeros((input_dim, 2), jnp.float32)
        fails = jax.random.uniform(key) < fail_probability
        return LinearState(w, opt.init(w), jnp.where(fails, 30.0, 1e9))

    def update(key, state, batch: Batch):
        def loss(w):
            return optax.softmax_cross_entropy_with_integer_labels(batch.x @ w, batch.y).mean()

        updates, opt_state = opt.update(jax.grad(loss)(state.w), state.opt_state)
        w = optax.apply_updates(state.w, updates)
        w = jnp.where(batch.num_seen >= state.fail_at, jnp.nan, w)
        return LinearState(w, opt_state, state.fail_at)

    def sample_logits(key, state, x):
        return x @ (state.w + 0.3 * jax.random.normal(key, state.w.shape))

    return Agent(init=init, update=update, sample_logits=sample_logits, name="linear")


# One record per shape: equal loops share their compiled programs across tests.
LINEAR2 = linear_thompson(2)


def _beta_bernoulli(env):
    return make_beta_bernoulli(bandit_spec(env, 10_000), BetaBernoulliConfig())


def _numbers(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=["wall_seconds"]).reset_index(drop=True)


# ----------------------------------------------------------------------------
# Truths


@pytest.mark.parametrize(
    "env_id, kwargs",
    [("BernoulliBandit-v0", {"num_actions": 10}), ("NeuralBandit-v0", NEURAL)],
)
def test_uniform_policy_regret_is_t_times_gap(env_id, kwargs):
    """E[R_t] = t (max p - mean p) per environment; the sum over seeds is within
    4 standard errors (CLT: each step's regret has variance Var_a(p_a))."""
    num_steps, seeds = 400, list(range(100))
    env = make_bandit(env_id, **kwargs)
    df = run_bandit(
        linear_thompson(env.input_dim), env, num_steps, seeds, BanditLoopConfig(policy="uniform"), log_every=100,
        progress=False,
    )
    loop, _ = make_loop(linear_thompson(env.input_dim), env, policy="uniform")
    params = jax.vmap(lambda s: loop.init_env(s)[0])(jnp.asarray(seeds))
    probs = np.asarray(jax.vmap(lambda p: env.reward_probs(p, p.actions))(params), np.float64)
    gap = probs.max(axis=1) - probs.mean(axis=1)  # [S]
    var = probs.var(axis=1)  # [S]
    for t, at_t in df.groupby("step"):
        regret = at_t.sort_values("seed").cumulative_regret.to_numpy()
        z = (regret - t * gap).sum() / np.sqrt(t * var.sum())
        assert abs(z) < 4.0, (t, z)


def test_beta_bernoulli_thompson_learns():
    """Exact Thompson sampling: regret per step falls, and total regret is far below uniform's."""
    env = make_bandit("BernoulliBandit-v0", num_actions=10)
    num_steps, seeds = 2000, list(range(20))
    agent = _beta_bernoulli(env)
    assert agent.update_mode == "online"
    ts = run_bandit(agent, env, num_steps, seeds, log_every=1000, progress=False)
    at = ts.pivot(index="seed", columns="step", values="cumulative_regret")
    first_half, total = at[1000].mean(), at[2000].mean()
    second_half = total - first_half
    assert second_half < 0.5 * first_half
    # The uniform policy's expected regret on the same environments: T (max p - mean p).
    loop, _ = make_loop(agent, env)
    p = jax.vmap(lambda s: loop.init_env(s)[0].model["p"])(jnp.asarray(seeds))
    uniform_total = float(num_steps * (p.max(axis=1) - p.mean(axis=1)).mean())
    assert total < 0.2 * uniform_total
    assert (ts.error == "").all()


def test_beta_bernoulli_update_counts_each_observation_once():
    env = gymnasium.make("decision_bench/BernoulliBandit-v0", num_actions=4)
    obs, _ = env.reset(seed=5)
    policy = ThompsonPolicy(_beta_bernoulli(env.unwrapped.core), env, seed=5)
    assert policy.loop.update_mode == "online"
    wins = np.zeros(4)
    plays = np.zeros(4)
    for _ in range(50):
        a = policy.act(obs)
        obs2, r, *_ = env.step(a)
        policy.observe(obs, a, r)
        wins[a] += r
        plays[a] += 1
        obs = obs2
    np.testing.assert_allclose(policy.agent_state.alpha, 1 + wins)
    np.testing.assert_allclose(policy.agent_state.beta, 1 + plays - wins)


@pytest.mark.slow
def test_ensemble_plus_thompson_beats_uniform_on_neural_bandit():
    """Paper 000, Sec. 5: a well-calibrated joint sampler explores efficiently."""
    kwargs = dict(env_kwargs=NEURAL, log_every=3000, progress=False)
    seeds = list(range(4))
    ts = run_bandit("ensemble+", "NeuralBandit-v0", 3000, seeds, agent_kwargs={"num_ensemble": 10}, **kwargs)
    uniform = run_bandit("mlp", "NeuralBandit-v0", 3000, seeds, BanditLoopConfig(policy="uniform"), **kwargs)
    ts_final = ts.groupby("seed").final_regret.first()
    uniform_final = uniform.groupby("seed").final_regret.first()
    assert ts_final.mean() < 0.4 * uniform_final.mean()
    assert (ts_final < uniform_final).sum() >= 3


# Small settings for agents that would take minutes here. hmc's likelihood sums
# over its whole buffer, the replay capacity: 30 steps need only 32 rows (2 min
# with the default 10,000).
_SMALL_RUN = {
    "hmc": dict(
        agent_kwargs=dict(hidden_sizes=(8,), num_warmup=100, num_samples=10, thinning=2, num_integration_steps=8),
        config=BanditLoopConfig(batch_size=8, replay_capacity=32),
    ),
}
_NO_BLACKJAX = importlib.util.find_spec("blackjax") is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.skipif(
            n == "hmc" and _NO_BLACKJAX,
            reason="agent 'hmc' needs blackjax (the `bayes` extra), which is not installed",
        ))
        for n in agent_names()
    ],
)
def test_every_registered_agent_runs(name):
    from decision_bench.agents.registry import REAL_REWARD_AGENTS

    # Agents of real-valued rewards play a Gaussian bandit; the rest a Bernoulli one.
    env = "LinearBandit-v0" if name in REAL_REWARD_AGENTS else "BernoulliBandit-v0"
    small = {"config": BanditLoopConfig(batch_size=8), **_SMALL_RUN.get(name, {})}
    df = run_bandit(name, env, 30, 2, env_kwargs={"num_actions": 4}, log_every=15, progress=False, **small)
    assert len(df) == 4 and (df.error == "").all(), name
    assert df.cumulative_regret.notna().all(), name


# ----------------------------------------------------------------------------
# Reproducibility, resume, vmap


def test_same_seeds_give_identical_results():
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    run = lambda: run_bandit(LINEAR2, env, 300, [3, 4], log_every=10, progress=False)
    pd.testing.assert_frame_equal(_numbers(run()), _numbers(run()))


def test_resume_after_interruption_matches_uninterrupted(tmp_path):
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    args = (LINEAR2, env, 300, [0, 1, 2])
    kwargs = dict(log_every=25, chunk_size=100, progress=False)
    full = run_bandit(*args, **kwargs)

    class Interrupted(Exception):
        pass

    def interrupt(t):
        if t == 200:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_bandit(*args, out_dir=tmp_path, callback=interrupt, **kwargs)
    steps_run = []
    resumed = run_bandit(*args, out_dir=tmp_path, resume=True, callback=steps_run.append, **kwargs)
    assert steps_run == [300]  # only the last chunk ran again
    pd.testing.assert_frame_equal(_numbers(resumed), _numbers(full))
    # A finished run resumes to the same rows without running a step.
    again = run_bandit(*args, out_dir=tmp_path, resume=True, callback=steps_run.append, **kwargs)
    assert steps_run == [300]
    pd.testing.assert_frame_equal(_numbers(again), _numbers(full))
    # A different config is refused rather than silently mixed.
    with pytest.raises(ValueError, match="batch_size"):
        run_bandit(*args, BanditLoopConfig(batch_size=64), out_dir=tmp_path, resume=True, **kwargs)


def test_vmapped_seeds_equal_separate_runs():
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    kwargs = dict(log_every=20, progress=False)
    together = run_bandit(LINEAR2, env, 200, [0, 1, 2], **kwargs)
    for seed in (0, 2):
        alone = run_bandit(LINEAR2, env, 200, [seed], **kwargs)
        pd.testing.assert_frame_equal(
            _numbers(together[together.seed == seed]), _numbers(alone), check_exact=False, rtol=1e-5
        )


def test_chunk_size_does_not_change_results():
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    run = lambda c: run_bandit(LINEAR2, env, 150, [7], log_every=50, chunk_size=c, progress=False)
    pd.testing.assert_frame_equal(_numbers(run(150)), _numbers(run(40)), check_exact=False, rtol=1e-5)


@pytest.mark.parametrize("agent_name", ["linear", "mlp"])
def test_slow_gymnasium_path_takes_the_compiled_actions(agent_name):
    num_steps, seed = 60, 11
    env = gymnasium.make("decision_bench/NeuralBandit-v0", **NEURAL)
    agent = LINEAR2 if agent_name == "linear" else "mlp"
    policy = ThompsonPolicy(agent, env, seed=seed, batch_size=16)
    obs, _ = env.reset(seed=seed)
    slow_actions, slow_regret = [], []
    for _ in range(num_steps):
        action = policy.act(obs)
        next_obs, reward, _, _, info = env.step(action)
        policy.observe(obs, action, reward)
        slow_actions.append(action)
        slow_regret.append(info["regret"])
        obs = next_obs

    loop = policy.loop
    carry, params = jax.vmap(loop.init_carry)(jnp.asarray([seed]))
    _, out = jax.jit(loop.run_chunk, static_argnums=2)(carry, params, num_steps)
    assert np.asarray(out.action[0]).tolist() == slow_actions
    compiled = run_bandit(loop.agent, env, num_steps, [seed], BanditLoopConfig(batch_size=16), log_every=1,
                          progress=False)
    np.testing.assert_allclose(compiled.cumulative_regret, np.cumsum(slow_regret), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------
# Bad input and numerical failure


def test_non_finite_agent_stops_only_that_seed():
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    seeds = list(range(8))
    df = run_bandit(linear_thompson(2, fail_probability=0.5), env, 100, seeds, log_every=10, progress=False)
    errors = df.groupby("seed").error.first()
    failed = errors[errors != ""].index
    assert 0 < len(failed) < len(seeds)  # both kinds present for these seeds
    assert all("non-finite" in errors[s] and "step 30" in errors[s] for s in failed)
    for seed, rows in df.groupby("seed"):
        if seed in failed:
            assert rows.final_regret.isna().all()
            assert rows[rows.step < 30].cumulative_regret.notna().all()
            assert rows[rows.step >= 30].cumulative_regret.isna().all()
        else:
            assert rows.cumulative_regret.notna().all() and rows.final_regret.notna().all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"agent": "no-such-agent"}, r"agent must be .*'mlp'"),
        ({"env": "NoSuchBandit-v0"}, r"env_id must be one of .*NeuralBandit-v0"),
        ({"policy": "softmax"}, r"policy must be one of .*thompson"),
        ({"num_steps": 0}, "num_steps"),
        ({"seeds": 0}, "seeds"),
        ({"seeds": []}, "seeds"),
        ({"batch_size": 0}, "batch_size"),
        ({"replay_capacity": 0}, "replay_capacity"),
        ({"steps_per_obs": 0}, "steps_per_obs"),
        ({"learning_rate": -1.0}, "learning_rate"),
        ({"update_mode": "sometimes"}, "update_mode"),
        ({"resume": True}, "out_dir"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    args = {"agent": "mlp", "env": "BernoulliBandit-v0", "num_steps": 10, "seeds": 2}
    fields = {field.name for field in dataclasses.fields(BanditLoopConfig)}
    args.update({name: value for name, value in kwargs.items() if name not in fields})
    settings = {name: value for name, value in kwargs.items() if name in fields}
    with pytest.raises(ValueError, match=message):
        run_bandit(**args, config=BanditLoopConfig(**settings), progress=False)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("policy", "softmax", r"policy must be one of \['greedy', 'thompson', 'uniform'\], got 'softmax'"),
        ("update_mode", "sometimes", r"update_mode must be one of \['online', 'replay'\]"),
        ("steps_per_obs", 0, "steps_per_obs must be an integer >= 1, got 0"),
        ("batch_size", 2.5, "batch_size must be an integer >= 1, got 2.5"),
        ("replay_capacity", True, "replay_capacity must be an integer >= 1, got True"),
        ("greedy_samples", 0, "greedy_samples must be an integer >= 1, got 0"),
        ("learning_rate", float("nan"), "learning_rate must be a finite number > 0, got nan"),
        ("regularization", "linear", r"regularization must be one of .*sequential.*, got 'linear'"),
    ],
)
def test_loop_config_refuses_a_bad_field_in_one_line_naming_it(field, value, message):
    with pytest.raises(ValueError, match=message) as raised:
        BanditLoopConfig(**{field: value})
    assert "\n" not in str(raised.value)


# LINEAR2 reads 2 inputs: the Bernoulli bandit's one-hot actions with 2 arms (its default
# 10 would be refused by the agent contract check, as a run would fail).
TWO_ARMS = {"num_actions": 2}


def test_loop_settings_as_keywords_or_as_a_config_build_the_same_loop():
    config = BanditLoopConfig(policy="greedy", steps_per_obs=2, batch_size=np.int64(16), replay_capacity=50)
    assert config.batch_size == 16 and type(config.batch_size) is int
    by_config, _ = make_loop(LINEAR2, "BernoulliBandit-v0", config, env_kwargs=TWO_ARMS)
    by_keywords, _ = make_loop(LINEAR2, "BernoulliBandit-v0", env_kwargs=TWO_ARMS, policy="greedy", steps_per_obs=2, batch_size=16,
                               replay_capacity=50)
    assert by_config == by_keywords
    assert (by_config.policy, by_config.steps_per_obs, by_config.batch_size) == ("greedy", 2, 16)
    assert by_config.update_mode == "replay"  # None in the config: the agent record's own
    # A keyword replaces the config's field; an unknown one is refused, naming it.
    replaced, _ = make_loop(LINEAR2, "BernoulliBandit-v0", config, env_kwargs=TWO_ARMS, batch_size=8)
    assert replaced.batch_size == 8 and replaced.policy == "greedy"
    with pytest.raises(ValueError, match="unknown bandit loop setting 'batchsize'"):
        make_loop(LINEAR2, "BernoulliBandit-v0", env_kwargs=TWO_ARMS, batchsize=8)


def test_run_bandit_takes_the_loop_settings_as_one_config():
    parameters = inspect.signature(run_bandit).parameters
    assert list(parameters)[:5] == ["agent", "env", "num_steps", "seeds", "config"]
    assert parameters["config"].default is None
    assert not {field.name for field in dataclasses.fields(BanditLoopConfig)} & set(parameters)
    with pytest.raises(TypeError, match="must be a BanditLoopConfig, got str"):
        run_bandit("mlp", "BernoulliBandit-v0", 10, 1, "uniform", progress=False)


def test_loop_settings_as_keywords_warn_and_run_the_same_config(tmp_path):
    """The spelling before the config object still works until 0.4: it warns and runs
    the same config, so a checkpoint it saves resumes under the config spelling with
    nothing run again, and the rows are identical."""
    args = (LINEAR2, "BernoulliBandit-v0", 20, [0, 1])
    kwargs = dict(env_kwargs=TWO_ARMS, log_every=5, chunk_size=10, progress=False)
    config = BanditLoopConfig(policy="greedy", batch_size=16, learning_rate=1e-2)
    with pytest.warns(DeprecationWarning, match=r"removed in decision_bench 0\.4.*config=BanditLoopConfig\("):
        by_keywords = run_bandit(*args, policy="greedy", batch_size=16, learning_rate=1e-2, out_dir=tmp_path,
                                 **kwargs)
    steps_run = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_config = run_bandit(*args, config, out_dir=tmp_path, resume=True, callback=steps_run.append, **kwargs)
    assert steps_run == []
    pd.testing.assert_frame_equal(_numbers(by_keywords), _numbers(by_config))
    # Keywords beside a config replace its fields; an unknown keyword is refused as Python would.
    with pytest.warns(DeprecationWarning, match=r"dataclasses\.replace\(config, batch_size=8\)"):
        replaced = run_bandit(*args, config, batch_size=8, **kwargs)
    pd.testing.assert_frame_equal(
        _numbers(replaced), _numbers(run_bandit(*args, dataclasses.replace(config, batch_size=8), **kwargs))
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'batchsize'"):
        run_bandit(*args, batchsize=8, **kwargs)


def test_all_three_environments_run():
    for env_id, kwargs in [
        ("decision_bench/ContextualNeuralBandit-v0", NEURAL),
        ("BernoulliBandit-v0", {"num_actions": 5}),
    ]:
        env = make_bandit(env_id.split("/")[-1], **kwargs)
        df = run_bandit(linear_thompson(env.input_dim), env_id, 50, 2, env_kwargs=kwargs, log_every=25,
                        progress=False)
        assert list(df.step) == [25, 50, 25, 50]
        assert (df.cumulative_regret >= 0).all() and (df.error == "").all()


# ----------------------------------------------------------------------------
# Command line


def test_bandit_command_writes_csv_and_figure(tmp_path):
    import argparse

    from decision_bench.cli.bandit import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["bandit", "--agents", "mlp,uniform", "--env", "BernoulliBandit-v0", "--num-actions", "4",
         "--steps", "40", "--seeds", "2", "--batch-size", "8", "--log-every", "20", "--out",
         str(tmp_path), "--no-progress"]
    )
    assert args.func(args) == 0
    df = pd.read_csv(tmp_path / "bandit.csv", keep_default_na=False)
    assert set(df.agent) == {"mlp", "uniform"} and len(df) == 2 * 2 * 2
    assert (tmp_path / "bandit_regret.png").stat().st_size > 0
    # --resume returns the saved runs
    args = parser.parse_args(
        ["bandit", "--agents", "mlp,uniform", "--env", "BernoulliBandit-v0", "--num-actions", "4",
         "--steps", "40", "--seeds", "2", "--batch-size", "8", "--log-every", "20", "--out",
         str(tmp_path), "--no-progress", "--resume"]
    )
    assert args.func(args) == 0
    again = pd.read_csv(tmp_path / "bandit.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(_numbers(again), _numbers(df))
    bad = parser.parse_args(["bandit", "--agents", "nope", "--out", str(tmp_path), "--no-progress"])
    assert bad.func(bad) == 2


def test_the_bandit_passes_only_declared_fields_and_says_which_defaults_it_replaces():
    from decision_bench.bandit.loop import registered_overrides

    assert registered_overrides("knn", 1e-3, None) == {}
    assert registered_overrides("bbb", 1e-3, {"num_steps": 3}) == {"learning_rate": 1e-3, "num_steps": 3}
    assert registered_overrides("bbb", 1e-3, {"learning_rate": 3e-3}) == {"learning_rate": 3e-3}
    spec = bandit_spec(make_bandit("NeuralBandit-v0", **NEURAL), 100, "sequential")
    assert spec.regularization == "sequential" and spec.num_train == 100


def test_bandit_help_lists_the_learning_rates_it_replaces(capsys):
    from decision_bench.cli import main

    with pytest.raises(SystemExit):
        main(["bandit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "in place of the agent's own default (it replaces: sgmcmc 0.0001;" in text
    assert "bbb 0.003;" in text
