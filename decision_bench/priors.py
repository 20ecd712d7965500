"""Generative priors over environments: pure functions of a PRNG key.

A prior is a frozen dataclass with static shapes (input_dim, num_classes, ...)
and three pure methods:

- ``init(key) -> params``: one environment sample, a plain pytree of arrays, so
  ``jax.vmap(prior.init)(keys)`` samples many environments at once;
- ``logits(params, x) -> [n, num_classes]``: the environment's logits, already
  divided by the temperature, so ``softmax(logits)`` are the class probabilities;
- ``sample_inputs(key, n) -> [n, input_dim]``: inputs from the prior's input
  distribution (N(0, I) for the MLP and logistic priors, coin indices for coins).

The random-MLP prior is the Neural Testbed's generative model (paper 000,
Sec. 3.1 and App. B).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol

import jax
import jax.numpy as jnp

from decision_bench._src.pytrees import register_data_fields
from decision_bench._src.validation import check_choice, check_int, check_positive, check_sizes

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "swish": jax.nn.swish,
    "sigmoid": jax.nn.sigmoid,
    "selu": jax.nn.selu,
    "leaky_relu": jax.nn.leaky_relu,
    "gelu": jax.nn.gelu,
}

# std of a standard normal truncated to [-2, 2]. The reference implementation
# does NOT divide by it: haiku's hk.Linear default is
# TruncatedNormal(stddev=1/sqrt(fan_in)) = stddev * truncated_normal(-2, 2), so its
# weights have std 0.8796/sqrt(fan_in) (flax's lecun_normal and haiku's
# VarianceScaling divide by this constant; the testbed's environments and agents
# use neither). Kept here for the tests and for users who want the corrected scale.
TRUNCATED_NORMAL_STD = 0.87962566103423978
# The default generative family (paper 000): the random MLP's activation and hidden widths.
DEFAULT_ACTIVATION = "relu"
DEFAULT_HIDDEN_SIZES = (50, 50)


class Prior(Protocol):
    input_dim: int
    num_classes: int
    temperature: float

    def init(self, key: jax.Array) -> Any: ...

    def logits(self, params: Any, x: jax.Array) -> jax.Array: ...

    def sample_inputs(self, key: jax.Array, n: int) -> jax.Array: ...


def truncated_normal_weights(
    key: jax.Array, fan_in: int, fan_out: int, dtype: Any = jnp.float32
) -> jax.Array:
    """Weights [fan_in, fan_out]: (1/sqrt(fan_in)) * z, z ~ N(0, 1) truncated to [-2, 2].

    This is the Neural Testbed's convention for its generative MLP and for every
    agent network (haiku's hk.Linear default), without variance correction: the
    actual standard deviation is TRUNCATED_NORMAL_STD / sqrt(fan_in) = 0.8796/sqrt(fan_in).
    """
    std = 1.0 / jnp.sqrt(fan_in)
    return std * jax.random.truncated_normal(key, -2.0, 2.0, (fan_in, fan_out), dtype)


def truncated_normal_init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
    """``truncated_normal_weights`` as a flax initialiser (``nn.Dense(kernel_init=...)``).

    shape: (fan_in, fan_out), the layout of a flax Dense kernel.
    """
    fan_in, fan_out = shape
    return truncated_normal_weights(key, fan_in, fan_out, dtype)


def mlp_forward(layers: tuple, x: jax.Array, activation: str) -> jax.Array:
    """Applies a plain MLP given as a tuple of {"w": [in, out], "b": [out]}.

    x: [n, in] -> [n, out]. The activation follows every layer but the last.
    """
    act = ACTIVATIONS[activation]
    h = x
    for layer in layers[:-1]:
        h = act(h @ layer["w"] + layer["b"])
    return h @ layers[-1]["w"] + layers[-1]["b"]


def init_mlp_layers(
    key: jax.Array,
    sizes: tuple[int, ...],
    first_bias_std: float | None = None,
    first_bias_truncated: bool = False,
) -> tuple:
    """Random MLP layers for layer sizes (in, h1, ..., out).

    Weights as ``truncated_normal_weights`` (haiku's uncorrected convention, std
    0.8796/sqrt(fan_in)); biases zero except the first layer's when
    first_bias_std is given: first_bias_std * N(0, 1) (the generative model's
    haiku RandomNormal), or with first_bias_truncated first_bias_std * N(0, 1)
    truncated to [-2, 2] (enn's ensemble networks with nonzero_bias=True).
    """
    keys = jax.random.split(key, len(sizes))
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = truncated_normal_weights(keys[i], fan_in, fan_out)
        if i == 0 and first_bias_std is not None:
            if first_bias_truncated:
                z = jax.random.truncated_normal(keys[-1], -2.0, 2.0, (fan_out,), jnp.float32)
            else:
                z = jax.random.normal(keys[-1], (fan_out,), jnp.float32)
            b = first_bias_std * z
        else:
            b = jnp.zeros((fan_out,), jnp.float32)
        layers.append({"w": w, "b": b})
    return tuple(layers)


@dataclasses.dataclass(frozen=True)
class MLPPrior:
    """The Neural Testbed's random-MLP generative model.

    Weights are (1/sqrt(fan_in)) * z with z ~ N(0, 1) truncated to [-2, 2] and no
    variance correction (haiku's default, as in the reference: actual std
    0.8796/sqrt(fan_in)); the first layer's bias is N(0, 1/input_dim), untruncated;
    other biases are zero; P(y | x) = softmax(f(x) / beta).
    params: a tuple of layers {"w": [fan_in, fan_out], "b": [fan_out]}.
    """

    input_dim: int
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES
    activation: str = DEFAULT_ACTIVATION
    num_classes: int = 2
    temperature: float = 0.1

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        object.__setattr__(self, "hidden_sizes", check_sizes("hidden_sizes", self.hidden_sizes))
        check_choice("activation", self.activation, ACTIVATIONS)
        object.__setattr__(self, "num_classes", check_int("num_classes", self.num_classes, 2))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        return (self.input_dim, *self.hidden_sizes, self.num_classes)

    def init(self, key: jax.Array) -> tuple:
        return init_mlp_layers(key, self.layer_sizes, first_bias_std=1.0 / self.input_dim**0.5)

    def raw_logits(self, params: tuple, x: jax.Array) -> jax.Array:
        """The MLP output before dividing by the temperature. x: [n, d] -> [n, C]."""
        return mlp_forward(params, x, self.activation)

    def logits(self, params: tuple, x: jax.Array) -> jax.Array:
        return self.raw_logits(params, x) / self.temperature

    def sample_inputs(self, key: jax.Array, n: int) -> jax.Array:
        return jax.random.normal(key, (n, self.input_dim), jnp.float32)


@dataclasses.dataclass(frozen=True)
class LogisticPrior:
    """Logistic regression with a Gaussian prior (paper 001, Sec. 3.1).

    phi ~ N(0, I_d) and P(y = 1 | x) = sigmoid(phi . x / beta). The paper prints
    ``rho * phi . x`` but calls rho = 0.01 the high signal-to-noise setting;
    dividing by the temperature is the reading consistent with that text and
    with the MLP prior, so small temperatures give near-deterministic labels.
    params: {"phi": [input_dim]}. Logits are [0, phi . x / beta].
    """

    input_dim: int
    temperature: float = 0.1
    num_classes: int = dataclasses.field(default=2, init=False)

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))

    def init(self, key: jax.Array) -> dict:
        return {"phi": jax.random.normal(key, (self.input_dim,), jnp.float32)}

    def logits(self, params: dict, x: jax.Array) -> jax.Array:
        z = x @ params["phi"] / self.temperature
        return jnp.stack([jnp.zeros_like(z), z], axis=-1)

    def sample_inputs(self, key: jax.Array, n: int) -> jax.Array:
        return jax.random.normal(key, (n, self.input_dim), jnp.float32)


@dataclasses.dataclass(frozen=True)
class CoinsPrior:
    """Bag of coins (paper 001, Example 1): coin i lands heads with p_i ~ U(0, 1).

    The input is the one-hot coin index (input_dim = num_coins); the label is 1
    for heads. params: {"p": [num_coins]}. The temperature is fixed at 1.
    """

    num_coins: int
    num_classes: int = dataclasses.field(default=2, init=False)
    temperature: float = dataclasses.field(default=1.0, init=False)

    def __post_init__(self):
        object.__setattr__(self, "num_coins", check_int("num_coins", self.num_coins, 1))

    @property
    def input_dim(self) -> int:
        return self.num_coins

    def init(self, key: jax.Array) -> dict:
        # Keep p away from exactly 0 or 1 so log-probabilities stay finite.
        eps = 1e-6
        return {"p": jax.random.uniform(key, (self.num_coins,), jnp.float32, eps, 1.0 - eps)}

    def logits(self, params: dict, x: jax.Array) -> jax.Array:
        p = x @ params["p"]
        return jnp.stack([jnp.log1p(-p), jnp.log(p)], axis=-1)

    def sample_inputs(self, key: jax.Array, n: int) -> jax.Array:
        index = jax.random.randint(key, (n,), 0, self.num_coins)
        return jax.nn.one_hot(index, self.num_coins, dtype=jnp.float32)


# Each prior is a pytree whose one leaf is its temperature: jitted code can then take a
# prior as an ordinary argument, and priors that differ only in temperature share one
# compiled program (the temperature only divides logits; shapes never depend on it).
register_data_fields(MLPPrior, ("temperature",), ("input_dim", "hidden_sizes", "activation", "num_classes"))
register_data_fields(LogisticPrior, ("temperature",), ("input_dim", "num_classes"))
register_data_fields(CoinsPrior, ("temperature",), ("num_coins", "num_classes"))

PRIORS = ("mlp", "logistic", "coins")


def make_prior(
    name: str,
    input_dim: int,
    temperature: float = 0.1,
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES,
    activation: str = DEFAULT_ACTIVATION,
    num_classes: int = 2,
) -> Prior:
    """Builds a prior by name; for "coins", input_dim is the number of coins."""
    check_choice("prior", name, PRIORS)
    if name == "mlp":
        return MLPPrior(input_dim, tuple(hidden_sizes), activation, num_classes, temperature)
    if num_classes != 2:
        raise ValueError(f"num_classes must be 2 for the {name!r} prior, got {num_classes!r}")
    if name == "logistic":
        return LogisticPrior(input_dim, temperature)
    return CoinsPrior(input_dim)
