"""Registers the Gymnasium ids (idempotent; runs on ``import decision_bench``)."""

from __future__ import annotations

import gymnasium

# A bandit never ends, so without a step limit gymnasium's episode wrappers
# (RecordEpisodeStatistics) never report. 10,000 steps is the horizon of the README's
# `decision-bench bandit` run; gym.make(id, max_episode_steps=N) or make_vec(...) with it
# overrides it, and gym.make's -1 removes it.
MAX_EPISODE_STEPS = 10_000

# Every id plays one core of envs/bandits.py through the same two adapters; the
# registration passes the core's name (gymnasium.make and make_vec hand it on).
_IDS = (
    "NeuralBandit-v0",
    "ContextualNeuralBandit-v0",
    "BernoulliBandit-v0",
    "ClassificationBandit-v0",
    "WheelBandit-v0",
    "LinearBandit-v0",
    "SparseLinearBandit-v0",
)


def register_envs() -> tuple[str, ...]:
    """Registers every id with both a single and a vector entry point and
    ``max_episode_steps=MAX_EPISODE_STEPS``; returns the ids."""
    for name in _IDS:
        if f"decision_bench/{name}" not in gymnasium.registry:
            gymnasium.register(
                id=f"decision_bench/{name}",
                entry_point="decision_bench.envs.adapters:BanditEnv",
                vector_entry_point="decision_bench.envs.adapters:BanditVectorEnv",
                max_episode_steps=MAX_EPISODE_STEPS,
                kwargs={"env_id": name},
            )
    return tuple(f"decision_bench/{name}" for name in _IDS)
