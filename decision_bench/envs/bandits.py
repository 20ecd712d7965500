"""Functional, pure-JAX bandit environments (the engine behind the Gymnasium ids).

In the style of gymnax: static shapes live on a frozen dataclass, everything
that varies between environment samples lives in an explicit params pytree, and
``reset`` / ``step`` are pure functions of a key, so ``jax.jit``, ``jax.vmap``
over seeds and ``jax.lax.scan`` over time apply directly. Each core is also a
pytree whose real numbers (the temperature) are leaves and whose shapes are its
structure, so the compiled loop takes it as data: another beta compiles nothing::

    env = NeuralBandit(input_dim=2, num_actions=40, temperature=0.1)
    params = env.sample_params(key_env)           # one environment sample E
    obs, state = env.reset(key_reset, params)     # obs: action features [A, d]
    obs, state, reward, info = env.step(key_step, state, action, params)

The observation is the set of action feature vectors [num_actions, input_dim];
choosing action a yields reward 1 with probability p(x_a) = softmax(f(x_a))[1].
"""

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.pytrees import build_unchecked, register_data_fields
from decision_bench._src.validation import (
    check_choice,
    check_int,
    check_positive,
    check_sizes,
)
from decision_bench.envs.step_info import optimum, step_info
from decision_bench.envs.classification import ClassificationBandit
from decision_bench.envs.showdown import SHOWDOWN_BANDITS
from decision_bench.priors import ACTIVATIONS, DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, CoinsPrior, MLPPrior


class BanditParams(NamedTuple):
    model: Any  # the prior's params: the reward model of this environment sample
    actions: jax.Array  # [num_actions, input_dim] the fixed action set (first set if contextual)


class BanditState(NamedTuple):
    actions: jax.Array  # [num_actions, input_dim] the action set shown now (the observation)
    t: jax.Array  # [] i32 steps taken since reset


@dataclasses.dataclass(frozen=True)
class _FeatureBandit:
    """Shared engine: a reward model over action features and a rule for action sets."""

    @property
    def prior(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def input_dim(self) -> int:
        return self.prior.input_dim

    contextual = False

    def sample_actions(self, key: jax.Array) -> jax.Array:
        """A fresh action set [num_actions, input_dim]."""
        return self.prior.sample_inputs(key, self.num_actions)

    def sample_params(self, key: jax.Array) -> BanditParams:
        """One environment sample: reward model and action set."""
        k_model, k_actions = jax.random.split(key)
        return BanditParams(self.prior.init(k_model), self.sample_actions(k_actions))

    def reward_probs(self, params: BanditParams, actions: jax.Array) -> jax.Array:
        """P(reward = 1 | x) for each action. actions: [A, d] -> [A]."""
        return jax.nn.softmax(self.prior.logits(params.model, actions), axis=-1)[:, 1]

    def reset(self, key: jax.Array, params: BanditParams) -> tuple[jax.Array, BanditState]:
        actions = self.sample_actions(key) if self.contextual else params.actions
        state = BanditState(actions=actions, t=jnp.zeros((), jnp.int32))
        return actions, state

    def optimum(self, state: BanditState, params: BanditParams) -> dict[str, jax.Array]:
        """optimal_action and optimal_expected_reward of the action set shown now (the
        values the next ``step`` reports in its info)."""
        return optimum(self.reward_probs(params, state.actions))

    def step(
        self, key: jax.Array, state: BanditState, action: jax.Array, params: BanditParams
    ) -> tuple[jax.Array, BanditState, jax.Array, dict[str, jax.Array]]:
        """Plays ``action`` on the current action set; returns (obs, state, reward, info).

        reward: [] f32 in {0, 1}; info: expected_reward, optimal_expected_reward,
        regret (their difference, >= 0) and optimal_action, all for this step's set.
        """
        k_reward, k_next = jax.random.split(key)
        probs = self.reward_probs(params, state.actions)
        info = step_info(probs, action)
        reward = jax.random.bernoulli(k_reward, info["expected_reward"]).astype(jnp.float32)
        next_actions = self.sample_actions(k_next) if self.contextual else state.actions
        state = BanditState(actions=next_actions, t=state.t + 1)
        return next_actions, state, reward, info


@dataclasses.dataclass(frozen=True)
class NeuralBandit(_FeatureBandit):
    """A fixed action set of num_actions inputs from N(0, I_d); rewards from a random MLP.

    num_actions defaults to 20 * input_dim, as in paper 000, Sec. 5.
    """

    input_dim: int = 2
    num_actions: int | None = None
    temperature: float = 0.1
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES
    activation: str = DEFAULT_ACTIVATION

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        if self.num_actions is None:
            object.__setattr__(self, "num_actions", 20 * self.input_dim)
        object.__setattr__(self, "num_actions", check_int("num_actions", self.num_actions, 1))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))
        object.__setattr__(self, "hidden_sizes", check_sizes("hidden_sizes", self.hidden_sizes))
        check_choice("activation", self.activation, ACTIVATIONS)

    def reward_probs(self, params: BanditParams, actions: jax.Array) -> jax.Array:
        """P(reward = 1 | x) for each action. actions: [A, d] -> [A]."""
        # Times the reciprocal, not divided by beta: while beta was compiled in, XLA
        # rewrote the division so (x / c -> x * (1 / c), c a constant); written out, a
        # traced beta gives those numbers bit for bit (a traced division rounds otherwise).
        scale = jnp.float32(1.0) / jnp.asarray(self.temperature, jnp.float32)
        logits = self.prior.raw_logits(params.model, actions) * scale
        return jax.nn.softmax(logits, axis=-1)[:, 1]

    @property
    def prior(self) -> MLPPrior:
        # Unchecked: the fields were checked when this bandit was made, and inside the
        # compiled loop the temperature is traced (MLPPrior's checks need a number).
        return build_unchecked(
            MLPPrior,
            input_dim=self.input_dim,
            hidden_sizes=self.hidden_sizes,
            activation=self.activation,
            num_classes=2,
            temperature=self.temperature,
        )


@dataclasses.dataclass(frozen=True)
class ContextualNeuralBandit(NeuralBandit):
    """As NeuralBandit, but a fresh action set is drawn every step; regret is
    measured against the best action of that step's set."""

    contextual = True


@dataclasses.dataclass(frozen=True)
class BernoulliBandit(_FeatureBandit):
    """num_actions independent arms with p_i ~ Uniform(0, 1) (the bag-of-coins prior).

    Action features are one-hot arm indices (the identity [A, A]), so the same
    agents that read features can play it.
    """

    num_actions: int = 10

    def __post_init__(self):
        object.__setattr__(self, "num_actions", check_int("num_actions", self.num_actions, 1))

    @property
    def prior(self) -> CoinsPrior:
        return CoinsPrior(self.num_actions)

    @property
    def temperature(self) -> float:
        return 1.0

    def sample_actions(self, key: jax.Array) -> jax.Array:
        return jnp.eye(self.num_actions, dtype=jnp.float32)

    def reward_probs(self, params: BanditParams, actions: jax.Array) -> jax.Array:
        return actions @ params.model["p"]


# The temperature is data, the shapes are structure (module docstring).
_NEURAL_STATIC = ("input_dim", "num_actions", "hidden_sizes", "activation")
register_data_fields(NeuralBandit, ("temperature",), _NEURAL_STATIC)
register_data_fields(ContextualNeuralBandit, ("temperature",), _NEURAL_STATIC)
register_data_fields(BernoulliBandit, (), ("num_actions",))

BANDITS = {
    "NeuralBandit-v0": NeuralBandit,
    "ContextualNeuralBandit-v0": ContextualNeuralBandit,
    "BernoulliBandit-v0": BernoulliBandit,
    # a classification data set as a contextual bandit (envs/classification.py)
    "ClassificationBandit-v0": ClassificationBandit,
    # the Deep Bayesian Bandits Showdown's synthetic bandits, Gaussian rewards (envs/showdown.py)
    **SHOWDOWN_BANDITS,
}


def make_bandit(env_id: str, **kwargs: Any) -> _FeatureBandit:
    """The functional core for a registered id (with or without the
    ``decision_bench/`` namespace). Unknown keyword arguments are errors."""
    name = env_id.split("/", 1)[-1]
    check_choice("env_id", name, BANDITS)
    cls = BANDITS[name]
    accepted = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise ValueError(
            f"unknown keyword argument(s) {unknown} for {name}; accepted: {accepted}"
        )
    return cls(**kwargs)
