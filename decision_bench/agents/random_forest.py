"""The random_forest agent: a random forest's class probabilities (paper 000, App. C.8).

A non-parametric baseline like knn: the predictive distribution at x is the
forest's average over trees of the label frequencies in x's leaf, clipped to
[probability_clip, 1 - probability_clip] (the paper's [0.01, 0.99]) and returned
as logits log(p). It has no epistemic index: ``sample_logits`` ignores its key,
so its joint predictions are products of its marginals.

Hyperparameters: paper 000 App. C.8 sweeps the number of trees over {10, 100,
1000} and the split criterion over Gini impurity and information gain
("entropy"); the defaults, 100 trees and Gini, are the reference release's
default config. Every other setting is scikit-learn's RandomForestClassifier
default, as in the reference: bootstrap samples, sqrt(d) candidate features per
split, trees grown until their leaves are pure.

Why scikit-learn, called through ``jax.pure_callback``, rather than a forest in
JAX: the reference agent *is* scikit-learn's forest, and growing unbounded-depth
trees with data-dependent splits is what compiled code does in C far faster
than a static-shape JAX program could (every level of every tree would sort every
row for every feature). Only the growing runs on the host: the grown trees are
exported into fixed-shape arrays (a tree on R rows has at most 2R - 1 nodes), so
the state is plain arrays and ``sample_logits`` / ``member_logits`` are ordinary
jittable, vmappable JAX (a walk down every tree at once). ``update`` jits too and
vmaps (the callback runs once per batch element, ``vmap_method="sequential"``).
The forest is a deterministic function of the update's key: the callback gets
32 random bits from it as scikit-learn's ``random_state``.

Training data: as knn (agents/data_buffer.py), the rows are stored in a buffer
of ``spec.num_train`` rows and the forest is grown on every row stored. ``fit``
hands it the whole training set (``fit_data``: one forest, no update steps);
``update`` stores a batch's examples at their positions ``Batch.index`` and
regrows the forest, which in the bandit (``update_mode="online"``) happens after
each observation (one forest per step: slow for long runs). Memory: 5 arrays of
[num_trees, 2 num_train - 1] plus the leaf distributions, about 50 MB for 1000
trees at T = 1000.

Needs scikit-learn (``pip install 'decision-bench[data]'``).

Static: num_trees, criterion, input_dim, num_classes, num_train.
Traced (agents/core.py): probability_clip.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.extras import require_extra
from decision_bench._src.validation import check_choice
from decision_bench.agents import data_buffer
from decision_bench.agents.data_buffer import DataBuffer
from decision_bench.agents._src.checks import at_least, check_config
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.knn import check_probability_clip, clipped_logits
from decision_bench.agents.entry import AgentEntry, TestFacts
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

CRITERIA = ("gini", "entropy")
LEAF = -1  # child index of a leaf (scikit-learn's TREE_LEAF)


@dataclasses.dataclass(frozen=True)
class RandomForestConfig:
    """random_forest defaults: 100 trees, Gini impurity (the reference's default), clip 0.01."""

    num_trees: int = 100  # paper 000 App. C.8 sweeps {10, 100, 1000}
    criterion: str = "gini"  # "gini" | "entropy" (information gain)
    probability_clip: float = core.traced(0.01)  # probabilities clipped to [clip, 1 - clip]

    # The problem's temperature is bound like every family's, but never read.
    unused_traced: ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self):
        check_choice("criterion", self.criterion, CRITERIA)
        check_config(self, num_trees=at_least(1), probability_clip=check_probability_clip)


class Forest(NamedTuple):
    """Trees as arrays [num_trees, num_nodes]; node 0 is each tree's root.

    An internal node sends x left when x[feature] <= threshold; a leaf has
    left = right = LEAF and carries the class distribution of its training rows.
    """

    feature: jax.Array  # [K, N] i32 (0 at leaves and unused nodes)
    threshold: jax.Array  # [K, N] f32
    left: jax.Array  # [K, N] i32
    right: jax.Array  # [K, N] i32
    value: jax.Array  # [K, N, C] f32: class probabilities at each node


class RandomForestState(NamedTuple):
    data: DataBuffer  # the training rows seen so far
    forest: Forest  # grown on them by the last update


class RandomForestHyper(NamedTuple):
    """The traced hyperparameters of RandomForestConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    probability_clip: jax.Array
    temperature: jax.Array


def max_nodes(capacity: int) -> int:
    """Nodes a binary tree on at most ``capacity`` rows can have (>= 1: a lone leaf)."""
    return max(1, 2 * capacity - 1)


def _leaf_forest(num_trees: int, num_nodes: int, num_classes: int) -> dict[str, np.ndarray]:
    """Host arrays of trees that are single leaves with uniform class probabilities."""
    value = np.zeros((num_trees, num_nodes, num_classes), np.float32)
    value[:, 0, :] = 1.0 / num_classes
    return dict(
        feature=np.zeros((num_trees, num_nodes), np.int32),
        threshold=np.zeros((num_trees, num_nodes), np.float32),
        left=np.full((num_trees, num_nodes), LEAF, np.int32),
        right=np.full((num_trees, num_nodes), LEAF, np.int32),
        value=value,
    )


def _floor_to_float32(threshold: np.ndarray) -> np.ndarray:
    """The largest float32 <= each float64 threshold. scikit-learn splits float32
    inputs at float64 midpoints; rounding down keeps every float32 input on the
    same side (x <= t64 iff x <= floor32(t64)), where rounding to nearest may not."""
    rounded = threshold.astype(np.float32)
    above = rounded.astype(np.float64) > threshold
    return np.where(above, np.nextafter(rounded, np.float32(-np.inf)), rounded).astype(np.float32)


def grow_forest_host(
    x: np.ndarray,
    y: np.ndarray,
    seen: np.ndarray,
    seed: np.ndarray,
    *,
    num_trees: int,
    criterion: str,
    num_classes: int,
) -> dict[str, np.ndarray]:
    """Grows scikit-learn's RandomForestClassifier on the rows seen; returns Forest's arrays.

    x [R, d], y [R], seen [R], seed [] uint32 (random_state). Host-side (numpy).
    """
    from sklearn.ensemble import RandomForestClassifier

    num_nodes = max_nodes(x.shape[0])
    arrays = _leaf_forest(num_trees, num_nodes, num_classes)
    rows = np.asarray(seen) > 0
    if not rows.any():
        return arrays
    forest = RandomForestClassifier(
        n_estimators=num_trees, criterion=criterion, random_state=int(seed), n_jobs=1
    )
    forest.fit(np.asarray(x, np.float32)[rows], np.asarray(y)[rows])
    classes = forest.classes_.astype(np.int64)  # the labels present, sorted
    for k, estimator in enumerate(forest.estimators_):
        tree = estimator.tree_
        n = tree.node_count
        internal = tree.children_left != LEAF
        arrays["feature"][k, :n] = np.where(internal, tree.feature, 0)
        arrays["threshold"][k, :n] = np.where(internal, _floor_to_float32(tree.threshold), 0.0)
        arrays["left"][k, :n] = tree.children_left
        arrays["right"][k, :n] = tree.children_right
        counts = tree.value[:, 0, :].astype(np.float64)  # [n, classes present]
        probs = np.zeros((n, num_classes))
        probs[:, classes] = counts / counts.sum(-1, keepdims=True)
        arrays["value"][k, :n] = probs
    return arrays


def forest_probabilities(forest: Forest, x: jax.Array) -> jax.Array:
    """The forest's class probabilities [n, C] at x [n, d]: the mean over trees of
    the leaf distributions (scikit-learn's predict_proba), walking all trees at once."""
    num_trees = forest.feature.shape[0]
    n = x.shape[0]
    rows = jnp.arange(n)[None, :]

    def take(table: jax.Array, node: jax.Array) -> jax.Array:  # [K, N], [K, n] -> [K, n]
        return jnp.take_along_axis(table, node, axis=1)

    def not_done(node: jax.Array) -> jax.Array:
        return jnp.any(take(forest.left, node) != LEAF)

    def descend(node: jax.Array) -> jax.Array:
        left, right = take(forest.left, node), take(forest.right, node)
        goes_left = x[rows, take(forest.feature, node)] <= take(forest.threshold, node)
        return jnp.where(left == LEAF, node, jnp.where(goes_left, left, right))

    leaves = jax.lax.while_loop(not_done, descend, jnp.zeros((num_trees, n), jnp.int32))
    values = jnp.take_along_axis(forest.value, leaves[:, :, None], axis=1)  # [K, n, C]
    return values.mean(axis=0)


@core.cached_functions
def _functions(
    *, num_trees: int, criterion: str, input_dim: int, num_classes: int, capacity: int
):
    """random_forest's functions for one static setting (the same objects each time)."""
    num_nodes = max_nodes(capacity)
    grow = functools.partial(
        grow_forest_host, num_trees=num_trees, criterion=criterion, num_classes=num_classes
    )
    shapes = Forest(
        feature=jax.ShapeDtypeStruct((num_trees, num_nodes), jnp.int32),
        threshold=jax.ShapeDtypeStruct((num_trees, num_nodes), jnp.float32),
        left=jax.ShapeDtypeStruct((num_trees, num_nodes), jnp.int32),
        right=jax.ShapeDtypeStruct((num_trees, num_nodes), jnp.int32),
        value=jax.ShapeDtypeStruct((num_trees, num_nodes, num_classes), jnp.float32),
    )

    def grow_callback(x, y, seen, seed):
        return Forest(**grow(x, y, seen, seed))

    def init(hyper: Any, key: jax.Array) -> RandomForestState:
        del hyper, key  # an empty store and one-leaf trees: uniform predictions
        leaf = _leaf_forest(num_trees, num_nodes, num_classes)
        return RandomForestState(
            data=data_buffer.empty(capacity, input_dim),
            forest=Forest(**{name: jnp.asarray(a) for name, a in leaf.items()}),
        )

    def grown(key: jax.Array, data: DataBuffer) -> RandomForestState:
        """The forest grown on every row of ``data``; its seed is 32 bits of the key."""
        seed = jax.random.bits(key, (), jnp.uint32)
        forest = jax.pure_callback(
            grow_callback, shapes, data.x, data.y, data.seen, seed, vmap_method="sequential"
        )
        return RandomForestState(data=data, forest=forest)

    def update(
        hyper: Any, key: jax.Array, state: RandomForestState, batch: Batch
    ) -> RandomForestState:
        """Stores the batch's examples, then regrows the forest on every row seen."""
        del hyper
        return grown(key, data_buffer.write(state.data, batch))

    def fit_data(
        hyper: Any, key: jax.Array, state: RandomForestState, data: Dataset, num_train: jax.Array
    ) -> RandomForestState:
        """Grows the forest on the first num_train rows of data (x [rows, d], y [rows])."""
        del hyper, state
        return grown(key, data_buffer.from_dataset(capacity, data, num_train))

    def member_logits(hyper: Any, state: RandomForestState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [1, n, C]: one classifier, an ensemble of one."""
        probs = forest_probabilities(state.forest, x.astype(jnp.float32))
        return clipped_logits(probs, hyper.probability_clip)[None]

    def sample_logits(
        hyper: Any, key: jax.Array, state: RandomForestState, x: jax.Array
    ) -> jax.Array:
        """x [n, d] -> [n, C]; the key is unused: there is no epistemic index."""
        del key
        return member_logits(hyper, state, x)[0]

    return init, update, sample_logits, member_logits, fit_data


def make_random_forest(spec: ProblemSpec, config: RandomForestConfig) -> Agent:
    require_extra("data", "agent 'random_forest'")
    return core.make_agent(
        _functions,
        spec,
        config,
        name="random_forest",
        num_steps=0,
        update_mode="online",
        capacity=spec.num_train,
    )


# Grown by scikit-learn (the `data` extra) through jax.pure_callback; no index.
ENTRIES = (
    AgentEntry(
        "random_forest", RandomForestConfig, make_random_forest, colour="#c5b0d5",
        test=TestFacts(deterministic=True),
    ),
)
