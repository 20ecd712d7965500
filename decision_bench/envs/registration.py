"""Registers the Gymnasium ids (idempotent; runs on ``import decision_bench``)."""

from __future__ import annotations

import gymnasium

# A bandit never ends, so without a step limit gymnasium's episode wrappers
# (RecordEpisodeStatistics) never report. 10,000 steps is the horizon of the README's
# `decision-bench bandit` run; gym.make(id, max_episode_steps=N) or make_vec(...) with it
# overrides it, and gym.make's -1 removes it.
MAX_EPISODE_STEPS = 10_000

_IDS = {
    "decision_bench/NeuralBandit-v0": ("NeuralBanditEnv", "neural_bandit_vector"),
    "decision_bench/ContextualNeuralBandit-v0": (
        "ContextualNeuralBanditEnv",
        "contextual_neural_bandit_vector",
    ),
    "decision_bench/BernoulliBandit-v0": ("BernoulliBanditEnv", "bernoulli_bandit_vector"),
    "decision_bench/ClassificationBandit-v0": (
        "ClassificationBanditEnv",
        "classification_bandit_vector",
    ),
    "decision_bench/WheelBandit-v0": ("WheelBanditEnv", "wheel_bandit_vector"),
    "decision_bench/LinearBandit-v0": ("LinearBanditEnv", "linear_bandit_vector"),
    "decision_bench/SparseLinearBandit-v0": ("SparseLinearBanditEnv", "sparse_linear_bandit_vector"),
}


def register_envs() -> tuple[str, ...]:
    """Registers every id with both a single and a vector entry point and
    ``max_episode_steps=MAX_EPISODE_STEPS``; returns the ids."""
    for env_id, (single, vector) in _IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=f"decision_bench.envs.adapters:{single}",
                vector_entry_point=f"decision_bench.envs.adapters:{vector}",
                max_episode_steps=MAX_EPISODE_STEPS,
            )
    return tuple(_IDS)
