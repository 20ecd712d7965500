"""Accuracy and expected calibration error of an agent's mean (marginal) prediction.

As in the reference: the agent's class probabilities averaged over 100 agent
samples (or over all members of a finite-index agent), on fresh iid test pairs
(x, y ~ environment); accuracy of the argmax; ECE with 10 equal-width
confidence bins: sum_b (n_b / n) |accuracy_b - confidence_b|.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from decision_bench._src.keys import CLASSIFICATION_TAG, MODEL_TAG
from decision_bench._src.validation import check_int
from decision_bench.envs.testbed import TestbedProblem, sample_labels
from decision_bench.evaluation.kl import (
    Sampler,
    check_sampler_and_key,
    split_sampler,
    model_set,
    resolve_method,
)

NUM_BINS = 10
NUM_SAMPLES = 100


def accuracy(probs: jax.Array, y: jax.Array) -> jax.Array:
    """Share of argmax predictions equal to the label. probs: [n, C], y: [n] -> []."""
    return jnp.mean(jnp.argmax(probs, axis=-1) == y)


def expected_calibration_error(probs: jax.Array, y: jax.Array, num_bins: int = NUM_BINS) -> jax.Array:
    """ECE of the top-class confidence with num_bins equal-width bins on [0, 1].

    probs: [n, C] class probabilities; y: [n] labels. Returns [].
    """
    confidence = jnp.max(probs, axis=-1)
    correct = (jnp.argmax(probs, axis=-1) == y).astype(jnp.float32)
    # A confidence of exactly 1 belongs to the last bin, not an extra one.
    bins = jnp.minimum((confidence * num_bins).astype(jnp.int32), num_bins - 1)
    gap = jax.ops.segment_sum(correct - confidence, bins, num_bins)  # [num_bins]
    return jnp.sum(jnp.abs(gap)) / probs.shape[0]


def mean_probabilities(models, key: jax.Array, x: jax.Array) -> jax.Array:
    """Class probabilities averaged over a model set. models(key, x) -> [M, n, C]; returns [n, C]."""
    return jnp.mean(jax.nn.softmax(models(key, x), axis=-1), axis=0)


def classification_metrics(
    source: Any,
    state: Any,
    prior: Any,
    env_params: Any,
    key: jax.Array,
    num_test: int,
    method: str,
    num_samples: int = NUM_SAMPLES,
    num_bins: int = NUM_BINS,
) -> tuple[jax.Array, jax.Array]:
    """(accuracy [], ece []) of the mean prediction on num_test fresh iid test pairs.

    method: resolved ("exact" averages all members; otherwise num_samples draws).
    Pure and vmappable over (state, env_params, key).
    """
    k_data = jax.random.fold_in(key, CLASSIFICATION_TAG)
    k_x, k_y = jax.random.split(k_data)
    x = prior.sample_inputs(k_x, num_test)
    y = sample_labels(k_y, prior, env_params, x)
    draws = "exact" if method == "exact" else "monte_carlo"
    models, _ = model_set(source, state, draws, num_samples, prior.input_dim)
    probs = mean_probabilities(models, jax.random.fold_in(k_data, MODEL_TAG), x)
    return accuracy(probs, y), expected_calibration_error(probs, y, num_bins)


@functools.partial(jax.jit, static_argnames=("num_test", "method", "num_samples", "num_bins"))
def _classification_compiled(
    source: Any, state: Any, prior: Any, env_params: Any, key: jax.Array,
    *, num_test: int, method: str, num_samples: int, num_bins: int,
) -> tuple[jax.Array, jax.Array]:
    """``classification_metrics`` compiled once per source pytree structure and static settings."""
    return classification_metrics(source, state, prior, env_params, key, num_test, method, num_samples, num_bins)


@dataclasses.dataclass(frozen=True)
class ClassificationResult:
    """accuracy and ece of the agent's mean prediction; method used for the mean."""

    accuracy: float
    ece: float
    method: str


def evaluate_classification(
    sampler: Sampler,
    problem: TestbedProblem,
    key: jax.Array,
    num_test: int = 1000,
    num_samples: int = NUM_SAMPLES,
    num_bins: int = NUM_BINS,
    method: str = "auto",
) -> ClassificationResult:
    """Accuracy and ECE of a sampler's mean prediction on fresh iid test pairs of a problem."""
    check_sampler_and_key(sampler, key)
    num_samples = check_int("num_samples", num_samples, 1)
    num_test = check_int("num_test", num_test, 1)
    num_bins = check_int("num_bins", num_bins, 1)
    resolved = resolve_method(sampler, method)
    source, state = split_sampler(sampler)
    acc, ece = _classification_compiled(
        source, state, problem.prior, problem.env_params, key,
        num_test=num_test, method=resolved, num_samples=num_samples, num_bins=num_bins,
    )
    return ClassificationResult(float(acc), float(ece), resolved)
