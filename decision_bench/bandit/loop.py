"""The Thompson-sampling loop as pure functions (paper 000, Sec. 5 and App. E, Alg. 4).

``BanditLoop`` holds an agent, a functional bandit core and the loop's settings
as one pytree; ``BanditLoop.step`` is one environment step for one seed (act,
observe the reward, store the transition, train). ``run_chunk`` scans it over
time and vmaps it over seeds. ``make_loop`` builds a loop from names, with
validation. See ``decision_bench.bandit`` for the policies, the replay and the
key derivation.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# The key derivation's purpose tags (see decision_bench.bandit); changing one changes every result.
from decision_bench._src.keys import (
    BANDIT_ACT_TAG,
    BANDIT_AGENT_TAG,
    BANDIT_INIT_TAG,
    BANDIT_LEARN_TAG,
)
from decision_bench._src.validation import check_choice, check_int, check_positive
from decision_bench.agents.base import Agent, Batch, params_are_finite
from decision_bench.agents.contract import check_agent_contract
from decision_bench.agents.host_agent import is_host_agent
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.envs.bandits import BanditParams, BanditState, BernoulliBandit, make_bandit
from decision_bench.envs.showdown import real_valued_rewards
from decision_bench.specs import REGULARIZATION_MODES, ProblemSpec

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
# produced the reference runs. Override per run with BanditLoopConfig(regularization=...) or
# `decision-bench bandit --regularization`: it is the problem's (ProblemSpec.regularization).
DEFAULT_REGULARIZATION = "sequential_linear_beta"


@dataclasses.dataclass(frozen=True)
class BanditLoopConfig:
    """The settings of the Thompson-sampling loop, checked when made (ValueError naming the
    field). ``run_bandit`` takes this object; ``ThompsonPolicy`` and ``make_loop`` take it
    and keywords that replace its fields; ``decision-bench bandit`` builds it from flags.

    policy: "thompson", "greedy" or "uniform". update_mode: "replay" or "online";
    None uses the agent record's own. steps_per_obs optimiser steps per observation
    on batches of batch_size drawn from a replay of replay_capacity (also the spec's
    num_train). greedy_samples: draws averaged by "greedy" when the agent has no
    member_logits. learning_rate: replaces a registered agent's own default where it
    declares one. regularization: how the L2 (or KL) weight decays with t (the bandit
    spec's, ``DEFAULT_REGULARIZATION`` or "sequential").
    """

    policy: str = "thompson"
    update_mode: str | None = None
    steps_per_obs: int = 1
    batch_size: int = 128
    replay_capacity: int = 10_000
    greedy_samples: int = 32
    learning_rate: float = 1e-3
    regularization: str = DEFAULT_REGULARIZATION

    def __post_init__(self) -> None:
        check_choice("policy", self.policy, POLICIES)
        if self.update_mode is not None:
            check_choice("update_mode", self.update_mode, UPDATE_MODES)
        # Frozen: the checked (int, float) values replace the given ones once, here.
        for name in ("steps_per_obs", "batch_size", "replay_capacity", "greedy_samples"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), 1))
        object.__setattr__(self, "learning_rate", check_positive("learning_rate", self.learning_rate))
        check_choice("regularization", self.regularization, REGULARIZATION_MODES)


def loop_config(config: BanditLoopConfig | None, settings: dict) -> BanditLoopConfig:
    """``config`` (default: the defaults) with the keyword ``settings`` replacing its fields."""
    unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(BanditLoopConfig)})
    if unknown:
        fields = [f.name for f in dataclasses.fields(BanditLoopConfig)]
        raise ValueError(f"unknown bandit loop setting {unknown[0]!r}; accepted: {fields}")
    return dataclasses.replace(config or BanditLoopConfig(), **settings)


# ----------------------------------------------------------------------------
# State


class Replay(NamedTuple):
    """Fixed-size ring buffer; position t % capacity holds observation t."""

    x: jax.Array  # [capacity, input_dim] f32: features of the chosen actions
    y: jax.Array  # [capacity] i32: rewards (the labels); f32 where rewards are real-valued


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

    The agent and the environment are its data (the agent's hyperparameters and the
    environment's real numbers, such as beta, are array leaves; their shapes are
    structure); the settings are static. So the jitted entry points take the
    loop as an ordinary argument: two loops that differ only in hyperparameter or
    environment values share one compiled program. All methods are pure functions of arrays;
    shapes are per seed. Built by ``make_loop``; ``BanditLoopConfig`` documents
    the settings.
    """

    agent: Agent
    env: Any  # a functional bandit core from envs/bandits.py
    # The static settings the step reads (BanditLoopConfig's, update_mode resolved);
    # they carry no defaults here: make_loop builds a loop from a BanditLoopConfig.
    policy: str
    update_mode: str
    steps_per_obs: int
    batch_size: int
    replay_capacity: int
    greedy_samples: int  # draws averaged by `greedy` when the agent has no member_logits

    def init_learner(self, seed: jax.Array) -> LearnerState:
        """A fresh learner for a seed ([] int): agent initialised, replay empty."""
        _, k_agent = seed_keys(seed)
        # An agent knows its spec (shapes) from construction: init takes only a key.
        state = self.agent.init(jax.random.fold_in(k_agent, BANDIT_INIT_TAG))
        d = self.env.input_dim
        replay = Replay(
            x=jnp.zeros((self.replay_capacity, d), jnp.float32),
            y=jnp.zeros((self.replay_capacity,), self.reward_dtype),
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

    @property
    def reward_dtype(self) -> Any:
        """What the replay stores as y: 0/1 labels (i32), or real rewards (f32) for
        the Gaussian bandits, whose agents score with (0, sampled mean reward)."""
        return jnp.float32 if real_valued_rewards(self.env) else jnp.int32

    def scores(self, agent_state: Any, key: jax.Array, actions: jax.Array) -> jax.Array:
        """Policy scores of the action set: actions [A, d] -> [A] (higher is better)."""
        if self.policy == "greedy" and real_valued_rewards(self.env):
            # Real-reward agents' logit differences are sampled mean rewards: the
            # greedy score is their average (a sigmoid would saturate at rewards like 50).
            keys = jax.random.split(key, self.greedy_samples)
            draws = jax.vmap(lambda k: self.agent.sample_logits(k, agent_state, actions))(keys)
            return (draws[..., 1] - draws[..., 0]).mean(axis=0)
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
        learner, finite = self.learn(carry.learner, actions[action], reward.astype(self.reward_dtype))
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


_LOOP_SETTINGS = ("policy", "update_mode", "steps_per_obs", "batch_size", "replay_capacity", "greedy_samples")


def _flatten_loop(loop: BanditLoop) -> tuple[tuple, tuple]:
    # This package's cores are pytrees whose real numbers (beta, delta, noise scales) are
    # leaves (envs/bandits.py): they are data, like the agent, so another beta compiles
    # nothing. A user's core that is not a pytree would be one opaque leaf, which jit
    # cannot take: it stays static, as every core once was.
    env_is_data = not jax.tree_util.treedef_is_leaf(jax.tree.structure(loop.env))
    data = (loop.agent, loop.env if env_is_data else None)
    static = (None if env_is_data else loop.env, *(getattr(loop, name) for name in _LOOP_SETTINGS))
    return data, static


def _unflatten_loop(static: tuple, data: tuple) -> BanditLoop:
    agent, env = data
    static_env, *settings = static
    return BanditLoop(
        agent=agent, env=env if static_env is None else static_env, **dict(zip(_LOOP_SETTINGS, settings))
    )


jax.tree_util.register_pytree_node(BanditLoop, _flatten_loop, _unflatten_loop)


# Compiled entry points. The loop is a traced argument: loops with the same agent
# functions, environment shapes and settings share one compiled program, whatever the
# agent's hyperparameter values and the environment's temperature.


@jax.jit
def init_carries(loop: BanditLoop, seeds: jax.Array) -> tuple[SeedCarry, BanditParams]:
    """seeds [S] i32 -> (carry, env params), each with a leading [S] axis."""
    return jax.vmap(loop.init_carry)(seeds)


@functools.partial(jax.jit, static_argnums=3, donate_argnums=1)
def run_chunk(
    loop: BanditLoop, carry: SeedCarry, params: BanditParams, length: int
) -> tuple[SeedCarry, StepOutput]:
    # The carry is donated: its buffers (agent states, replay) are reused in place.
    return loop.run_chunk(carry, params, length)


@jax.jit
def init_learner(loop: BanditLoop, seed: jax.Array) -> LearnerState:
    return loop.init_learner(seed)


@jax.jit
def act_step(loop: BanditLoop, learner: LearnerState, actions: jax.Array) -> jax.Array:
    return loop.act(learner, actions)


@jax.jit
def learn_step(
    loop: BanditLoop, learner: LearnerState, x: jax.Array, y: jax.Array
) -> tuple[LearnerState, jax.Array]:
    return loop.learn(learner, x, y)


# ----------------------------------------------------------------------------
# Building the pieces from names, with validation


def _resolve_env(env: Any, env_kwargs: dict | None) -> tuple[Any, str]:
    """(functional core, env id) from an id (with or without ``decision_bench/``) or a core."""
    if isinstance(env, str):
        name = env.split("/", 1)[-1]
        return make_bandit(name, **(env_kwargs or {})), name
    if all(hasattr(env, a) for a in ("sample_params", "reset", "step", "num_actions")):
        if env_kwargs:
            raise ValueError("env_kwargs is only accepted with an environment id, not a core")
        return env, type(env).__name__ + "-v0"
    core = getattr(getattr(env, "unwrapped", None), "core", None)
    if core is not None:  # a Gymnasium env from this package
        return _resolve_env(core, env_kwargs)
    raise ValueError(
        "env must be an environment id such as 'NeuralBandit-v0', a functional "
        f"bandit core or a decision_bench Gymnasium env, got {env!r}"
    )


def bandit_spec(env: Any, replay_capacity: int, regularization: str = DEFAULT_REGULARIZATION) -> ProblemSpec:
    """What an agent may know about a bandit: its input_dim, 2 classes, its temperature,
    and how its regulariser decays with t (``regularization``).

    Its num_train is the replay capacity (``ProblemSpec.replay_capacity``)."""
    return ProblemSpec(
        input_dim=env.input_dim,
        num_classes=2,
        temperature=float(env.temperature),
        num_train=replay_capacity,
        regularization=regularization,
    )


def _resolve_agent(
    agent: Any, spec: ProblemSpec, learning_rate: float, agent_kwargs: dict | None
) -> Agent:
    """A registered name (built with the bandit's spec, whose regularization is
    sequential), an Agent record used as given, or a user's
    ``make_agent(spec) -> Agent`` called with the bandit's spec."""
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
    return registry.make(agent, spec, **registered_overrides(agent, learning_rate, agent_kwargs))


def registered_overrides(agent: str, learning_rate: float, agent_kwargs: dict | None) -> dict:
    """The overrides a registered agent is built with in the bandit: the bandit's
    learning rate where the agent declares one (replacing its own default, e.g.
    bbb's), then ``agent_kwargs``. Nothing the agent does not declare."""
    from decision_bench.agents import registry

    overrides = {}
    if "learning_rate" in registry.hyperparameters(agent):
        overrides["learning_rate"] = learning_rate
    overrides.update(agent_kwargs or {})
    return overrides


def check_seeds(seeds: Any) -> list[int]:
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
    env: Any,
    config: BanditLoopConfig | None = None,
    *,
    env_kwargs: dict | None = None,
    agent_kwargs: dict | None = None,
    **settings: Any,
) -> tuple[BanditLoop, str]:
    """Builds (loop, env id) from a ``BanditLoopConfig`` (default: its defaults) whose
    fields ``settings`` replace (``make_loop(agent, env, policy="uniform")``). See
    ``run_bandit``."""
    config = loop_config(config, settings)
    env, env_id = _resolve_env(env, env_kwargs)
    real_rewards = real_valued_rewards(env)
    # Any agent may play a Gaussian-reward bandit under the uniform policy (it is never
    # trained there): only the regret is accounted.
    if isinstance(agent, str) and not (real_rewards and config.policy == "uniform"):
        check_inputs_fit(agent, env_id, one_hot=isinstance(env, BernoulliBandit), real_rewards=real_rewards)
    spec = bandit_spec(env, config.replay_capacity, config.regularization)
    built = _resolve_agent(agent, spec, config.learning_rate, agent_kwargs)
    if not isinstance(agent, str) and not (real_rewards and config.policy == "uniform"):
        # A user's agent is traced once here, before any step: a wrong one is one line.
        check_agent_contract(built, spec, f"agent {built.name!r}",
                             label_dtype=jnp.float32 if real_rewards else jnp.int32)
    update_mode = built.update_mode if config.update_mode is None else config.update_mode
    check_choice("update_mode", update_mode, UPDATE_MODES)
    if update_mode == "replay" and is_host_agent(built):
        raise ValueError(
            f"agent {built.name!r} is a host agent (agents/host_agent.py): it refits on every observation "
            "(update_mode 'online', refit_every K), not on replay minibatches; leave update_mode unset"
        )
    loop = BanditLoop(
        agent=built,
        env=env,
        policy=config.policy,
        update_mode=update_mode,
        steps_per_obs=config.steps_per_obs,
        batch_size=config.batch_size,
        replay_capacity=config.replay_capacity,
        greedy_samples=config.greedy_samples,
    )
    return loop, env_id
