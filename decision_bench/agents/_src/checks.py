"""Checks shared by the agent families: config fields (at construction) and
input shapes (at trace time, so a compiled call costs nothing)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax

from decision_bench._src.validation import (
    is_integral,
    check_int,
    check_nonnegative,
    check_positive,
    check_sizes,
)

Check = Callable[[str, Any], Any]


def at_least(minimum: int) -> Check:
    """An integer check with a lower bound, in the (name, value) form."""
    return lambda name, value: check_int(name, value, minimum)


# The checks of the fields many configs share, applied wherever a config has them.
SHARED_CHECKS: dict[str, Check] = {
    "hidden_sizes": check_sizes,
    "learning_rate": check_positive,
    "num_steps": at_least(0),
    "l2": check_nonnegative,
}


def check_config(config: Any, **checks: Check) -> None:
    """Validates a frozen dataclass config in its ``__post_init__`` and stores the
    normalised values: ``SHARED_CHECKS`` for the shared fields it has, then
    ``checks`` (field name -> check(name, value), overriding a shared one). The
    regulariser's mode is the problem's (``ProblemSpec.regularization``, checked
    in specs.py), not a config field. Each check raises ValueError naming the field, the value and the accepted range."""
    names = {field.name for field in dataclasses.fields(config)}
    merged = {name: check for name, check in SHARED_CHECKS.items() if name in names}
    merged.update(checks)
    validate_fields(config, merged)


def validate_fields(config: Any, checks: dict[str, Check]) -> None:
    """Runs check(name, value) for each named field of a frozen dataclass config
    and stores the normalised value."""
    for name, check in checks.items():
        object.__setattr__(config, name, check(name, getattr(config, name)))


def check_common(config: Any) -> None:
    """``check_config`` with the shared checks only."""
    check_config(config)


def check_sizes_or_empty(name: str, value: Any) -> tuple[int, ...]:
    """Hidden sizes that may be empty (() is a linear model). Returns a tuple of ints."""
    try:
        sizes = tuple(value)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of positive integers, got {value!r}") from None
    if any(
        isinstance(s, bool) or not (isinstance(s, int) or is_integral(s)) or s < 1 for s in sizes
    ):
        raise ValueError(f"{name} must be a sequence of positive integers, got {value!r}")
    return tuple(int(s) for s in sizes)


def _check_fraction(name: str, value: Any, closed_right: bool) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    upper_ok = number <= 1.0 if closed_right else number < 1.0
    if isinstance(value, bool) or not (number >= 0.0 and upper_ok):
        interval = "[0, 1]" if closed_right else "[0, 1)"
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
    return number


def unit_interval(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    return _check_fraction(name, value, closed_right=True)


def unit_interval_open(name: str, value: Any) -> float:
    """A number in [0, 1)."""
    return _check_fraction(name, value, closed_right=False)


def check_input_dim(x: jax.Array, input_dim: int, where: str) -> None:
    """Static (trace-time) shape check: x must be [n, input_dim]."""
    if x.ndim != 2 or x.shape[-1] != input_dim:
        raise ValueError(
            f"{where}: inputs have shape {tuple(x.shape)}, but the spec expects "
            f"[n, {input_dim}] (input_dim={input_dim})"
        )


def check_batch_dim(x: jax.Array, y: jax.Array, input_dim: int, where: str) -> None:
    """x must be [B, input_dim] and y [B]."""
    check_input_dim(x, input_dim, where)
    if y.shape != x.shape[:1]:
        raise ValueError(
            f"{where}: labels have shape {tuple(y.shape)}, inputs {tuple(x.shape)}; "
            f"expected labels of shape ({x.shape[0]},)"
        )
