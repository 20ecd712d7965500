"""Linear hypermodel over an MLP with an additive prior (Dwaracherla et al., 2020;
paper 000, App. C.7).

The epistemic index is z ~ N(0, I_D) (D = ``index_dim``). A learnable linear
hypermodel maps it to all weights of a base ReLU MLP: theta(z) = A z + b, with
A [P, D] and b [P] (P = number of base-network parameters). The prediction is

    logits(x, z) = f_{theta(z)}(x) + prior_scale / beta**prior_temperature_power * g_{phi(z)}(x)

where g is a smaller ReLU MLP (``prior_hidden_sizes``) whose weights come from a
FIXED random linear hypermodel phi(z) = A_p z (never trained, never decayed).
A_p's entries are N(0, s^2 / D) with s = 1/sqrt(fan_in) of each weight's layer,
so for a typical z (|z|^2 ~ D) g is a random network distributed like the
LeCun initialisation, i.e. like the testbed's generative MLP.

Loss per step: the mean cross-entropy averaged over ``num_index_samples`` draws
of z, plus weight(num_seen) * (|A|^2 + |b|^2), with weight from
``regularization.decayed_weight(l2, ...)``: l2 * d * sqrt(beta) / T (testbed) or
l2 * 2 * sqrt(beta) / t (sequential).

Initialisation: b is the usual LeCun initialisation of the base MLP; A's
entries are N(0, s^2 / D), so theta(z) starts as a random spread around b.

Static (one set of functions, compiled once): layer sizes, index_dim,
num_index_samples, spec.regularization, num_steps. Traced (agents/core.py): l2,
learning_rate, prior_scale, prior_temperature_power and the problem's temperature.
The index sampling, loss, update and sample_logits are ``index_core``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from decision_bench._src.validation import check_nonnegative, check_sizes
from decision_bench.agents._src.checks import at_least, check_config
from decision_bench.agents._src.networks import relu_mlp
from decision_bench.agents.base import Agent
from decision_bench.agents import core
from decision_bench.agents.index_core import index_functions
from decision_bench.agents.entry import AgentEntry
from decision_bench.priors import init_mlp_layers
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class HypermodelConfig:
    """hypermodel defaults (paper 000, App. C.7; testbed_facts.md)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # base MLP
    index_dim: int = 6
    num_index_samples: int = 16  # index draws averaged per gradient step
    prior_hidden_sizes: tuple[int, ...] = (10,)  # additive prior MLP
    prior_scale: float = core.traced(1.0)  # prior output multiplied by prior_scale / beta**power
    prior_temperature_power: float = core.traced(0.5)  # 0.5: 1/sqrt(beta) (default), 1: 1/beta
    l2: float = core.traced(1.0)  # lambda of the decayed L2 weight
    learning_rate: float = core.traced(1e-3)  # Adam
    num_steps: int = 2000

    def __post_init__(self):
        check_config(
            self,
            index_dim=at_least(1),
            num_index_samples=at_least(1),
            prior_hidden_sizes=check_sizes,
            prior_scale=check_nonnegative,
            prior_temperature_power=check_nonnegative,
        )


class HypermodelParams(NamedTuple):
    a: jax.Array  # [P, D] f32: linear map from the index to base parameters
    b: jax.Array  # [P] f32: base parameters at z = 0


class HypermodelState(NamedTuple):
    params: HypermodelParams  # trained
    opt_state: Any  # optax.adam state
    prior_a: jax.Array  # [P_prior, D] f32: fixed random prior hypermodel


class HypermodelHyper(NamedTuple):
    """The traced hyperparameters of HypermodelConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    prior_scale: jax.Array
    prior_temperature_power: jax.Array
    l2: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array


def l2_weight(spec: ProblemSpec, config: HypermodelConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight on the hypermodel parameters after num_seen observations. Returns []."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen)


def _flat_layout(sizes: tuple[int, ...]):
    """(unravel, per-parameter init std [P] f32 numpy) for an MLP with these layer sizes.

    The std vector is built in the same pytree and flattened in the same leaf
    order as ``ravel_pytree``, so its order matches the flat parameters whatever
    the leaf order. It is numpy, a constant of the cached functions.
    """
    dummy = tuple(
        {"w": np.zeros((i, o), np.float32), "b": np.zeros((o,), np.float32)}
        for i, o in zip(sizes[:-1], sizes[1:])
    )
    _, unravel = ravel_pytree(dummy)
    stds = tuple(
        {"w": np.full((i, o), i**-0.5, np.float32), "b": np.full((o,), i**-0.5, np.float32)}
        for i, o in zip(sizes[:-1], sizes[1:])
    )
    std_flat = np.concatenate([np.ravel(leaf) for leaf in jax.tree.leaves(stds)])
    return unravel, std_flat


@core.cached_functions
def _functions(
    *,
    hidden_sizes: tuple[int, ...],
    prior_hidden_sizes: tuple[int, ...],
    num_classes: int,
    input_dim: int,
    index_dim: int,
    num_index_samples: int,
    regularization: str,
):
    """The hypermodel's functions for one static setting; the same objects for the
    same setting, so every hypermodel of that shape shares its compiled programs."""
    base_sizes = (input_dim, *hidden_sizes, num_classes)
    unravel_base, base_std = _flat_layout(base_sizes)
    unravel_prior, prior_std = _flat_layout((input_dim, *prior_hidden_sizes, num_classes))

    def init(hyper: Any, key: jax.Array) -> HypermodelState:
        k_b, k_a, k_prior = jax.random.split(key, 3)
        b, _ = ravel_pytree(init_mlp_layers(k_b, base_sizes))
        a = jax.random.normal(k_a, (b.shape[0], index_dim), jnp.float32)
        a = a * (base_std / index_dim**0.5)[:, None]
        prior_a = jax.random.normal(k_prior, (prior_std.shape[0], index_dim), jnp.float32)
        prior_a = prior_a * (prior_std / index_dim**0.5)[:, None]
        params = HypermodelParams(a=a, b=b)
        return HypermodelState(
            params=params, opt_state=core.init_optimizer(hyper, params), prior_a=prior_a
        )

    def context(state: HypermodelState, x: jax.Array) -> jax.Array:
        del x  # the prior hypermodel is applied per z
        return state.prior_a

    def logits(
        hyper: Any,
        params: HypermodelParams,
        prior_a: jax.Array,
        z: jax.Array,
        x: jax.Array,
    ) -> jax.Array:
        """z [D], x [n, d] -> [n, C]."""
        prior_multiplier = hyper.prior_scale / hyper.temperature**hyper.prior_temperature_power
        base = relu_mlp(unravel_base(params.a @ z + params.b), x)
        prior = relu_mlp(unravel_prior(prior_a @ z), x)
        return base + prior_multiplier * jax.lax.stop_gradient(prior)

    update, sample_logits = index_functions(
        input_dim=input_dim,
        regularization=regularization,
        index_dim=index_dim,
        num_index_samples=num_index_samples,
        context=context,
        logits=logits,
        l2_weight=core.penalty_weight,
    )
    return init, update, sample_logits


def make_hypermodel(spec: ProblemSpec, config: HypermodelConfig = HypermodelConfig()) -> Agent:
    """Linear-hypermodel agent for ``spec``. See the module docstring."""
    return core.make_agent(_functions, spec, config, name="hypermodel")


ENTRIES = (
    AgentEntry(
        "hypermodel", HypermodelConfig, make_hypermodel, colour="#8c564b", core=4,
        paper_grid={"l2": (0.1, 0.3, 1.0, 3.0, 10.0)},  # App. C.7
    ),
)
