"""Gymnasium adapters over the functional bandits: a thin ``Env`` and a compiled ``VectorEnv``.

The adapters own the PRNG key and the state; every transition is one call of a
jitted pure function from ``bandits.py``. Keys are derived so that the
functional core can replay an adapter's trajectory exactly:

    key = jax.random.key(seed)
    k_params, k_reset, key = jax.random.split(key, 3)   # at reset(seed=seed)
    key, k_step = jax.random.split(key)                 # before every step

A reset samples a NEW environment (reward model and action set), as in the
paper's experiments where each seed is a fresh environment.

Every id is registered with ``max_episode_steps`` = ``MAX_EPISODE_STEPS`` (10,000;
``registration.py``), so wrappers that act at an episode's end
(``RecordEpisodeStatistics``) report one; the bandit itself never terminates.

``info``: a step reports ``INFO_KEYS`` about the action set it was played on; a reset
reports ``RESET_INFO_KEYS`` (optimal_action, optimal_expected_reward) about the action
set it shows, the same values the next step reports.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from decision_bench._src.validation import check_int, check_optional_int, check_seed
from decision_bench.envs.step_info import OPTIMUM_KEYS
from decision_bench.envs.bandits import BernoulliBandit, make_bandit

INFO_KEYS = ("expected_reward", "optimal_expected_reward", "regret", "optimal_action")
RESET_INFO_KEYS = OPTIMUM_KEYS


# The core is an argument like any other: a pytree whose real numbers (beta) are leaves
# and whose shapes are structure (bandits.py), so envs of another beta share these programs.
@jax.jit
def _reset(core, key):
    k_params, k_reset, key = jax.random.split(key, 3)
    params = core.sample_params(k_params)
    obs, state = core.reset(k_reset, params)
    return obs, state, params, key, core.optimum(state, params)


@jax.jit
def _step(core, key, state, action, params):
    key, k_step = jax.random.split(key)
    obs, state, reward, info = core.step(k_step, state, action, params)
    return obs, state, reward, info, key


def _python_info(info: dict[str, Any]) -> dict[str, int | float]:
    """A single env's info as Python numbers: the action an int, the rest floats."""
    return {k: (int(v) if k == "optimal_action" else float(v)) for k, v in info.items()}


def _seed_key(seed: int | None, np_random: np.random.Generator) -> jax.Array:
    if seed is None:
        # Unseeded resets still come from gymnasium's own generator, so that a
        # seeded first reset makes every later reset reproducible.
        seed = int(np_random.integers(0, 2**31 - 1))
    return jax.random.key(seed)


def _observation_space(core) -> spaces.Box:
    shape = (core.num_actions, core.input_dim)
    if isinstance(core, BernoulliBandit):  # one-hot arm features
        return spaces.Box(0.0, 1.0, shape, np.float32)
    return spaces.Box(-np.inf, np.inf, shape, np.float32)


class BanditEnv(gymnasium.Env):
    """A single decision_bench bandit behind the standard Gymnasium API.

    Observation: action features, float32 [num_actions, input_dim].
    Action: Discrete(num_actions). Reward: 0.0 or 1.0 (a real number for the
    Showdown's Gaussian bandits, ``core.real_valued_rewards``). Never terminates;
    ``gym.make`` truncates after ``max_episode_steps`` (registered: 10,000;
    ``gym.make(id, max_episode_steps=N)`` changes it, -1 removes the limit). A step's
    ``info`` carries expected_reward, optimal_expected_reward, regret and
    optimal_action for the action set the action was played on; reset's ``info``
    carries optimal_action and optimal_expected_reward for the action set it returns
    (what the first step's info will report).
    """

    metadata = {"render_modes": []}

    def __init__(self, env_id: str, **kwargs: Any):
        # gymnasium.make passes env_id from the registration (registration.py).
        self.core = make_bandit(env_id, **kwargs)
        self.observation_space = _observation_space(self.core)
        self.action_space = spaces.Discrete(self.core.num_actions)
        self._key = None
        self._state = None
        self._params = None

    @property
    def env_params(self):
        """The current environment sample (reward model and action set)."""
        return self._params

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            seed = check_seed("seed", seed)  # before gymnasium's generator is reseeded
        super().reset(seed=seed)
        key = _seed_key(seed, self.np_random)
        obs, self._state, self._params, self._key, best = _reset(self.core, key)
        return np.asarray(obs), _python_info(best)

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(action)
        if a.ndim != 0 or not np.issubdtype(a.dtype, np.integer) or not 0 <= a < self.core.num_actions:
            raise ValueError(
                f"action must be an integer in [0, {self.core.num_actions}), got {action!r}"
            )
        obs, self._state, reward, info, self._key = _step(
            self.core, self._key, self._state, jnp.int32(a), self._params
        )
        return np.asarray(obs), float(reward), False, False, _python_info(info)


@jax.jit
def _vector_step(core, keys, states, actions, params, needs_reset):
    stepped = jax.vmap(lambda k, s, a, p: _step.__wrapped__(core, k, s, a, p))(
        keys, states, actions, params
    )
    fresh = jax.vmap(lambda k: _reset.__wrapped__(core, k))(keys)
    obs_s, state_s, reward_s, info_s, key_s = stepped
    obs_r, state_r, params_r, key_r, info_r = fresh

    def pick(a, b):
        mask = needs_reset.reshape(needs_reset.shape + (1,) * (a.ndim - 1))
        return jnp.where(mask, a, b)

    obs = pick(obs_r, obs_s)
    states = jax.tree.map(pick, state_r, state_s)
    params = jax.tree.map(pick, params_r, params)
    keys = pick(key_r, key_s)
    reward = jnp.where(needs_reset, 0.0, reward_s)
    # A copy being reset reports what a reset reports (the optimum of the set it now
    # shows), as gymnasium's SyncVectorEnv does with the single env's reset info.
    info = {k: pick(info_r[k], v) if k in info_r else pick(jnp.zeros_like(v), v) for k, v in info_s.items()}
    return obs, states, params, reward, info, keys


@jax.jit
def _vector_reset(core, keys):
    return jax.vmap(lambda k: _reset.__wrapped__(core, k))(keys)


class BanditVectorEnv(VectorEnv):
    """num_envs copies stepped together in one compiled, vmapped call.

    Each copy has its own seed (``seed + i`` of gymnasium's convention for an
    int seed, or a list of seeds) and so its own environment sample. With
    ``max_episode_steps``, a copy truncates after that many steps and is reset
    on the following ``step`` call (gymnasium's NEXT_STEP autoreset; that call
    ignores its action and returns reward 0, and its info holds only a reset's keys
    for that copy: ``info["_regret"][i]`` is False, ``info["_optimal_action"][i]``
    True). ``gym.make_vec`` passes the registered 10,000; ``max_episode_steps=None``
    or -1 (``gym.make``'s "no limit") never truncates. Reset's info holds
    optimal_action and optimal_expected_reward per copy, as arrays [num_envs].
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env_id: str, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs):
        self.num_envs = check_int("num_envs", num_envs, 1)
        if not isinstance(max_episode_steps, bool) and max_episode_steps == -1:
            max_episode_steps = None  # gym.make's way of saying "no TimeLimit"
        self.max_episode_steps = check_optional_int("max_episode_steps", max_episode_steps, 1)
        self.core = make_bandit(env_id, **kwargs)
        self.single_observation_space = _observation_space(self.core)
        self.single_action_space = spaces.Discrete(self.core.num_actions)
        self.observation_space = gymnasium.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._keys = None
        self._states = None
        self._params = None
        self._needs_reset = np.zeros(self.num_envs, bool)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        # Every copy's seed is checked before gymnasium's generator is reseeded.
        if seed is None:
            given = None
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            given = [check_seed("seed", seed)]
            given += [check_seed(f"seed + {i} (copy {i}'s seed)", given[0] + i) for i in range(1, self.num_envs)]
        else:
            try:
                given = list(seed)
            except TypeError:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} ints, got {seed!r}") from None
            if len(given) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} ints, got {seed!r}")
            given = [check_seed(f"seed[{i}]", s) for i, s in enumerate(given)]
        super().reset(seed=None if given is None else given[0])
        if given is None:
            seeds = [int(s) for s in self.np_random.integers(0, 2**31 - 1, self.num_envs)]
        else:
            seeds = given
        keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in seeds])
        keys = jax.random.wrap_key_data(keys)
        obs, self._states, self._params, self._keys, best = _vector_reset(self.core, keys)
        self._needs_reset = np.zeros(self.num_envs, bool)
        info = {}
        for k, v in best.items():
            info[k] = np.asarray(v)
            info["_" + k] = np.ones(self.num_envs, bool)
        return np.asarray(obs), info

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if (
            actions.shape != (self.num_envs,)
            or not np.issubdtype(actions.dtype, np.integer)
            or not np.all((actions >= 0) & (actions < self.core.num_actions))
        ):
            raise ValueError(
                f"actions must be {self.num_envs} integers in [0, {self.core.num_actions}), got {actions!r}"
            )
        needs_reset = jnp.asarray(self._needs_reset)
        obs, self._states, self._params, reward, info, self._keys = _vector_step(
            self.core, self._keys, self._states, jnp.asarray(actions, jnp.int32), self._params, needs_reset
        )
        t = np.asarray(self._states.t)
        truncated = (
            np.zeros(self.num_envs, bool)
            if self.max_episode_steps is None
            else (t >= self.max_episode_steps) & ~self._needs_reset
        )
        self._needs_reset = truncated.copy()
        terminated = np.zeros(self.num_envs, bool)
        info_np = {}
        for k, v in info.items():
            info_np[k] = np.asarray(v)
            info_np["_" + k] = np.ones(self.num_envs, bool) if k in RESET_INFO_KEYS else ~np.asarray(needs_reset)
        return np.asarray(obs), np.asarray(reward, np.float32), terminated, truncated, info_np
