"""The synthetic bandits of the Deep Bayesian Bandits Showdown (Riquelme, Tucker and
Snoek, ICLR 2018, arXiv:1802.09127): the wheel, the linear and the sparse linear bandit.

Unlike the other bandits of this package, rewards are real-valued Gaussians,
r ~ N(mu_a(x), sigma_a^2), so they are played only by agents that model real
rewards (``linear_gaussian``), or by any agent under the ``uniform`` policy
(``decision_bench.bandit.loop.make_loop`` refuses the rest in one line). Each
class says so with ``real_valued_rewards = True``.

Every step shows a fresh context x in R^d; the observation is the action set of
the package's other bandits, built from x by the disjoint encoding of
``envs/classification.py``: arm a's features are onehot(a) (outer) [x, 1],
flattened to (d + 1) * A values, so a linear model on them is a separate affine
function of x per arm (the Showdown's per-arm linear baselines) and
``input_dim`` = (d + 1) * A.

Regret is measured on expected rewards, in closed form from the means:
regret_t = max_a mu_a(x_t) - mu_{a_t}(x_t) (the Showdown's own scripts compare
realised rewards; the expectation removes the reward noise from the curves).

Facts, checked against the Showdown's released code (tensorflow/models
research/deep_contextual_bandits, later google-research/bandits:
``bandits/data/synthetic_data_sampler.py`` and ``example_main.py``):

- Wheel (paper Sec. 3 / App.; ``sample_wheel_bandit_data``): d = 2, x uniform on
  the unit disc, 5 actions. The centre action (index 4 in the code, whose
  ``mean_v`` is [1.0, 1.0, 1.0, 1.0, 1.2]) has mean mu_1 = 1.2 everywhere; the
  four outer actions have mean mu_2 = 1.0, except that when ||x|| >= delta the
  outer action of x's quadrant has mean mu_3 = 50 (code: x0 > 0, x1 > 0 -> 0;
  x0 > 0, x1 <= 0 -> 1; x0 <= 0, x1 > 0 -> 2; x0 <= 0, x1 <= 0 -> 3). The
  paper sets sigma = 0.01 for every action, as does the code's benchmark
  generator of wheel instances (std_v = std_large = 0.01); ``example_main.py``'s
  single wheel run uses std 0.05 for the small rewards. P(||x|| >= delta) =
  1 - delta^2, so the optimal expected reward per step is
  1.2 delta^2 + 50 (1 - delta^2). The paper's deltas: 0.5, 0.7, 0.9, 0.95, 0.99;
  ``example_main.py`` runs 0.95, our default.
- Linear (``sample_linear_data``; ``example_main.py``: d = 10, 8 actions): x ~
  N(0, I_d); beta_a ~ U(-1, 1)^d normalised to unit length; mu_a(x) = x . beta_a;
  arm a (0-based) has noise standard deviation 0.01 (a + 1).
- Sparse linear (``sample_sparse_linear_data``; ``example_main.py``: d = 10, 7
  actions, s = int(d / 3) = 3): as the linear bandit, but each beta_a is
  non-zero only on s coordinates drawn without replacement, per arm, then
  normalised.

The context distribution of the wheel is sampled exactly (radius sqrt(U),
uniform angle) rather than by the code's rejection sampling: the same uniform law.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.pytrees import register_as_static, register_data_fields
from decision_bench._src.validation import check_finite, check_int, check_nonnegative
from decision_bench.envs.step_info import optimum, step_info
from decision_bench.envs.classification import arm_features


class ShowdownState(NamedTuple):
    actions: jax.Array  # [A, (d + 1) A] arm features of the current context (the observation)
    context: jax.Array  # [d] the current context x
    t: jax.Array  # [] i32 steps taken since reset


class WheelParams(NamedTuple):
    """The wheel's settings as array leaves, so a sweep over delta is one vmapped program."""

    delta: jax.Array  # [] f32 exploration parameter: the inner radius
    centre_mean: jax.Array  # [] f32 mu_1
    outer_mean: jax.Array  # [] f32 mu_2
    large_mean: jax.Array  # [] f32 mu_3
    noise_std: jax.Array  # [] f32 sigma (every action)


class LinearParams(NamedTuple):
    betas: jax.Array  # [d, A] unit-norm columns: mu_a(x) = x @ betas[:, a]
    noise_stds: jax.Array  # [A] per-arm noise standard deviation


def _check_unit(name: str, value: float) -> float:
    value = check_nonnegative(name, value)
    if value > 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class _GaussianContextBandit:
    """Shared engine: a context sampler and expected rewards mu(params, x) [A]."""

    real_valued_rewards: ClassVar[bool] = True
    contextual: ClassVar[bool] = True

    @property
    def input_dim(self) -> int:
        """Arm-feature size the agents see: (context_dim + 1) * num_actions."""
        return (self.context_dim + 1) * self.num_actions

    @property
    def temperature(self) -> float:
        """No softmax temperature: rewards are Gaussian. 1.0 keeps the spec valid."""
        return 1.0

    def sample_context(self, key: jax.Array, params) -> jax.Array:  # pragma: no cover - overridden
        raise NotImplementedError

    def expected_rewards(self, params, context: jax.Array) -> jax.Array:  # pragma: no cover
        raise NotImplementedError

    def noise_stds(self, params) -> jax.Array:  # pragma: no cover - overridden
        raise NotImplementedError

    def _show(self, key: jax.Array, params, t: jax.Array) -> ShowdownState:
        x = self.sample_context(key, params)
        return ShowdownState(actions=arm_features(x, self.num_actions), context=x, t=t)

    def reset(self, key: jax.Array, params) -> tuple[jax.Array, ShowdownState]:
        """The first context: (obs [A, (d + 1) A], state)."""
        state = self._show(key, params, jnp.zeros((), jnp.int32))
        return state.actions, state

    def optimum(self, state: ShowdownState, params) -> dict[str, jax.Array]:
        """optimal_action and optimal_expected_reward max_b mu_b(x) at the context shown
        now (the values the next ``step`` reports in its info)."""
        return optimum(self.expected_rewards(params, state.context))

    def step(
        self, key: jax.Array, state: ShowdownState, action: jax.Array, params
    ) -> tuple[jax.Array, ShowdownState, jax.Array, dict[str, jax.Array]]:
        """Plays ``action`` at the current context, then shows a fresh one.

        Returns (obs, state, reward [] f32 ~ N(mu_a(x), sigma_a^2), info) with
        expected_reward mu_a(x), optimal_expected_reward max_b mu_b(x), regret
        (their difference, >= 0) and optimal_action.
        """
        k_noise, k_next = jax.random.split(key)
        means = self.expected_rewards(params, state.context)
        info = step_info(means, action)
        noise = jax.random.normal(k_noise, (), jnp.float32)
        reward = info["expected_reward"] + self.noise_stds(params)[action] * noise
        next_state = self._show(k_next, params, state.t + 1)
        return next_state.actions, next_state, reward, info


@dataclasses.dataclass(frozen=True)
class WheelBandit(_GaussianContextBandit):
    """``decision_bench/WheelBandit-v0``: the Showdown's wheel (module docstring).

    delta in [0, 1]: the exploration parameter (default 0.95); centre_mean,
    outer_mean, large_mean: mu_1 = 1.2, mu_2 = 1.0, mu_3 = 50; noise_std: sigma =
    0.01 (the paper's). Every environment sample is the same wheel: seeds
    differ in their contexts and noise.
    """

    delta: float = 0.95
    centre_mean: float = 1.2
    outer_mean: float = 1.0
    large_mean: float = 50.0
    noise_std: float = 0.01

    context_dim: ClassVar[int] = 2
    num_actions: ClassVar[int] = 5
    CENTRE_ACTION: ClassVar[int] = 4  # the code's index of the mu_1 action

    def __post_init__(self):
        object.__setattr__(self, "delta", _check_unit("delta", self.delta))
        for name in ("centre_mean", "outer_mean", "large_mean"):
            object.__setattr__(self, name, check_finite(name, getattr(self, name)))
        object.__setattr__(self, "noise_std", check_nonnegative("noise_std", self.noise_std))

    def sample_params(self, key: jax.Array) -> WheelParams:
        """The wheel's settings as [] f32 leaves; the key is unused (nothing is random)."""
        del key
        return WheelParams(
            *(jnp.asarray(getattr(self, f), jnp.float32) for f in WheelParams._fields)
        )

    def sample_context(self, key: jax.Array, params: WheelParams) -> jax.Array:
        """x uniform on the unit disc: radius sqrt(U) (area grows as r^2), uniform angle. [2]"""
        k_radius, k_angle = jax.random.split(key)
        radius = jnp.sqrt(jax.random.uniform(k_radius, (), jnp.float32))
        angle = jax.random.uniform(k_angle, (), jnp.float32, 0.0, 2.0 * jnp.pi)
        return radius * jnp.stack([jnp.cos(angle), jnp.sin(angle)])

    def expected_rewards(self, params: WheelParams, context: jax.Array) -> jax.Array:
        """mu(x) [5]: outer actions 0-3 by quadrant, the centre action 4."""
        right, up = context[0] > 0, context[1] > 0
        quadrant = jnp.where(right, jnp.where(up, 0, 1), jnp.where(up, 2, 3))
        outside = jnp.linalg.norm(context) >= params.delta
        outer = jnp.where(
            outside & (jnp.arange(4) == quadrant), params.large_mean, params.outer_mean
        )
        return jnp.concatenate([outer, params.centre_mean[None]])

    def noise_stds(self, params: WheelParams) -> jax.Array:
        return jnp.full((self.num_actions,), params.noise_std, jnp.float32)

    def optimal_expected_reward(self) -> float:
        """E_x[max_a mu_a(x)] = mu_1 delta^2 + max(mu_1, mu_3)(1 - delta^2) (when mu_1 >= mu_2)."""
        inside = self.delta**2
        best_inside = max(self.centre_mean, self.outer_mean)
        best_outside = max(self.centre_mean, self.large_mean)
        return best_inside * inside + best_outside * (1.0 - inside)


@dataclasses.dataclass(frozen=True)
class LinearBandit(_GaussianContextBandit):
    """``decision_bench/LinearBandit-v0``: mu_a(x) = x . beta_a, x ~ N(0, I_d) (module docstring).

    context_dim d (default 10), num_actions (default 8); noise_scale: arm a has
    noise standard deviation noise_scale * (a + 1) (default 0.01). Each seed
    draws its own betas.
    """

    context_dim: int = 10
    num_actions: int = 8
    noise_scale: float = 0.01

    def __post_init__(self):
        object.__setattr__(self, "context_dim", check_int("context_dim", self.context_dim, 1))
        object.__setattr__(self, "num_actions", check_int("num_actions", self.num_actions, 1))
        object.__setattr__(self, "noise_scale", check_nonnegative("noise_scale", self.noise_scale))

    def support_mask(self, key: jax.Array) -> jax.Array:
        """[d, A] of ones: every coordinate is active (the sparse bandit narrows it)."""
        del key
        return jnp.ones((self.context_dim, self.num_actions), jnp.float32)

    def sample_params(self, key: jax.Array) -> LinearParams:
        """betas [d, A]: U(-1, 1), masked, each column scaled to unit length."""
        k_betas, k_mask = jax.random.split(key)
        raw = jax.random.uniform(k_betas, (self.context_dim, self.num_actions), jnp.float32, -1.0, 1.0)
        raw = raw * self.support_mask(k_mask)
        betas = raw / jnp.linalg.norm(raw, axis=0, keepdims=True)
        stds = self.noise_scale * jnp.arange(1, self.num_actions + 1, dtype=jnp.float32)
        return LinearParams(betas=betas, noise_stds=stds)

    def sample_context(self, key: jax.Array, params: LinearParams) -> jax.Array:
        return jax.random.normal(key, (self.context_dim,), jnp.float32)

    def expected_rewards(self, params: LinearParams, context: jax.Array) -> jax.Array:
        return context @ params.betas

    def noise_stds(self, params: LinearParams) -> jax.Array:
        return params.noise_stds


@dataclasses.dataclass(frozen=True)
class SparseLinearBandit(LinearBandit):
    """``decision_bench/SparseLinearBandit-v0``: the linear bandit with s-sparse betas.

    Defaults: context_dim 10, num_actions 7, sparse_dim s = 3 (the code's
    int(d / 3)); each arm's support is s coordinates drawn without replacement.
    """

    num_actions: int = 7
    sparse_dim: int = 3

    def __post_init__(self):
        super().__post_init__()
        s = check_int("sparse_dim", self.sparse_dim, 1)
        if s > self.context_dim:
            raise ValueError(
                f"sparse_dim must be an integer in [1, context_dim = {self.context_dim}], got {s!r}"
            )
        object.__setattr__(self, "sparse_dim", s)

    def support_mask(self, key: jax.Array) -> jax.Array:
        """[d, A]: ones on sparse_dim coordinates per arm, drawn without replacement.

        The s smallest of d iid uniforms sit at a uniformly random s-subset."""
        scores = jax.random.uniform(key, (self.context_dim, self.num_actions))
        ranks = jnp.argsort(jnp.argsort(scores, axis=0), axis=0)
        return (ranks < self.sparse_dim).astype(jnp.float32)


# Each core is a pytree (as envs/bandits.py's): its real numbers are leaves, so another
# delta or noise scale shares the compiled loop; its sizes are structure.
register_data_fields(WheelBandit, tuple(WheelParams._fields), ())
register_data_fields(LinearBandit, ("noise_scale",), ("context_dim", "num_actions"))
register_data_fields(SparseLinearBandit, ("noise_scale",), ("context_dim", "num_actions", "sparse_dim"))

SHOWDOWN_BANDITS = {
    "WheelBandit-v0": WheelBandit,
    "LinearBandit-v0": LinearBandit,
    "SparseLinearBandit-v0": SparseLinearBandit,
}


def real_valued_rewards(env) -> bool:
    """Whether a functional core's rewards are real-valued (not 0/1)."""
    return bool(getattr(env, "real_valued_rewards", False))


class TableState(NamedTuple):
    actions: jax.Array  # [A, (d + 1) A] arm features of the shown row (the observation)
    row: jax.Array  # [] i32 the shown row
    t: jax.Array  # [] i32 steps taken since reset


class TableParams(NamedTuple):
    contexts: jax.Array  # [n, d] f32
    rewards: jax.Array  # [n, A] f32 the reward each action earns at each row
    expected_rewards: jax.Array  # [n, A] f32 their expectations (regret is measured on these)


@dataclasses.dataclass(frozen=True, eq=False)
class TableBandit(_GaussianContextBandit):
    """A bandit replaying a table of contexts and per-action rewards: the Showdown's
    real data sets (``decision_bench.data.load_showdown``) or any table of the same form.

    data: an object with ``name``, ``contexts`` [n, d], ``rewards`` [n, A] and
    ``expected_rewards`` [n, A] (a ``ShowdownData``). Every step shows a row drawn
    uniformly with the step key (with replacement, as ``ClassificationBandit``;
    the Showdown plays its shuffled rows once each); the chosen action earns that
    row's reward, and regret is measured on the expected rewards. Compared by
    identity (``eq=False``): the arrays are not hashable, and the compiled loop
    takes the core as structure (a pytree without leaves). Not a Gymnasium id (it needs the data):
    pass it to ``run_bandit`` or ``ThompsonPolicy`` as a functional core.
    """

    data: object = None

    def __post_init__(self):
        try:
            contexts = np.asarray(self.data.contexts, np.float32)
            rewards = np.asarray(self.data.rewards, np.float32)
            expected = np.asarray(self.data.expected_rewards, np.float32)
        except AttributeError:
            raise ValueError(
                "data must have contexts [n, d], rewards [n, A] and expected_rewards [n, A] "
                f"(e.g. decision_bench.data.load_showdown(...)), got {type(self.data).__name__}"
            ) from None
        if contexts.ndim != 2 or rewards.ndim != 2 or rewards.shape != expected.shape or len(contexts) != len(rewards):
            raise ValueError(
                f"data must have contexts [n, d] and rewards, expected_rewards [n, A] of one n; got shapes "
                f"{contexts.shape}, {rewards.shape}, {expected.shape}"
            )
        if not (np.isfinite(contexts).all() and np.isfinite(rewards).all() and np.isfinite(expected).all()):
            raise ValueError("data must hold finite numbers only (no NaN or inf)")
        object.__setattr__(self, "_tables", (contexts, rewards, expected))

    @property
    def name(self) -> str:
        return str(getattr(self.data, "name", "table"))

    @property
    def context_dim(self) -> int:
        return int(self._tables[0].shape[1])

    @property
    def num_actions(self) -> int:
        return int(self._tables[1].shape[1])

    def sample_params(self, key: jax.Array) -> TableParams:
        """The tables as arrays. The key is unused: every seed plays the same data."""
        del key
        return TableParams(*(jnp.asarray(t) for t in self._tables))

    def _show(self, key: jax.Array, params: TableParams, t: jax.Array) -> TableState:
        row = jax.random.randint(key, (), 0, params.contexts.shape[0])
        return TableState(actions=arm_features(params.contexts[row], self.num_actions), row=row, t=t)

    def reset(self, key: jax.Array, params: TableParams) -> tuple[jax.Array, TableState]:
        """The first row: (obs [A, (d + 1) A], state)."""
        state = self._show(key, params, jnp.zeros((), jnp.int32))
        return state.actions, state

    def optimum(self, state: TableState, params: TableParams) -> dict[str, jax.Array]:
        """optimal_action and optimal_expected_reward of the row shown now."""
        return optimum(params.expected_rewards[state.row])

    def step(
        self, key: jax.Array, state: TableState, action: jax.Array, params: TableParams
    ) -> tuple[jax.Array, TableState, jax.Array, dict[str, jax.Array]]:
        """Plays ``action`` on the shown row (its table reward; regret from the expected
        rewards), then shows a fresh row. The key only draws that row."""
        info = step_info(params.expected_rewards[state.row], action)
        reward = params.rewards[state.row, action]
        next_state = self._show(key, params, state.t + 1)
        return next_state.actions, next_state, reward, info


# The tables are host arrays set at construction: the core stays whole, as structure.
register_as_static(TableBandit)
