"""Thompson sampling in the neural bandit (paper 000, Sec. 5 and App. E, Alg. 4).

Two doors onto one set of pure functions:

- ``run_bandit``: the whole experiment compiled. Time is a ``jax.lax.scan``,
  seeds are a ``jax.vmap`` axis, and the scan runs in chunks (``chunk_size``
  steps) so that a progress bar advances and the carry is saved after each
  chunk; running again with the same ``out_dir`` continues from the last
  saved chunk (``resume=False`` starts over).
- ``ThompsonPolicy``: the conventional path, driven by the user in a plain
  Gymnasium loop (``a = policy.act(obs); obs2, r, ... = env.step(a);
  policy.observe(obs, a, r)``). It calls the same ``BanditLoop.act`` and
  ``BanditLoop.learn`` as the compiled step, one jitted call each.

Every step: the policy scores the action set (``thompson``: one
``sample_logits`` draw, argmax of P(y = 1) with random tie-breaking; ``greedy``:
the agent's mean prediction; ``uniform``: a random action), the environment
returns the reward, the transition (x of the chosen action, reward) enters a
ring-buffer replay of ``replay_capacity``, then ``steps_per_obs`` optimiser steps
run on batches of ``batch_size`` drawn uniformly with replacement from the
filled part, with ``Batch.num_seen = t`` (observations so far, so the
``sequential`` regulariser decays as 1/t) and ``Batch.index`` = buffer position.

Two documented exceptions: under the ``uniform`` policy the agent is not
trained (it cannot influence the actions or the regret); an agent whose record
says ``update_mode="online"`` (exact Bayesian update, e.g. ``beta_bernoulli``) is fed online: one ``update``
per step with a batch holding only the newest transition, so every
observation counts exactly once (``update_mode="online"``; force either mode
with ``update_mode``).

Key derivation (why the two doors agree). For a seed s:

    root = jax.random.key(s)
    # environment: exactly the Gymnasium adapter's chain (envs/adapters.py), so
    # gymnasium's env.reset(seed=s) produces the same environment and rewards
    k_params, k_reset, k_env = jax.random.split(root, 3)
    every step:  k_env, k_step = jax.random.split(k_env)
    # agent: its own stream, purpose-tagged so it never meets the env chain
    k_agent = fold_in(root, AGENT=1001)
    agent.init key      = fold_in(k_agent, INIT=0)
    step t (t = observations before the step, 0-based):
        act key         = fold_in(fold_in(k_agent, ACT=1), t) -> split: (draw, tie-break)
        learn key       = fold_in(fold_in(k_agent, LEARN=2), t)
        SGD step j      = fold_in(learn key, j) -> split: (batch positions, agent update)

Keys depend on (seed, t) only, never on the chunking or on the other seeds, so
a resumed run, a run with a different chunk size, a single-seed run and the
slow path all draw the same keys. (``split`` and ``fold_in`` coincide on small
counters under JAX's partitionable threefry, hence the large tag 1001.)

Numerical failure: a seed whose agent state becomes non-finite is frozen from
that step on (its regret stops accumulating, its rows after that step are NaN)
and the step is reported in the ``error`` column; other seeds continue.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write, atomic_write_text
# The key derivation's purpose tags (above); changing one changes every result.
from decision_bench._src.keys import BANDIT_ACT_TAG, BANDIT_AGENT_TAG, BANDIT_INIT_TAG, BANDIT_LEARN_TAG
from decision_bench._validation import check_choice, check_int, check_positive
from decision_bench.agents.base import Agent, Batch, params_are_finite
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.envs.bandits import BanditParams, BanditState, BernoulliBandit, make_bandit
from decision_bench.specs import ProblemSpec

POLICIES = ("thompson", "greedy", "uniform")
UPDATE_MODES = ("replay", "online")
COLUMNS = (
    "agent",
    "policy",
    "env",
    "input_dim",
    "num_actions",
    "temperature",
    "seed",
    "step",
    "cumulative_regret",
    "final_regret",
    "wall_seconds",
    "error",
)

# The decayed L2 weight in the bandit. Paper 000 App. E.2 prints lambda * 2 sqrt(beta) /
# (M t) ("sequential"); the released code, which made the published figures, uses
# lambda * 2 beta / (M t) ("sequential_linear_beta"). Evidence (scripts/
# compare_reference_bandit.py, d = 2, 40 actions, beta = 0.1, 3000 steps, 20 seeds of
# ours against the reference's 5): both are indistinguishable from the reference's runs
# (mlp median regret 10.7 / 10.7 vs 11.6, rank-test p = 0.95 for both; ensemble+ with 100
# members 44.9 / 39.3 vs 60.6, p = 0.30 for both), so the default follows the code that
# produced the reference runs. Override per run with agent_kwargs={"regularization": ...}
# or `decision-bench bandit --regularization`.
DEFAULT_REGULARIZATION = "sequential_linear_beta"


_STATE_FILE = "bandit_state.npz"
_CONFIG_FILE = "bandit_config.json"
_PREVIOUS_STATE_FILE = "bandit_state.prev.npz"


# ----------------------------------------------------------------------------
# State


class Replay(NamedTuple):
    """Fixed-size ring buffer; position t % capacity holds observation t."""

    x: jax.Array  # [capacity, input_dim] f32: features of the chosen actions
    y: jax.Array  # [capacity] i32: rewards (the labels)


class LearnerState(NamedTuple):
    """Everything the policy owns for one seed."""

    agent: Any  # the agent's state
    replay: Replay
    t: jax.Array  # [] i32: observations so far
    key: jax.Array  # [2] u32: key data of k_agent (raw, so checkpoints are plain arrays)


class StepOutput(NamedTuple):
    """What the scan emits per step (stacked to [S, length] by ``run_chunk``)."""

    cumulative_regret: jax.Array  # [] f32, after this step
    action: jax.Array  # [] i32
    reward: jax.Array  # [] f32


class SeedCarry(NamedTuple):
    """The scan carry of one seed (the vmapped carry has a leading [num_seeds] axis)."""

    learner: LearnerState
    env_state: BanditState
    env_key: jax.Array  # [2] u32: key data of the environment chain k_env
    cumulative_regret: jax.Array  # [] f32
    alive: jax.Array  # [] bool: False once the agent state went non-finite
    failed_at: jax.Array  # [] i32: the step whose update went non-finite, 0 if none


def seed_keys(seed: Any) -> tuple[jax.Array, jax.Array]:
    """(root, k_agent) for a seed (a Python or traced int); see the module docstring."""
    root = jax.random.key(seed)
    return root, jax.random.fold_in(root, BANDIT_AGENT_TAG)


# ----------------------------------------------------------------------------
# The per-step functions shared by both paths


@dataclasses.dataclass(frozen=True)
class BanditLoop:
    """One (agent, environment, policy) loop; a pytree.

    The agent is its only data (its hyperparameters are array leaves); the
    environment and the settings are static. So the jitted entry points take the
    loop as an ordinary argument: two loops that differ only in hyperparameter
    values share one compiled program. All methods are pure functions of arrays;
    shapes are per seed.
    """

    agent: Agent
    env: Any  # a functional bandit core from envs/bandits.py
    policy: str = "thompson"
    update_mode: str = "replay"
    steps_per_obs: int = 1
    batch_size: int = 128
    replay_capacity: int = 10_000
    greedy_samples: int = 32  # draws averaged by `greedy` when the agent has no member_logits

    def init_learner(self, seed: jax.Array) -> LearnerState:
        """A fresh learner for a seed ([] int): agent initialised, replay empty."""
        _, k_agent = seed_keys(seed)
        # An agent knows its spec (shapes) from construction: init takes only a key.
        state = self.agent.init(jax.random.fold_in(k_agent, BANDIT_INIT_TAG))
        d = self.env.input_dim
        replay = Replay(
            x=jnp.zeros((self.replay_capacity, d), jnp.float32),
            y=jnp.zeros((self.replay_capacity,), jnp.int32),
        )
        return LearnerState(
            agent=state, replay=replay, t=jnp.zeros((), jnp.int32), key=jax.random.key_data(k_agent)
        )

    def init_env(self, seed: jax.Array) -> tuple[BanditParams, BanditState, jax.Array]:
        """(env params, env state, k_env key data) for a seed: the adapter's reset chain."""
        root, _ = seed_keys(seed)
        k_params, k_reset, k_env = jax.random.split(root, 3)
        params = self.env.sample_params(k_params)
        _, env_state = self.env.reset(k_reset, params)
        return params, env_state, jax.random.key_data(k_env)

    def scores(self, agent_state: Any, key: jax.Array, actions: jax.Array) -> jax.Array:
        """Policy scores of the action set: actions [A, d] -> [A] (higher is better)."""
        if self.policy == "thompson":
            logits = self.agent.sample_logits(key, agent_state, actions)  # [A, 2]
            # log-odds of reward 1: monotone in P(y = 1) and, unlike the
            # probability, it does not saturate to exact ties at 0 or 1.
            return logits[:, 1] - logits[:, 0]
        if self.agent.member_logits is not None:
            members = self.agent.member_logits(agent_state, actions)  # [M, A, 2]
            return jax.nn.softmax(members, axis=-1)[..., 1].mean(axis=0)
        keys = jax.random.split(key, self.greedy_samples)
        draws = jax.vmap(lambda k: self.agent.sample_logits(k, agent_state, actions))(keys)
        return jax.nn.softmax(draws, axis=-1)[..., 1].mean(axis=0)

    def act(self, learner: LearnerState, actions: jax.Array) -> jax.Array:
        """The action (a [] i32) for the action set actions [A, d] at step learner.t."""
        key = jax.random.fold_in(
            jax.random.fold_in(jax.random.wrap_key_data(learner.key), BANDIT_ACT_TAG), learner.t
        )
        k_draw, k_tie = jax.random.split(key)
        num_actions = actions.shape[0]
        if self.policy == "uniform":
            return jax.random.randint(k_draw, (), 0, num_actions, jnp.int32)
        score = self.scores(learner.agent, k_draw, actions)
        best = score == jnp.max(score)
        # NaN scores (a failed agent) leave no maximum: fall back to uniform.
        best = jnp.where(jnp.any(best), best, True)
        return jax.random.categorical(k_tie, jnp.where(best, 0.0, -jnp.inf)).astype(jnp.int32)

    def learn(self, learner: LearnerState, x: jax.Array, y: jax.Array) -> tuple[LearnerState, jax.Array]:
        """Stores (x [d], y [] i32) and trains; returns (learner, finite [] bool)."""
        pos = learner.t % self.replay_capacity
        replay = Replay(x=learner.replay.x.at[pos].set(x), y=learner.replay.y.at[pos].set(y))
        t = learner.t + 1
        num_seen = t.astype(jnp.float32)
        k_learn = jax.random.fold_in(
            jax.random.fold_in(jax.random.wrap_key_data(learner.key), BANDIT_LEARN_TAG), learner.t
        )
        state = learner.agent
        if self.policy == "uniform":
            pass  # training cannot change a uniform policy's actions: skip it
        elif self.update_mode == "online":
            batch = Batch(x=x[None], y=y[None], num_seen=num_seen, index=pos[None])
            state = self.agent.update(jax.random.fold_in(k_learn, 0), state, batch)
        else:
            filled = jnp.minimum(t, self.replay_capacity)

            def sgd_step(state: Any, j: jax.Array) -> tuple[Any, None]:
                k_index, k_update = jax.random.split(jax.random.fold_in(k_learn, j))
                index = jax.random.randint(k_index, (self.batch_size,), 0, filled, jnp.int32)
                batch = Batch(x=replay.x[index], y=replay.y[index], num_seen=num_seen, index=index)
                return self.agent.update(k_update, state, batch), None

            state, _ = jax.lax.scan(sgd_step, state, jnp.arange(self.steps_per_obs))
        learner = LearnerState(agent=state, replay=replay, t=t, key=learner.key)
        return learner, params_are_finite(state)

    def step(self, carry: SeedCarry, params: BanditParams) -> tuple[SeedCarry, StepOutput]:
        """One environment step of one seed."""
        actions = carry.env_state.actions  # [A, d]
        action = self.act(carry.learner, actions)
        k_env, k_step = jax.random.split(jax.random.wrap_key_data(carry.env_key))
        _, env_state, reward, info = self.env.step(k_step, carry.env_state, action, params)
        learner, finite = self.learn(carry.learner, actions[action], reward.astype(jnp.int32))
        ok = carry.alive & finite
        # Freeze a failed seed's agent at its last finite state (the action of
        # this step was still taken with finite parameters, so its regret counts).
        # Only the agent state is selected: selecting the whole replay buffer too
        # would copy it every step, and a stopped seed's buffer is never read.
        frozen = jax.tree.map(lambda new, old: jnp.where(ok, new, old), learner.agent, carry.learner.agent)
        learner = learner._replace(agent=frozen)
        cumulative = carry.cumulative_regret + jnp.where(carry.alive, info["regret"], 0.0)
        failed_at = jnp.where(carry.alive & ~finite, learner.t, carry.failed_at)
        carry = SeedCarry(
            learner=learner,
            env_state=env_state,
            env_key=jax.random.key_data(k_env),
            cumulative_regret=cumulative,
            alive=ok,
            failed_at=failed_at,
        )
        return carry, StepOutput(cumulative_regret=cumulative, action=action, reward=reward)

    def init_carry(self, seed: jax.Array) -> tuple[SeedCarry, BanditParams]:
        """(carry, env params) of a seed ([] int) before its first step."""
        params, env_state, k_env = self.init_env(seed)
        carry = SeedCarry(
            learner=self.init_learner(seed),
            env_state=env_state,
            env_key=k_env,
            cumulative_regret=jnp.zeros((), jnp.float32),
            alive=jnp.ones((), bool),
            failed_at=jnp.zeros((), jnp.int32),
        )
        return carry, params

    def run_chunk(
        self, carry: SeedCarry, params: BanditParams, length: int
    ) -> tuple[SeedCarry, StepOutput]:
        """``length`` steps of every seed (leading axes [S]); outputs are [S, length]."""

        def one_seed(c: SeedCarry, p: BanditParams) -> tuple[SeedCarry, StepOutput]:
            return jax.lax.scan(lambda c_, _: self.step(c_, p), c, None, length=length)

        return jax.vmap(one_seed)(carry, params)


jax.tree_util.register_dataclass(
    BanditLoop,
    data_fields=["agent"],
    meta_fields=[
        "env", "policy", "update_mode", "steps_per_obs", "batch_size", "replay_capacity",
        "greedy_samples",
    ],
)


# Compiled entry points. The loop is a traced argument: loops with the same agent
# functions, environment and settings share one compiled program, whatever the
# agent's hyperparameter values.


@jax.jit
def _init_carries(loop: BanditLoop, seeds: jax.Array) -> tuple[SeedCarry, BanditParams]:
    """seeds [S] i32 -> (carry, env params), each with a leading [S] axis."""
    return jax.vmap(loop.init_carry)(seeds)


@functools.partial(jax.jit, static_argnums=3, donate_argnums=1)
def _run_chunk(
    loop: BanditLoop, carry: SeedCarry, params: BanditParams, length: int
) -> tuple[SeedCarry, StepOutput]:
    # The carry is donated: its buffers (agent states, replay) are reused in place.
    return loop.run_chunk(carry, params, length)


@jax.jit
def _init_learner(loop: BanditLoop, seed: jax.Array) -> LearnerState:
    return loop.init_learner(seed)


@jax.jit
def _act(loop: BanditLoop, learner: LearnerState, actions: jax.Array) -> jax.Array:
    return loop.act(learner, actions)


@jax.jit
def _learn(
    loop: BanditLoop, learner: LearnerState, x: jax.Array, y: jax.Array
) -> tuple[LearnerState, jax.Array]:
    return loop.learn(learner, x, y)


# ----------------------------------------------------------------------------
# Building the pieces from names, with validation


def _resolve_env(env_id_or_config: Any, env_kwargs: dict | None) -> tuple[Any, str]:
    """(functional core, env id) from an id (with or without ``decision_bench/``) or a core."""
    if isinstance(env_id_or_config, str):
        name = env_id_or_config.split("/", 1)[-1]
        return make_bandit(name, **(env_kwargs or {})), name
    if all(hasattr(env_id_or_config, a) for a in ("sample_params", "reset", "step", "num_actions")):
        if env_kwargs:
            raise ValueError("env_kwargs is only accepted with an environment id, not a core")
        return env_id_or_config, type(env_id_or_config).__name__ + "-v0"
    core = getattr(getattr(env_id_or_config, "unwrapped", None), "core", None)
    if core is not None:  # a Gymnasium env from this package
        return _resolve_env(core, env_kwargs)
    raise ValueError(
        "env_id_or_config must be an environment id such as 'NeuralBandit-v0', a functional "
        f"bandit core or a decision_bench Gymnasium env, got {env_id_or_config!r}"
    )


def bandit_spec(env: Any, replay_capacity: int) -> ProblemSpec:
    """What an agent may know about a bandit: its input_dim, 2 classes, its temperature.

    num_train is the replay capacity: Batch.index is a buffer position below it
    (agents that keep per-example weights, like bootstrapped ensembles, size
    their table by it)."""
    return ProblemSpec(
        input_dim=env.input_dim,
        num_classes=2,
        temperature=float(env.temperature),
        num_train=replay_capacity,
    )


def _resolve_agent(
    agent: Any, spec: ProblemSpec, learning_rate: float, agent_kwargs: dict | None
) -> Agent:
    """A registered name (built in sequential mode), an Agent record used as
    given, or a user's ``make_agent(spec) -> Agent`` called with the bandit's spec."""
    if not isinstance(agent, (Agent, str)) and callable(agent):
        if agent_kwargs:
            raise ValueError("agent_kwargs is only accepted with an agent name, not a make_agent function")
        built = agent(spec)
        if not isinstance(built, Agent):
            raise ValueError(f"make_agent(spec) must return a decision_bench.agents.Agent, got {type(built).__name__}")
        return built
    if isinstance(agent, Agent):
        if agent_kwargs:
            raise ValueError("agent_kwargs is only accepted with an agent name, not an Agent")
        return agent
    from decision_bench.agents import registry  # the registry imports every family

    if not isinstance(agent, str) or agent not in registry.names():
        raise ValueError(
            f"agent must be an Agent or one of {list(registry.names())}, got {agent!r}"
        )
    overrides = {"regularization": DEFAULT_REGULARIZATION}
    if "learning_rate" in registry.hyperparameters(agent):
        overrides["learning_rate"] = learning_rate
    overrides.update(agent_kwargs or {})
    return registry.make(agent, spec, **overrides)


def _check_seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        return list(range(check_int("seeds", seeds, 1)))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (list, tuple, range, np.ndarray)):
        raise ValueError(f"seeds must be a count >= 1 or a list of integer seeds, got {seeds!r}")
    values = [check_int("seeds", s, 0) for s in seeds]
    if not values:
        raise ValueError("seeds must be a count >= 1 or a non-empty list of seeds, got []")
    if len(set(values)) != len(values):
        raise ValueError(f"seeds must be distinct, got {list(seeds)!r}")
    return values


def make_loop(
    agent: Any,
    env_id_or_config: Any,
    *,
    policy: str = "thompson",
    steps_per_obs: int = 1,
    batch_size: int = 128,
    replay_capacity: int = 10_000,
    learning_rate: float = 1e-3,
    env_kwargs: dict | None = None,
    agent_kwargs: dict | None = None,
    update_mode: str | None = None,
    greedy_samples: int = 32,
) -> tuple[BanditLoop, str]:
    """Validates the arguments and builds (loop, env id). See ``run_bandit``."""
    check_choice("policy", policy, POLICIES)
    steps_per_obs = check_int("steps_per_obs", steps_per_obs, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    replay_capacity = check_int("replay_capacity", replay_capacity, 1)
    greedy_samples = check_int("greedy_samples", greedy_samples, 1)
    learning_rate = check_positive("learning_rate", learning_rate)
    env, env_id = _resolve_env(env_id_or_config, env_kwargs)
    if isinstance(agent, str):
        check_inputs_fit(agent, env_id, one_hot=isinstance(env, BernoulliBandit))
    built = _resolve_agent(agent, bandit_spec(env, replay_capacity), learning_rate, agent_kwargs)
    if update_mode is None:
        update_mode = built.update_mode
    check_choice("update_mode", update_mode, UPDATE_MODES)
    loop = BanditLoop(
        agent=built,
        env=env,
        policy=policy,
        update_mode=update_mode,
        steps_per_obs=steps_per_obs,
        batch_size=batch_size,
        replay_capacity=replay_capacity,
        greedy_samples=greedy_samples,
    )
    return loop, env_id


# ----------------------------------------------------------------------------
# Checkpoints: plain arrays, written atomically


def _to_numpy(tree: Any) -> list[np.ndarray]:
    leaves = jax.tree.leaves(tree)
    return [
        np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
        for x in leaves
    ]


def _from_numpy(template: Any, arrays: list[np.ndarray]) -> Any:
    """Arrays saved by _to_numpy, checked against the template's shapes and dtypes."""
    leaves, treedef = jax.tree.flatten(template)
    if len(leaves) != len(arrays):
        raise ValueError(
            f"checkpoint has {len(arrays)} arrays but this run's state has {len(leaves)}; "
            "it was written by a different agent or version"
        )
    restored = []
    for i, (leaf, array) in enumerate(zip(leaves, arrays)):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            value = jax.random.wrap_key_data(jnp.asarray(array), impl=jax.random.key_impl(leaf))
        else:
            value = jnp.asarray(array, leaf.dtype)
        if value.shape != leaf.shape:
            raise ValueError(
                f"checkpoint array {i} has shape {value.shape}, this run expects {leaf.shape}"
            )
        restored.append(value)
    return jax.tree.unflatten(treedef, restored)


class DamagedCheckpoint(Exception):
    """A checkpoint file that cannot be used; the message says why."""


def _checkpoint_digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _save_checkpoint(
    out_dir: Path, config: dict, carry: SeedCarry, t: int, wall_seconds: float, logged: np.ndarray
) -> None:
    """Writes the carry, progress and config as one self-checking npz.

    The config travels inside the file, so state and config can never be paired
    wrongly. The previous state is kept as ``bandit_state.prev.npz`` until the new
    one is in place: if the newest file is ever found damaged, the run continues
    from the one before instead of from step 0.
    """
    arrays = {f"leaf_{i:05d}": a for i, a in enumerate(_to_numpy(carry))}
    arrays["t"] = np.asarray(t, np.int64)
    arrays["wall_seconds"] = np.asarray(wall_seconds, np.float64)
    arrays["logged"] = np.asarray(logged, np.float64)
    arrays["config"] = np.asarray(json.dumps(config, sort_keys=True))
    arrays["sha256"] = np.asarray(_checkpoint_digest(arrays))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    state, previous = out_dir / _STATE_FILE, out_dir / _PREVIOUS_STATE_FILE
    if state.exists():
        # Copied, not renamed: at every instant both names hold a complete file.
        old = state.read_bytes()
        atomic_write(previous, lambda handle: handle.write(old))
    atomic_write(state, lambda handle: handle.write(data))
    # The human-readable copy; never read back, so it cannot be damaged usefully.
    atomic_write_text(out_dir / _CONFIG_FILE, json.dumps(config, indent=1, sort_keys=True) + "\n")


def _read_checkpoint(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(saved config, arrays) of one file that passes its checksum and holds values
    a run writes; DamagedCheckpoint saying why otherwise."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.array(data[name]) for name in data.files}
    except Exception as error:  # noqa: BLE001 - zip, pickle and format errors all mean "damaged"
        raise DamagedCheckpoint(f"unreadable ({type(error).__name__}: {error})") from None
    if "sha256" not in arrays or "config" not in arrays:
        raise DamagedCheckpoint("no checksum (written by an older version or by hand)")
    stored = str(arrays.pop("sha256"))
    if _checkpoint_digest(arrays) != stored:
        raise DamagedCheckpoint("checksum mismatch")
    try:
        config = json.loads(str(arrays["config"]))
        num_steps = int(config["num_steps"])  # the saved run's length, not this run's
        t, logged = int(arrays["t"]), arrays["logged"]
        float(arrays["wall_seconds"])
    except (KeyError, ValueError, TypeError) as error:
        raise DamagedCheckpoint(f"malformed ({error})") from None
    if not 0 < t <= num_steps or logged.ndim != 2 or not np.all(np.isfinite(logged)):
        # Regrets stay finite even for a seed that failed (its regret freezes), so
        # a NaN here never came from a run.
        raise DamagedCheckpoint("progress values out of range (non-finite regret or bad step)")
    return config, arrays


def _config_difference(saved: dict, config: dict) -> str:
    differ = sorted(k for k in set(saved) | set(config) if saved.get(k) != config.get(k))
    return "; ".join(f"{k}: saved {saved.get(k)!r}, now {config.get(k)!r}" for k in differ)


def _load_checkpoint(
    out_dir: Path, config: dict, template: SeedCarry
) -> tuple[SeedCarry, int, float, np.ndarray] | None:
    """The newest usable saved state of this config, or None if there is none.

    A damaged file is named in a warning and moved aside to ``<name>.damaged``
    (kept for inspection, never read again); the older state is tried next. A
    sound checkpoint of another config raises ValueError naming every argument
    that differs (before its arrays are compared with this run's shapes, so it is
    never mistaken for damage): resuming it would mix two experiments.
    """
    for name in (_STATE_FILE, _PREVIOUS_STATE_FILE):
        path = out_dir / name
        if not path.exists():
            continue
        try:
            saved, arrays = _read_checkpoint(path)
            if saved != config:
                raise ValueError(
                    f"{out_dir} holds a saved run with other arguments "
                    f"({_config_difference(saved, config)}); give the same arguments to resume "
                    "it, start over with --restart (resume=False in Python) or choose another "
                    "output folder"
                )
            try:
                leaves = [arrays[k] for k in sorted(k for k in arrays if k.startswith("leaf_"))]
                carry = _from_numpy(template, leaves)
            except ValueError as error:
                raise DamagedCheckpoint(f"does not fit its own arguments ({error})") from None
        except DamagedCheckpoint as why:
            os.replace(path, path.with_name(path.name + ".damaged"))
            warnings.warn(
                f"checkpoint {path} is damaged ({why}); discarding it (kept as "
                f"{path.name}.damaged) and continuing from the last good state or step 0",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        return carry, int(arrays["t"]), float(arrays["wall_seconds"]), np.array(arrays["logged"])
    return None


# ----------------------------------------------------------------------------
# The compiled experiment


def _log_steps(num_steps: int, log_every: int) -> np.ndarray:
    """Steps (1-based) with a row: every log_every-th step and the last one."""
    steps = set(range(log_every, num_steps + 1, log_every)) | {num_steps}
    return np.array(sorted(steps), np.int64)


def run_bandit(
    agent: Any,
    env_id_or_config: Any,
    num_steps: int,
    seeds: int | Sequence[int],
    policy: str = "thompson",
    steps_per_obs: int = 1,
    batch_size: int = 128,
    replay_capacity: int = 10_000,
    learning_rate: float = 1e-3,
    log_every: int | None = None,
    *,
    chunk_size: int = 1000,
    out_dir: str | os.PathLike | None = None,
    resume: bool | None = None,
    progress: bool = True,
    env_kwargs: dict | None = None,
    agent_kwargs: dict | None = None,
    update_mode: str | None = None,
    greedy_samples: int = 32,
    callback: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Runs a bandit experiment for every seed at once; returns one row per (seed, log step).

    agent: a registered name (built with ``regularization=DEFAULT_REGULARIZATION`` and,
      where its config has one, ``learning_rate``; ``agent_kwargs`` override
      more hyperparameters) or an ``Agent`` record used as given.
    env_id_or_config: ``"NeuralBandit-v0"``, ``"ContextualNeuralBandit-v0"``,
      ``"BernoulliBandit-v0"`` (``decision_bench/`` prefix optional; keyword
      arguments in ``env_kwargs``) or a functional bandit core.
    num_steps: steps per seed. seeds: a count n (seeds 0..n-1) or a list of
      seeds; each seed draws its own environment and agent initialisation.
    policy: "thompson", "greedy" or "uniform". steps_per_obs, batch_size,
      replay_capacity: see the module docstring. log_every: a row every
      log_every steps and at the last step (default: num_steps // 100).
    chunk_size: steps per compiled call; the carry is saved after each chunk to
      ``out_dir`` (if given). resume: None (default) continues a run saved in
      ``out_dir`` with the same config, if there is one, and returns the same
      rows as an uninterrupted run; a saved run of another config is refused
      with the differing arguments named, never overwritten. True is the same
      but needs ``out_dir``; False discards the saved run and starts over. A
      damaged checkpoint is reported, set aside and replaced by the previous
      one (or step 0). callback(t) is called after each chunk.
    update_mode: "replay" or "online"; None picks "online" for a
      ``ConjugateAgent`` and "replay" otherwise.

    Columns: agent, policy, env, input_dim, num_actions, temperature, seed, step,
    cumulative_regret, final_regret, wall_seconds (the whole vmapped run,
    compilation included, summed over resumed sessions; the same for every
    seed), error ("" or why that seed stopped; its later regrets are NaN).
    """
    from tqdm.auto import tqdm

    num_steps = check_int("num_steps", num_steps, 1)
    seed_list = _check_seeds(seeds)
    log_every = max(1, num_steps // 100) if log_every is None else check_int("log_every", log_every, 1)
    chunk_size = check_int("chunk_size", chunk_size, 1)
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir, where the run was saved")
    loop, env_id = make_loop(
        agent,
        env_id_or_config,
        policy=policy,
        steps_per_obs=steps_per_obs,
        batch_size=batch_size,
        replay_capacity=replay_capacity,
        learning_rate=learning_rate,
        env_kwargs=env_kwargs,
        agent_kwargs=agent_kwargs,
        update_mode=update_mode,
        greedy_samples=greedy_samples,
    )
    env = loop.env
    log_steps = _log_steps(num_steps, log_every)
    config = {
        "agent": loop.agent.name,
        "agent_kwargs": {k: repr(v) for k, v in sorted((agent_kwargs or {}).items())},
        "env": env_id,
        "env_config": repr(env),
        "num_steps": num_steps,
        "seeds": seed_list,
        "policy": policy,
        "update_mode": loop.update_mode,
        "steps_per_obs": loop.steps_per_obs,
        "batch_size": loop.batch_size,
        "replay_capacity": loop.replay_capacity,
        "learning_rate": float(learning_rate),
        "log_every": log_every,
        "jax_version": jax.__version__,
    }

    start = time.perf_counter()
    seed_array = jnp.asarray(seed_list, jnp.int32)
    carry, params = _init_carries(loop, seed_array)
    t, previous_wall, logged = 0, 0.0, np.zeros((len(seed_list), 0), np.float64)
    out_path = None if out_dir is None else Path(out_dir)
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        if resume is False:
            # The caller asked to start over: only now is saved progress removed.
            for name in (_STATE_FILE, _PREVIOUS_STATE_FILE):
                (out_path / name).unlink(missing_ok=True)
        else:
            saved = _load_checkpoint(out_path, config, carry)
            if saved is not None:
                carry, t, previous_wall, logged = saved
    bar = tqdm(
        total=num_steps,
        initial=t,
        desc=f"{loop.agent.name} on {env_id}",
        unit="step",
        disable=not progress,
    )
    with bar:
        while t < num_steps:
            length = min(chunk_size, num_steps - t)
            # One compiled program per chunk length (at most two: chunk_size and the rest).
            carry, outputs = _run_chunk(loop, carry, params, length)
            # [S, length]; one transfer per chunk (actions and rewards stay on device)
            cumulative = np.asarray(outputs.cumulative_regret, np.float64)
            here = log_steps[(log_steps > t) & (log_steps <= t + length)]
            logged = np.concatenate([logged, cumulative[:, here - t - 1]], axis=1)
            t += length
            if out_path is not None:
                wall = previous_wall + time.perf_counter() - start
                _save_checkpoint(out_path, config, carry, t, wall, logged)
            bar.update(length)
            if callback is not None:
                callback(t)
    wall_seconds = previous_wall + time.perf_counter() - start
    failed_at = np.asarray(carry.failed_at)
    return _rows(loop, env_id, seed_list, log_steps, logged, failed_at, wall_seconds)


def _rows(
    loop: BanditLoop,
    env_id: str,
    seeds: list[int],
    log_steps: np.ndarray,
    logged: np.ndarray,
    failed_at: np.ndarray,
    wall_seconds: float,
) -> pd.DataFrame:
    """The tidy result: logged [S, len(log_steps)] cumulative regrets, failed_at [S]."""
    num_seeds, num_logs = logged.shape
    failed = failed_at > 0
    # Rows at or after a failure step carry NaN: the seed stopped there.
    cumulative = np.where(failed[:, None] & (log_steps[None, :] >= failed_at[:, None]), np.nan, logged)
    final = np.where(failed, np.nan, logged[:, -1])
    errors = [
        f"agent parameters became non-finite at step {int(s)}; seed stopped" if s > 0 else ""
        for s in failed_at
    ]
    env = loop.env
    return pd.DataFrame(
        {
            "agent": loop.agent.name,
            "policy": loop.policy,
            "env": env_id,
            "input_dim": int(env.input_dim),
            "num_actions": int(env.num_actions),
            "temperature": float(env.temperature),
            "seed": np.repeat(np.asarray(seeds, np.int64), num_logs),
            "step": np.tile(log_steps, num_seeds),
            "cumulative_regret": cumulative.reshape(-1),
            "final_regret": np.repeat(final, num_logs),
            "wall_seconds": float(wall_seconds),
            "error": np.repeat(np.asarray(errors, object), num_logs),
        },
        columns=list(COLUMNS),
    )


# ----------------------------------------------------------------------------
# The conventional path


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
    docstring). Arguments as in ``run_bandit``; ``env`` may be a Gymnasium env of
    this package, an env id (with ``env_kwargs``) or a functional core. If the
    agent state becomes non-finite, the policy keeps its last finite state and
    records the step in ``failed_at`` / ``error``, as the compiled path does.
    """

    def __init__(
        self,
        agent: Any,
        env: Any,
        seed: int,
        *,
        policy: str = "thompson",
        steps_per_obs: int = 1,
        batch_size: int = 128,
        replay_capacity: int = 10_000,
        learning_rate: float = 1e-3,
        env_kwargs: dict | None = None,
        agent_kwargs: dict | None = None,
        update_mode: str | None = None,
        greedy_samples: int = 32,
    ):
        self.seed = check_int("seed", seed, 0)
        self.loop, self.env_id = make_loop(
            agent,
            env,
            policy=policy,
            steps_per_obs=steps_per_obs,
            batch_size=batch_size,
            replay_capacity=replay_capacity,
            learning_rate=learning_rate,
            env_kwargs=env_kwargs,
            agent_kwargs=agent_kwargs,
            update_mode=update_mode,
            greedy_samples=greedy_samples,
        )
        self.learner = _init_learner(self.loop, jnp.asarray(self.seed, jnp.int32))
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
        return int(_act(self.loop, self.learner, jnp.asarray(obs, jnp.float32)))

    def observe(self, obs: Any, action: int, reward: float) -> None:
        """Records (obs[action], reward) and trains, as one step of the compiled loop."""
        obs = jnp.asarray(obs, jnp.float32)
        action = check_int("action", action, 0)
        if action >= obs.shape[0]:
            raise ValueError(f"action must be in [0, {obs.shape[0]}), got {action}")
        if reward not in (0, 1):
            raise ValueError(f"reward must be 0 or 1, got {reward!r}")
        learner, finite = _learn(self.loop, self.learner, obs[action], jnp.asarray(int(reward), jnp.int32))
        if self.failed_at or not bool(finite):
            # As in the compiled path: the agent stays at its last finite state.
            self.failed_at = self.failed_at or int(learner.t)
            learner = learner._replace(agent=self.learner.agent)
        self.learner = learner
