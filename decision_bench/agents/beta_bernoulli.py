"""Exact Beta-Bernoulli Thompson sampling: the reference agent for BernoulliBandit.

Each arm i has an independent Beta(alpha_i, beta_i) posterior over its success
probability p_i; with the default Beta(1, 1) prior this is the exact posterior of
the bag-of-coins prior (p_i ~ U(0, 1)) behind ``BernoulliBandit-v0``. Inputs are
the one-hot arm features of that environment, so ``input_dim`` is the number of
arms and an input x selects p(x) = x @ p.

The update is the conjugate one, alpha += x^T y and beta += x^T (1 - y) over the
batch, so it is exact only if every observation is applied exactly once. That is
why its record says ``update_mode="online"``:

- ``decision_bench.bandit.run_bandit`` and ``ThompsonPolicy`` read
  ``agent.update_mode`` and, for "online", call ``update`` once per step with a
  batch holding only the newest transition, instead of ``steps_per_obs`` replay
  minibatches (which would count stored observations many times).
- For a fixed data set, one ``update`` with the whole data set as the batch is
  the exact posterior; ``num_steps`` is 1 so ``fit`` does exactly that when its
  batch is the full data set.

Static: the number of arms (input_dim). Traced (agents/core.py):
prior_alpha and prior_beta, so one compiled program serves every prior.
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
class BetaBernoulliConfig:
    """Beta(prior_alpha, prior_beta) on every arm; Beta(1, 1) is the U(0, 1) coins prior."""

    prior_alpha: float = core.traced(1.0)
    prior_beta: float = core.traced(1.0)

    # The problem's temperature is bound like every family's, but never read.
    unused_traced: ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self):
        check_config(self, prior_alpha=check_positive, prior_beta=check_positive)


class BetaBernoulliState(NamedTuple):
    alpha: jax.Array  # [A] f32: prior_alpha + successes of each arm
    beta: jax.Array  # [A] f32: prior_beta + failures of each arm


# Keeps log(p) and log(1 - p) finite when a Beta draw rounds to 0 or 1 in f32.
_EPS = 1e-7


def _logits(p: jax.Array) -> jax.Array:
    """p [n] in [0, 1] -> logits [n, 2] = (log(1 - p), log p)."""
    p = jnp.clip(p, _EPS, 1.0 - _EPS)
    return jnp.stack([jnp.log1p(-p), jnp.log(p)], axis=-1)


class BetaBernoulliHyper(NamedTuple):
    """The traced hyperparameters of BetaBernoulliConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    prior_alpha: jax.Array
    prior_beta: jax.Array
    temperature: jax.Array


@core.cached_functions
def _functions(*, input_dim: int, num_classes: int):
    """The agent's functions for one number of arms (input_dim)."""
    num_arms = input_dim

    def init(hyper: Any, key: jax.Array) -> BetaBernoulliState:
        del key  # the prior is deterministic; the shapes are fixed by num_arms
        return BetaBernoulliState(
            alpha=jnp.full((num_arms,), hyper.prior_alpha, jnp.float32),
            beta=jnp.full((num_arms,), hyper.prior_beta, jnp.float32),
        )

    def update(
        hyper: Any, key: jax.Array, state: BetaBernoulliState, batch: Batch
    ) -> BetaBernoulliState:
        """Conjugate update with every example of the batch: x [B, A] one-hot, y [B]."""
        del hyper, key
        y = batch.y.astype(jnp.float32)
        x = batch.x.astype(jnp.float32)
        return BetaBernoulliState(alpha=state.alpha + y @ x, beta=state.beta + (1.0 - y) @ x)

    def sample_logits(
        hyper: Any, key: jax.Array, state: BetaBernoulliState, x: jax.Array
    ) -> jax.Array:
        """One joint draw p ~ Beta(alpha, beta) of all arms, read at x [n, A] -> [n, 2]."""
        del hyper
        p = jax.random.beta(key, state.alpha, state.beta)
        return _logits(x @ p)

    return init, update, sample_logits


def make_beta_bernoulli(spec: ProblemSpec, config: BetaBernoulliConfig) -> Agent:
    """The exact Thompson agent for ``spec.input_dim`` arms with one-hot inputs."""
    if spec.num_classes != 2:
        raise ValueError(
            f"beta_bernoulli needs num_classes = 2 (reward 0 or 1), got {spec.num_classes}"
        )
    # No member_logits: the posterior is continuous, so there is no finite set of
    # members to enumerate (a greedy policy averages sampled draws instead).
    return core.make_agent(
        _functions, spec, config, name="beta_bernoulli", num_steps=1, update_mode="online"
    )


# The exact conjugate posterior for one-hot (bag-of-coins) inputs only.
ENTRIES = (
    AgentEntry("beta_bernoulli", BetaBernoulliConfig, make_beta_bernoulli, colour="#f7b6d2", inputs="one_hot"),
)
