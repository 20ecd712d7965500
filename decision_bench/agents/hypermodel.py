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
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from decision_bench._validation import (
    check_choice,
    check_nonnegative,
    check_positive,
    check_sizes,
)
from decision_bench.agents import _bayes_common as common
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.regularization import REGULARIZATION_MODES, decayed_weight
from decision_bench.priors import init_mlp_layers
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class HypermodelConfig:
    """hypermodel defaults (paper 000, App. C.7; testbed_facts.md)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # base MLP
    index_dim: int = 6
    num_index_samples: int = 16  # index draws averaged per gradient step
    prior_hidden_sizes: tuple[int, ...] = (10,)  # additive prior MLP
    prior_scale: float = 1.0  # prior output multiplied by prior_scale / beta**power
    prior_temperature_power: float = 0.5  # 0.5: 1/sqrt(beta) (default), 1: 1/beta
    l2: float = 1.0  # lambda of the decayed L2 weight
    learning_rate: float = 1e-3  # Adam
    num_steps: int = 2000
    regularization: str = "testbed"  # "testbed" | "sequential" | "sequential_linear_beta"

    def __post_init__(self):
        common.validate_fields(
            self,
            {
                "hidden_sizes": check_sizes,
                "index_dim": common.at_least(1),
                "num_index_samples": common.at_least(1),
                "prior_hidden_sizes": check_sizes,
                "prior_scale": check_nonnegative,
                "prior_temperature_power": check_nonnegative,
                "l2": check_nonnegative,
                "learning_rate": check_positive,
                "num_steps": common.at_least(0),
            },
        )
        check_choice("regularization", self.regularization, REGULARIZATION_MODES)


class HypermodelParams(NamedTuple):
    a: jax.Array  # [P, D] f32: linear map from the index to base parameters
    b: jax.Array  # [P] f32: base parameters at z = 0


class HypermodelState(NamedTuple):
    params: HypermodelParams  # trained
    opt_state: Any  # optax.adam state
    prior_a: jax.Array  # [P_prior, D] f32: fixed random prior hypermodel


def l2_weight(spec: ProblemSpec, config: HypermodelConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight on the hypermodel parameters after num_seen observations. Returns []."""
    return decayed_weight(
        config.l2,
        num_seen,
        input_dim=spec.input_dim,
        temperature=spec.temperature,
        mode=config.regularization,
    )


def _flat_layout(sizes: tuple[int, ...]):
    """(unravel, per-parameter init std [P]) for an MLP with these layer sizes.

    The std vector is built in the same pytree and raveled with the same
    function, so its order matches the flat parameters whatever the leaf order.
    """
    dummy = tuple(
        {"w": jnp.zeros((i, o), jnp.float32), "b": jnp.zeros((o,), jnp.float32)}
        for i, o in zip(sizes[:-1], sizes[1:])
    )
    _, unravel = ravel_pytree(dummy)
    stds = tuple(
        {"w": jnp.full((i, o), i**-0.5, jnp.float32), "b": jnp.full((o,), i**-0.5, jnp.float32)}
        for i, o in zip(sizes[:-1], sizes[1:])
    )
    std_flat, _ = ravel_pytree(stds)
    return unravel, std_flat


def make_hypermodel(spec: ProblemSpec, config: HypermodelConfig = HypermodelConfig()) -> Agent:
    """Linear-hypermodel agent for ``spec``. See the module docstring."""
    base_sizes = (spec.input_dim, *config.hidden_sizes, spec.num_classes)
    prior_sizes = (spec.input_dim, *config.prior_hidden_sizes, spec.num_classes)
    unravel_base, base_std = _flat_layout(base_sizes)
    unravel_prior, prior_std = _flat_layout(prior_sizes)
    prior_multiplier = config.prior_scale / spec.temperature**config.prior_temperature_power
    index_dim = config.index_dim
    optimizer = optax.adam(config.learning_rate)

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> HypermodelState:
        common.check_same_spec(spec_, spec)
        k_b, k_a, k_prior = jax.random.split(key, 3)
        b, _ = ravel_pytree(init_mlp_layers(k_b, base_sizes))
        a = jax.random.normal(k_a, (b.shape[0], index_dim), jnp.float32)
        a = a * (base_std / index_dim**0.5)[:, None]
        prior_a = jax.random.normal(k_prior, (prior_std.shape[0], index_dim), jnp.float32)
        prior_a = prior_a * (prior_std / index_dim**0.5)[:, None]
        params = HypermodelParams(a=a, b=b)
        return HypermodelState(params=params, opt_state=optimizer.init(params), prior_a=prior_a)

    def logits_at(params: HypermodelParams, prior_a: jax.Array, z: jax.Array, x: jax.Array):
        """z [D], x [n, d] -> [n, C]."""
        base = common.relu_mlp(unravel_base(params.a @ z + params.b), x)
        prior = common.relu_mlp(unravel_prior(prior_a @ z), x)
        return base + prior_multiplier * jax.lax.stop_gradient(prior)

    def loss_fn(params: HypermodelParams, prior_a: jax.Array, batch: Batch, key: jax.Array):
        zs = jax.random.normal(key, (config.num_index_samples, index_dim), jnp.float32)
        per_index = jax.vmap(
            lambda z: common.mean_cross_entropy(logits_at(params, prior_a, z, batch.x), batch.y)
        )(zs)
        decay = l2_weight(spec, config, batch.num_seen) * common.sum_of_squares(params)
        return per_index.mean() + decay

    def update(state: HypermodelState, batch: Batch, key: jax.Array) -> HypermodelState:
        common.check_batch(batch.x, batch.y, spec, "hypermodel update")
        grads = jax.grad(loss_fn)(state.params, state.prior_a, batch, key)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return HypermodelState(
            params=optax.apply_updates(state.params, updates),
            opt_state=opt_state,
            prior_a=state.prior_a,
        )

    def sample_logits(state: HypermodelState, key: jax.Array, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one index z shared by all n inputs."""
        common.check_inputs(x, spec, "hypermodel sample_logits")
        z = jax.random.normal(key, (index_dim,), jnp.float32)
        return logits_at(state.params, state.prior_a, z, x)

    return Agent(
        init=init,
        update=update,
        sample_logits=sample_logits,
        member_logits=None,
        num_steps=config.num_steps,
        name="hypermodel",
    )
