"""The bijection between a prior's parameters and the unconstrained vector HMC moves.

A truncated-normal coordinate (an MLP weight, z ~ N(0, 1) on [-2, 2], scaled by
1 / sqrt(fan_in)) is z = 2 tanh(u / 2), a smooth bijection from R onto (-2, 2).
Its density in u carries the log-Jacobian log dz/du = -2 log cosh(u / 2):

    log p(u) = -z^2 / 2 - 2 log cosh(u / 2) + const,   z = 2 tanh(u / 2),

so the push-forward of p(u) is exactly the truncated normal: no rejection, no
reflection at a wall. Near 0, z ~ u, so under the prior every coordinate is
O(1) and the identity is a sensible starting mass matrix; the tails of p(u) are
exponential, which the leapfrog integrator handles. Gaussian coordinates are
standardised: the MLP's first-layer bias b = u / sqrt(input_dim), the logistic
prior's phi = u. Biases the MLP prior fixes at 0 are not coordinates.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench.priors import LogisticPrior, MLPPrior

PRIOR_FAMILIES = ("mlp", "logistic")


def _log_cosh(v: jax.Array) -> jax.Array:
    """log cosh(v), stable for large |v|."""
    a = jnp.abs(v)
    return a + jnp.log1p(jnp.exp(-2.0 * a)) - math.log(2.0)


@dataclasses.dataclass(frozen=True)
class Coordinates:
    """The map between a prior's params and HMC's unconstrained vector u [dim].

    Static: built from the prior's shape fields only; the temperature is passed
    to ``prior`` when tracing.
    """

    family: str  # one of PRIOR_FAMILIES
    input_dim: int
    hidden_sizes: tuple[int, ...]  # () for "logistic"
    activation: str
    num_classes: int

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        return (self.input_dim, *self.hidden_sizes, self.num_classes)

    @functools.cached_property
    def blocks(self) -> tuple[tuple[str, tuple[int, ...], float, bool], ...]:
        """(name, shape, scale, truncated) per block of u, in order. The MLP's
        weights of layer i are ``w{i}`` (scale 1/sqrt(fan_in), truncated), its
        first bias ``b0`` (scale 1/sqrt(input_dim), Gaussian)."""
        if self.family == "logistic":
            return (("phi", (self.input_dim,), 1.0, False),)
        sizes = self.layer_sizes
        blocks = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            blocks.append((f"w{i}", (fan_in, fan_out), 1.0 / math.sqrt(fan_in), True))
            if i == 0:
                blocks.append(("b0", (fan_out,), 1.0 / math.sqrt(self.input_dim), False))
        return tuple(blocks)

    @property
    def dim(self) -> int:
        return sum(math.prod(shape) for _, shape, _, _ in self.blocks)

    @functools.cached_property
    def truncated_mask(self) -> np.ndarray:
        """[dim] bool: True where the coordinate is a truncated-normal one."""
        return np.concatenate(
            [np.full(math.prod(shape), trunc) for _, shape, _, trunc in self.blocks]
        )

    def prior(self, temperature: Any) -> Any:
        """The prior with this shape at ``temperature`` (may be traced)."""
        if self.family == "logistic":
            template = LogisticPrior(self.input_dim)
        else:
            template = MLPPrior(
                self.input_dim, self.hidden_sizes, self.activation, self.num_classes
            )
        # Rebuilt from its one leaf: the checks of __init__ would need a concrete value.
        return jax.tree.unflatten(jax.tree.structure(template), [temperature])

    def _split(self, u: jax.Array) -> dict[str, jax.Array]:
        parts, offset = {}, 0
        for name, shape, _, _ in self.blocks:
            size = math.prod(shape)
            parts[name] = u[offset : offset + size].reshape(shape)
            offset += size
        return parts

    def to_params(self, u: jax.Array) -> Any:
        """u [dim] -> the prior's params."""
        raw = self._split(u)
        parts = {}
        for name, _, scale, truncated in self.blocks:
            parts[name] = scale * (2.0 * jnp.tanh(0.5 * raw[name]) if truncated else raw[name])
        if self.family == "logistic":
            return {"phi": parts["phi"]}
        layers = []
        for i, fan_out in enumerate(self.layer_sizes[1:]):
            bias = parts["b0"] if i == 0 else jnp.zeros((fan_out,), jnp.float32)
            layers.append({"w": parts[f"w{i}"], "b": bias})
        return tuple(layers)

    def from_params(self, params: Any) -> jax.Array:
        """The prior's params -> u [dim] (inverse of ``to_params``; the biases the
        prior fixes at 0 are dropped)."""
        if self.family == "logistic":
            values = {"phi": params["phi"]}
        else:
            values = {f"w{i}": layer["w"] for i, layer in enumerate(params)}
            values["b0"] = params[0]["b"]
        pieces = []
        for name, _, scale, truncated in self.blocks:
            z = values[name] / scale
            if truncated:
                # f32 rounding can put |z| a hair above 2; keep artanh finite.
                z = jnp.clip(z, -2.0 + 1e-5, 2.0 - 1e-5)
                z = 2.0 * jnp.arctanh(0.5 * z)
            pieces.append(z.reshape(-1))
        return jnp.concatenate(pieces).astype(jnp.float32)

    def log_prior(self, u: jax.Array) -> jax.Array:
        """log p(u) up to a constant, log-Jacobian included. Returns []."""
        half = 0.5 * u
        z = 2.0 * jnp.tanh(half)
        truncated = -0.5 * z**2 - 2.0 * _log_cosh(half)
        gaussian = -0.5 * u**2
        return jnp.sum(jnp.where(self.truncated_mask, truncated, gaussian))


def coordinates_of_prior(prior: Any) -> Coordinates:
    """The coordinates of an MLPPrior or LogisticPrior instance."""
    if isinstance(prior, MLPPrior):
        return Coordinates(
            "mlp", prior.input_dim, tuple(prior.hidden_sizes), prior.activation, prior.num_classes
        )
    if isinstance(prior, LogisticPrior):
        return Coordinates("logistic", prior.input_dim, (), "relu", 2)
    raise ValueError(
        f"prior must be an MLPPrior or a LogisticPrior, got {type(prior).__name__}"
    )


def model_coordinates(
    family: str, hidden_sizes: tuple[int, ...], activation: str, input_dim: int, num_classes: int
) -> Coordinates:
    """The coordinates of the prior ``family`` ("mlp" or "logistic"; the latter
    ignores hidden_sizes and activation and needs num_classes == 2)."""
    if family == "logistic":
        if num_classes != 2:
            raise ValueError(f"prior='logistic' needs num_classes == 2, got {num_classes}")
        return Coordinates("logistic", input_dim, (), "relu", 2)
    return Coordinates("mlp", input_dim, tuple(hidden_sizes), activation, num_classes)
