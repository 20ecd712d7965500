"""Exact Thompson sampling for real-valued rewards: Bayesian linear regression
with a Normal-Inverse-Gamma prior, the Deep Bayesian Bandits Showdown's
``LinFullPost`` baseline (Riquelme et al. 2018, Sec. 3) on this package's arm features.

Model, on the arm features phi (the bandit's disjoint encoding onehot(a) (x)
[x, 1], so one regression over phi is a separate affine model per arm):

    sigma^2 ~ InvGamma(prior_a, prior_b),  w | sigma^2 ~ N(0, sigma^2 / prior_precision I),
    r | phi, w, sigma^2 ~ N(w . phi, sigma^2).

After observations (Phi [n, D], r [n]) the posterior is again Normal-Inverse-Gamma:

    Lambda_n = prior_precision I + Phi^T Phi,  mu_n = Lambda_n^{-1} Phi^T r,
    a_n = prior_a + n / 2,  b_n = prior_b + (r . r - mu_n^T Lambda_n mu_n) / 2.

A Thompson draw is sigma^2 ~ InvGamma(a_n, b_n), then w ~ N(mu_n, sigma^2 Lambda_n^{-1}).
Defaults are the Showdown's (``example_main.py``: a0 = b0 = 6, lambda_prior = 0.25).
Two differences: the Showdown's noise variance is per arm (one regression per
arm) while this one is shared by all arms (one regression over the disjoint
features), and the Showdown pulls every arm twice before sampling
(``initial_pulls``); here the prior draws do the first exploration.

The state holds sufficient statistics (Phi^T Phi, Phi^T r, r . r, n), so the
update is exact only if every observation is applied once: ``update_mode`` is
"online" (as for ``beta_bernoulli``) and ``fit`` on a fixed data set is one
update with the whole set (``num_steps = 1``).

Scores, not class logits: ``sample_logits`` returns [n, 2] = (0, phi . w), so
``logits[:, 1] - logits[:, 0]`` is the sampled expected reward, which is what
the bandit loop's Thompson policy maximises. The outputs are not class
probabilities: the registry refuses this agent on 0/1-label problems (the
testbed, the Bernoulli and classification bandits).

float32 caveat: b_n subtracts two large sums; rounding can make the difference
slightly negative when the fit is near-perfect, so it is clamped at 0 (b_n >= prior_b).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_positive
from decision_bench.agents._src.checks import check_config
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class LinearGaussianConfig:
    """Normal-Inverse-Gamma prior: sigma^2 ~ InvGamma(prior_a, prior_b), w ~ N(0, sigma^2 / prior_precision)."""

    prior_a: float = core.traced(6.0)
    prior_b: float = core.traced(6.0)
    prior_precision: float = core.traced(0.25)

    # The problem's temperature is bound like every family's, but never read.
    unused_traced: ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self):
        check_config(self, prior_a=check_positive, prior_b=check_positive, prior_precision=check_positive)


class LinearGaussianState(NamedTuple):
    gram: jax.Array  # [D, D] f32: Phi^T Phi of the observations so far
    feature_reward: jax.Array  # [D] f32: Phi^T r
    reward_square: jax.Array  # [] f32: r . r
    count: jax.Array  # [] f32: n, observations so far


class LinearGaussianHyper(NamedTuple):
    """The traced hyperparameters of LinearGaussianConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    prior_a: jax.Array
    prior_b: jax.Array
    prior_precision: jax.Array
    temperature: jax.Array


def posterior(hyper: Any, state: LinearGaussianState):
    """(mean mu_n [D], Cholesky factor L of Lambda_n [D, D] (lower), a_n [], b_n [])."""
    dim = state.feature_reward.shape[0]
    precision = state.gram + hyper.prior_precision * jnp.eye(dim, dtype=jnp.float32)
    chol = jnp.linalg.cholesky(precision)
    mean = jax.scipy.linalg.cho_solve((chol, True), state.feature_reward)
    residual = jnp.maximum(state.reward_square - state.feature_reward @ mean, 0.0)
    return mean, chol, hyper.prior_a + state.count / 2.0, hyper.prior_b + residual / 2.0


@core.cached_functions
def _functions(*, input_dim: int, num_classes: int):
    """The agent's functions for one feature size (the same objects each time)."""

    def init(hyper: Any, key: jax.Array) -> LinearGaussianState:
        del hyper, key  # the prior is deterministic; the shapes are fixed by input_dim
        return LinearGaussianState(
            gram=jnp.zeros((input_dim, input_dim), jnp.float32),
            feature_reward=jnp.zeros((input_dim,), jnp.float32),
            reward_square=jnp.zeros((), jnp.float32),
            count=jnp.zeros((), jnp.float32),
        )

    def update(
        hyper: Any, key: jax.Array, state: LinearGaussianState, batch: Batch
    ) -> LinearGaussianState:
        """Adds every example of the batch: x [B, D], y [B] real rewards."""
        del hyper, key
        x = batch.x.astype(jnp.float32)
        y = batch.y.astype(jnp.float32)
        return LinearGaussianState(
            gram=state.gram + x.T @ x,
            feature_reward=state.feature_reward + x.T @ y,
            reward_square=state.reward_square + y @ y,
            count=state.count + y.shape[0],
        )

    def sample_logits(
        hyper: Any, key: jax.Array, state: LinearGaussianState, x: jax.Array
    ) -> jax.Array:
        """One joint draw (sigma^2, w), read at x [n, D] -> [n, 2] = (0, x . w)."""
        k_variance, k_weights = jax.random.split(key)
        mean, chol, a_n, b_n = posterior(hyper, state)
        variance = b_n / jax.random.gamma(k_variance, a_n)
        z = jax.random.normal(k_weights, mean.shape, jnp.float32)
        # L L^T = Lambda_n, so L^{-T} z has covariance Lambda_n^{-1}.
        weights = mean + jnp.sqrt(variance) * jax.scipy.linalg.solve_triangular(chol.T, z, lower=False)
        score = x.astype(jnp.float32) @ weights
        return jnp.stack([jnp.zeros_like(score), score], axis=-1)

    return init, update, sample_logits


def make_linear_gaussian(spec: ProblemSpec, config: LinearGaussianConfig) -> Agent:
    """The exact Gaussian-reward Thompson agent on ``spec.input_dim`` features."""
    # No member_logits: the posterior is continuous, so there is no finite set of
    # members to enumerate (a greedy policy averages sampled draws instead).
    return core.make_agent(
        _functions, spec, config, name="linear_gaussian", num_steps=1, update_mode="online"
    )


# Exact Normal-Inverse-Gamma linear regression, for real-valued (Gaussian) rewards only.
ENTRIES = (
    AgentEntry(
        "linear_gaussian", LinearGaussianConfig, make_linear_gaussian, colour="#dbdb8d", rewards="real",
    ),
)
