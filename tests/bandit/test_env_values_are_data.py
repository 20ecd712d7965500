"""Environment values are data: another beta (or delta, or noise scale) compiles nothing.

Every registered bandit core is a pytree whose leaves are exactly its real numbers
and whose structure is its shapes (envs/bandits.py), and the bandit loop takes the
core as data (bandit/loop.py), so ``run_bandit``, ``ThompsonPolicy`` and the
Gymnasium adapters at another value reuse the compiled programs. Each check also
asserts that the other value changes the result: a value that no longer reached the
computation would pass a compile count alone.
"""

from __future__ import annotations

import dataclasses

import gymnasium
import jax
import numpy as np
import pytest
from compile_counting import count_compilations

import decision_bench  # noqa: F401  (registers the Gymnasium ids)
from decision_bench.bandit import BanditLoopConfig, ThompsonPolicy, run_bandit
from decision_bench.envs.bandits import BANDITS, make_bandit

RUN = dict(log_every=5, chunk_size=10, progress=False)
SMALL_BATCH = BanditLoopConfig(batch_size=8)
SMALL_AGENTS = {"mlp": dict(hidden_sizes=(8,)), "ensemble+": dict(hidden_sizes=(8,), num_ensemble=3)}


def _leaf_names(core) -> set[str]:
    return {jax.tree_util.keystr(path)[1:] for path, _ in jax.tree_util.tree_flatten_with_path(core)[0]}


@pytest.mark.parametrize("env_id", sorted(BANDITS))
def test_every_core_has_its_real_numbers_as_leaves_and_its_shapes_as_structure(env_id):
    core = make_bandit(env_id)
    floats = {f.name for f in dataclasses.fields(core) if isinstance(getattr(core, f.name), float)}
    assert _leaf_names(core) == floats
    leaves, treedef = jax.tree.flatten(core)
    # Rebuilt from its leaves, the core is the same core (the loop rebuilds it when traced).
    assert jax.tree.unflatten(treedef, leaves) == core
    assert repr(jax.tree.unflatten(treedef, leaves)) == repr(core)


@pytest.mark.parametrize("agent", sorted(SMALL_AGENTS))
def test_run_bandit_at_another_beta_compiles_nothing(agent):
    def run(temperature):
        env_kwargs = dict(input_dim=2, num_actions=6, temperature=temperature)
        return run_bandit(agent, "NeuralBandit-v0", 10, 2, SMALL_BATCH, env_kwargs=env_kwargs,
                          agent_kwargs=SMALL_AGENTS[agent], **RUN)

    first = run(0.1)
    with count_compilations() as seen:
        second = run(0.5)
    assert seen == []
    assert (second.temperature == 0.5).all()
    assert not np.array_equal(first.cumulative_regret, second.cumulative_regret)


def test_run_bandit_at_another_wheel_delta_compiles_nothing():
    def run(delta):
        return run_bandit("linear_gaussian", "WheelBandit-v0", 10, 2, SMALL_BATCH, env_kwargs=dict(delta=delta), **RUN)

    first = run(0.5)
    with count_compilations() as seen:
        second = run(0.9)
    assert seen == []
    assert not np.array_equal(first.cumulative_regret, second.cumulative_regret)


def test_thompson_policy_and_gymnasium_env_at_another_beta_compile_nothing():
    def play(temperature):
        env = gymnasium.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=6,
                             temperature=temperature)
        obs, _ = env.reset(seed=3)
        policy = ThompsonPolicy("mlp", env, seed=3, batch_size=8, agent_kwargs=dict(hidden_sizes=(8,)))
        regrets = []
        for _ in range(5):
            action = policy.act(obs)
            next_obs, reward, _, _, info = env.step(action)
            policy.observe(obs, action, reward)
            regrets.append(info["regret"])
            obs = next_obs
        return np.asarray(regrets)

    first = play(0.1)
    with count_compilations() as seen:
        second = play(0.5)
    assert seen == []
    assert not np.array_equal(first, second)
