"""Small helpers shared by the Bayesian agent families (bbb, hypermodel, epinet, sgmcmc).

Networks here are plain ReLU MLPs stored as a tuple of layers
``{"w": [fan_in, fan_out], "b": [fan_out]}`` (``priors.init_mlp_layers`` /
``priors.mlp_forward``), because these agents manipulate parameters directly:
sample them (bbb), generate them from an index (hypermodel), or run Langevin
dynamics on them (sgmcmc).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from decision_bench._src.validation import _is_integral, check_int
from decision_bench.agents.regularization import true_divisor
from decision_bench.priors import mlp_forward
from decision_bench.specs import ProblemSpec


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


def check_inputs(x: jax.Array, spec: ProblemSpec, where: str) -> None:
    """``check_input_dim`` against ``spec.input_dim``."""
    check_input_dim(x, spec.input_dim, where)


def check_batch(x: jax.Array, y: jax.Array, spec: ProblemSpec, where: str) -> None:
    """``check_batch_dim`` against ``spec.input_dim``."""
    check_batch_dim(x, y, spec.input_dim, where)


def check_sizes_or_empty(name: str, value: Any) -> tuple[int, ...]:
    """Hidden sizes that may be empty (() is a linear model). Returns a tuple of ints."""
    try:
        sizes = tuple(value)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of positive integers, got {value!r}") from None
    if any(
        isinstance(s, bool) or not (isinstance(s, int) or _is_integral(s)) or s < 1 for s in sizes
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


def relu_features(layers: tuple, x: jax.Array) -> jax.Array:
    """The last hidden activation of a ReLU MLP. x [n, d] -> [n, last hidden width]."""
    h = x
    for layer in layers[:-1]:
        h = jax.nn.relu(h @ layer["w"] + layer["b"])
    return h


def relu_mlp(layers: tuple, x: jax.Array) -> jax.Array:
    """x [n, d] -> [n, out] through a ReLU MLP given as a tuple of layers."""
    return mlp_forward(layers, x, "relu")


def mean_cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Mean over the batch of -log softmax(logits)[y]. logits [B, C], y [B] -> []."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_p, y[:, None].astype(jnp.int32), axis=-1).mean()


def sum_of_squares(tree: Any) -> jax.Array:
    """sum(theta**2) over all leaves. Returns a [] f32."""
    return sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree))


def effective_num_seen(num_seen: jax.Array) -> jax.Array:
    """num_seen as f32, at least 1, never constant-folded (``regularization.true_divisor``,
    as in ``decayed_weight``). Returns []."""
    return true_divisor(num_seen)


def validate_fields(config: Any, checks: dict[str, Callable[[str, Any], Any]]) -> None:
    """Runs check(name, value) for each field of a frozen dataclass config and
    stores the normalised value (called from __post_init__). Each check raises
    ValueError naming the field, the value and the accepted range."""
    for name, check in checks.items():
        object.__setattr__(config, name, check(name, getattr(config, name)))


def at_least(minimum: int) -> Callable[[str, Any], int]:
    """An integer check with a lower bound, in the (name, value) form."""
    return lambda name, value: check_int(name, value, minimum)
