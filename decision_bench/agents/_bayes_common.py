"""The import path hmc and older code use for helpers that now live in
agents/_src (checks, losses, networks); new code imports them from there."""

from __future__ import annotations

import jax

from decision_bench.agents._src.checks import (  # noqa: F401
    at_least,
    check_batch_dim,
    check_input_dim,
    check_sizes_or_empty,
    unit_interval,
    unit_interval_open,
    validate_fields,
)
from decision_bench.agents._src.losses import mean_cross_entropy, sum_of_squares  # noqa: F401
from decision_bench.agents._src.networks import relu_features, relu_mlp  # noqa: F401
from decision_bench.agents.regularization import true_divisor as effective_num_seen  # noqa: F401
from decision_bench.specs import ProblemSpec

__all__ = [
    "at_least",
    "check_batch",
    "check_batch_dim",
    "check_input_dim",
    "check_inputs",
    "check_sizes_or_empty",
    "effective_num_seen",
    "mean_cross_entropy",
    "relu_features",
    "relu_mlp",
    "sum_of_squares",
    "unit_interval",
    "unit_interval_open",
    "validate_fields",
]


def check_inputs(x: jax.Array, spec: ProblemSpec, where: str) -> None:
    """``check_input_dim`` against ``spec.input_dim``."""
    check_input_dim(x, spec.input_dim, where)


def check_batch(x: jax.Array, y: jax.Array, spec: ProblemSpec, where: str) -> None:
    """``check_batch_dim`` against ``spec.input_dim``."""
    check_batch_dim(x, y, spec.input_dim, where)
