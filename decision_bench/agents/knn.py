"""The knn agent: k-nearest-neighbour class probabilities (paper 000, App. C.8).

A non-parametric baseline: the predictive distribution at x is the (weighted)
label frequency among the k training inputs nearest to x in Euclidean distance,
clipped to [probability_clip, 1 - probability_clip] (the paper's [0.01, 0.99],
"to prevent infinite values in the KL"), and returned as logits log(p), so that
softmax renormalises the clipped probabilities.

It has no epistemic index: ``sample_logits`` ignores its key, every draw is the
same classifier, and its joint predictions are products of its marginals (the
paper: these agents "have no capacity to model d_KL^tau for tau > 1").

Hyperparameters (paper 000 App. C.8 sweeps k in {1, 5, 10, 30, 50, 100} and
uniform or distance weighting; any k >= 1 is accepted). The default, k = 3 with
uniform weights, is the reference release's own default config, which the paper
does not state.

- ``weighting="uniform"``: each of the k neighbours counts once.
- ``weighting="distance"``: neighbour j counts 1 / dist_j; if some neighbours lie
  at distance exactly 0, only those count (equally), as is usual for this rule.

Fewer than k rows seen: the neighbours are all the rows seen (k = min(k, rows),
as the reference does). No rows seen: uniform probabilities. Unlike the reference
we add no fake row per class at the origin (a workaround for scikit-learn's class
bookkeeping there, which also moves predictions near 0 at small T).

Training data. The state stores the training rows in a buffer of
``spec.num_train`` rows (agents/data_buffer.py): ``fit`` hands it the whole
training set (``fit_data``; no update steps), and ``update`` stores each example
of a batch at its position ``Batch.index``. In the bandit the record says
``update_mode="online"``: each observation is stored once, at its replay position.

Static: num_neighbors, weighting, input_dim, num_classes, num_train (buffer rows).
Traced (agents/core.py): probability_clip.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice
from decision_bench.agents import data_buffer
from decision_bench.agents.data_buffer import DataBuffer
from decision_bench.agents._src.checks import at_least, check_config
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry, TestFacts
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

WEIGHTINGS = ("uniform", "distance")


def check_probability_clip(name: str, value: object) -> float:
    """A number in (0, 0.5): probabilities are clipped to [value, 1 - value]."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not 0.0 < number < 0.5:
        raise ValueError(
            f"{name} must be a number in (0, 0.5) (probabilities are clipped to "
            f"[{name}, 1 - {name}]), got {value!r}"
        )
    return number


@dataclasses.dataclass(frozen=True)
class KNNConfig:
    """knn defaults: k = 3, uniform weights (the reference's default), clip 0.01."""

    num_neighbors: int = 3  # paper 000 App. C.8 sweeps {1, 5, 10, 30, 50, 100}
    weighting: str = "uniform"  # "uniform" | "distance"
    probability_clip: float = core.traced(0.01)  # probabilities clipped to [clip, 1 - clip]

    # The problem's temperature is bound like every family's, but never read.
    unused_traced: ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self):
        check_choice("weighting", self.weighting, WEIGHTINGS)
        check_config(self, num_neighbors=at_least(1), probability_clip=check_probability_clip)


class KNNState(NamedTuple):
    data: DataBuffer  # the training rows seen so far


class KNNHyper(NamedTuple):
    """The traced hyperparameters of KNNConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    probability_clip: jax.Array
    temperature: jax.Array


def clipped_logits(probs: jax.Array, clip: jax.Array) -> jax.Array:
    """log(clip(probs, clip, 1 - clip)): [..., C] class probabilities -> logits."""
    return jnp.log(jnp.clip(probs, clip, 1.0 - clip))


def neighbour_probabilities(
    data: DataBuffer, x: jax.Array, num_neighbors: int, weighting: str, num_classes: int
) -> jax.Array:
    """Class probabilities [n, C] at x [n, d] from the k nearest rows seen (unclipped).

    Rows not seen are never neighbours; with no row seen the result is uniform.
    """
    capacity = data.x.shape[0]
    n = x.shape[0]
    uniform = jnp.full((n, num_classes), 1.0 / num_classes, jnp.float32)
    if capacity == 0:
        return uniform
    # Squared distances [n, R] by direct differences: a stored copy of x is at 0
    # exactly (the |x|^2 + |b|^2 - 2 x.b expansion leaves rounding residue).
    sq_dist = jax.vmap(lambda xi: jnp.sum(jnp.square(data.x - xi), axis=-1))(x.astype(jnp.float32))
    sq_dist = jnp.where(data.seen[None, :] > 0, sq_dist, jnp.inf)
    neg_sq, nearest = jax.lax.top_k(-sq_dist, min(num_neighbors, capacity))  # [n, k]
    valid = jnp.isfinite(neg_sq)
    if weighting == "uniform":
        weights = valid.astype(jnp.float32)
    else:
        dist = jnp.sqrt(jnp.maximum(-neg_sq, 0.0))
        at_zero = valid & (dist == 0.0)
        inverse = jnp.where(valid & (dist > 0.0), 1.0 / jnp.where(dist > 0.0, dist, 1.0), 0.0)
        weights = jnp.where(jnp.any(at_zero, axis=-1, keepdims=True), at_zero.astype(jnp.float32), inverse)
    votes = jax.nn.one_hot(data.y[nearest], num_classes, dtype=jnp.float32)  # [n, k, C]
    totals = jnp.einsum("nk,nkc->nc", weights, votes)
    mass = totals.sum(-1, keepdims=True)
    return jnp.where(mass > 0.0, totals / jnp.where(mass > 0.0, mass, 1.0), uniform)


@core.cached_functions
def _functions(
    *, num_neighbors: int, weighting: str, input_dim: int, num_classes: int, capacity: int
):
    """knn's functions for one static setting (the same objects each time)."""

    def init(hyper: Any, key: jax.Array) -> KNNState:
        del hyper, key  # nothing random: an empty store
        return KNNState(data=data_buffer.empty(capacity, input_dim))

    def update(hyper: Any, key: jax.Array, state: KNNState, batch: Batch) -> KNNState:
        """Stores the batch's examples at their positions (no other learning)."""
        del hyper, key
        return KNNState(data=data_buffer.write(state.data, batch))

    def fit_data(hyper: Any, key: jax.Array, state: KNNState, data: Dataset, num_train: jax.Array) -> KNNState:
        """Stores the first num_train rows of data (x [rows, d], y [rows])."""
        del hyper, key, state
        return KNNState(data=data_buffer.from_dataset(capacity, data, num_train))

    def member_logits(hyper: Any, state: KNNState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [1, n, C]: one classifier, an ensemble of one."""
        probs = neighbour_probabilities(state.data, x, num_neighbors, weighting, num_classes)
        return clipped_logits(probs, hyper.probability_clip)[None]

    def sample_logits(hyper: Any, key: jax.Array, state: KNNState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]; the key is unused: there is no epistemic index."""
        del key
        return member_logits(hyper, state, x)[0]

    return init, update, sample_logits, member_logits, fit_data


def make_knn(spec: ProblemSpec, config: KNNConfig) -> Agent:
    return core.make_agent(
        _functions,
        spec,
        config,
        name="knn",
        num_steps=0,
        update_mode="online",
        capacity=spec.num_train,
    )


# Paper 000, App. C.8: no index, so every draw is the same.
ENTRIES = (AgentEntry("knn", KNNConfig, make_knn, colour="#ff9896", test=TestFacts(deterministic=True)),)
