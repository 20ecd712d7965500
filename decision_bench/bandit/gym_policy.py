"""The conventional path: ``ThompsonPolicy`` driven by the user in a plain Gymnasium loop.

It calls the same ``BanditLoop.act`` and ``BanditLoop.learn`` as the compiled
step, one jitted call each, so with the same seed it draws the same keys and
takes the same actions as ``run_bandit``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from decision_bench._src.validation import check_int
from decision_bench.bandit.loop import BanditLoopConfig, act_step, init_learner, learn_step, make_loop


class ThompsonPolicy:
    """A bandit policy for a plain Gymnasium loop (one jitted call per act and per observe).

        env = gymnasium.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=40)
        obs, _ = env.reset(seed=3)
        policy = ThompsonPolicy("ensemble+", env, seed=3)
        for _ in range(1000):
            action = policy.act(obs)
            next_obs, reward, terminated, truncated, info = env.step(action)
            policy.observe(obs, action, reward)
            obs = next_obs

    With the same seed given to ``env.reset`` and to the policy, it takes the same
    actions as ``run_bandit`` for that seed (the key derivation in the module
    docstring). Arguments as in ``run_bandit``: the loop's settings as a
    ``BanditLoopConfig`` (``config``), whose fields keywords here may replace; ``env`` may be a Gymnasium env of
    this package, an env id (with ``env_kwargs``) or a functional core. If the
    agent state becomes non-finite, the policy keeps its last finite state and
    records the step in ``failed_at`` / ``error``, as the compiled path does.
    """

    def __init__(
        self,
        agent: Any,
        env: Any,
        seed: int,
        config: BanditLoopConfig | None = None,
        *,
        env_kwargs: dict | None = None,
        agent_kwargs: dict | None = None,
        **settings: Any,
    ):
        self.seed = check_int("seed", seed, 0)
        self.loop, self.env_id = make_loop(
            agent, env, config, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs, **settings
        )
        self.learner = init_learner(self.loop, jnp.asarray(self.seed, jnp.int32))
        self.failed_at = 0

    @property
    def agent_state(self) -> Any:
        return self.learner.agent

    @property
    def error(self) -> str:
        if not self.failed_at:
            return ""
        return f"agent parameters became non-finite at step {self.failed_at}; seed stopped"

    def act(self, obs: Any) -> int:
        """The action for the observed action set obs [A, d]."""
        return int(act_step(self.loop, self.learner, jnp.asarray(obs, jnp.float32)))

    def observe(self, obs: Any, action: int, reward: float) -> None:
        """Records (obs[action], reward) and trains, as one step of the compiled loop."""
        obs = jnp.asarray(obs, jnp.float32)
        action = check_int("action", action, 0)
        if action >= obs.shape[0]:
            raise ValueError(f"action must be in [0, {obs.shape[0]}), got {action}")
        if self.loop.reward_dtype == jnp.float32:  # a Gaussian-reward bandit
            if not isinstance(reward, (int, float, np.integer, np.floating)) or not np.isfinite(reward):
                raise ValueError(f"reward must be a finite number, got {reward!r}")
            y = jnp.asarray(reward, jnp.float32)
        else:
            if reward not in (0, 1):
                raise ValueError(f"reward must be 0 or 1, got {reward!r}")
            y = jnp.asarray(int(reward), jnp.int32)
        learner, finite = learn_step(self.loop, self.learner, obs[action], y)
        if self.failed_at or not bool(finite):
            # As in the compiled path: the agent stays at its last finite state.
            self.failed_at = self.failed_at or int(learner.t)
            learner = learner._replace(agent=self.learner.agent)
        self.learner = learner
