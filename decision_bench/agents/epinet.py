"""Epinet: a base MLP plus a small index-dependent network (Osband et al., 2021,
"Epistemic neural networks"; the testbed's epinet agent).

The epistemic index is z ~ N(0, I_D) (D = ``index_dim``). With phi(x) the base
network's last hidden features:

    logits(x, z) = mu(x)                                  base MLP (hidden_sizes)
                 + sigma_L(concat(sg(phi(x)), x, z)) . z   learnable epinet
                 + prior_scale / beta * sum_k z_k p_k(x)   fixed additive prior

sigma_L is a ReLU MLP (``epinet_hidden_sizes``) with output [C * D], reshaped
to [C, D] and contracted with z, so the epinet is linear in the index given its
input. sg is stop-gradient: the epinet does not reshape the base features.
p_1..p_D are D small fixed random ReLU MLPs (``prior_hidden_sizes``), LeCun
initialised with a first-layer bias N(0, 1/d) as in the generative model (so
the prior does not vanish at x = 0). They are never trained or decayed.

Loss per step: the mean cross-entropy averaged over ``num_index_samples`` draws
of z (8, one per index dimension, as the reference averages), plus weight(num_seen) * |theta|^2 over the base and epinet parameters.

L2 weight:
- ``"testbed"``: l2 * (d / T)**l2_exponent, the reference epinet's own scaling
  (0.2 * (d/T)^0.7), which is NOT the d*sqrt(beta)/T form of the other agents;
- ``"sequential"``: l2 * 2 * sqrt(beta) / t, ``decayed_weight``'s sequential
  form, so the bandit decays every agent the same way (paper 000 App. E.2 did
  not run epinet; this is our choice).

Steps: ``num_steps`` (1000), times ``high_data_step_factor`` (10) when
T / d > ``high_data_ratio`` (500), decided from the spec at construction and
exposed as ``Agent.num_steps``.

Static (one set of functions, compiled once): layer sizes, index_dim,
num_index_samples, spec.regularization, and the step count (a loop length, so it
stays static, as do high_data_step_factor and high_data_ratio, which only decide
it). Traced (agents/core.py): l2, l2_exponent, learning_rate, prior_scale and the
problem's temperature. The index sampling, loss, update and sample_logits are
``index_core``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_nonnegative, check_positive, check_sizes
from decision_bench.agents._src.checks import at_least, check_config
from decision_bench.agents._src.networks import relu_features, relu_mlp
from decision_bench.agents.base import Agent
from decision_bench.agents import core
from decision_bench.agents.index_core import index_functions
from decision_bench.agents.regularization import true_divisor
from decision_bench.agents.entry import AgentEntry
from decision_bench.priors import init_mlp_layers
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class EpinetConfig:
    """epinet defaults (testbed_facts.md and the reference epinet agent)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # base MLP
    index_dim: int = 8
    epinet_hidden_sizes: tuple[int, ...] = (15, 15)
    prior_hidden_sizes: tuple[int, ...] = (5, 5)  # each of the index_dim prior MLPs
    prior_scale: float = core.traced(0.3)  # prior output multiplied by prior_scale / beta
    l2: float = core.traced(0.2)
    l2_exponent: float = core.traced(0.7)  # testbed weight l2 * (d / T)**l2_exponent
    num_index_samples: int = 8  # index draws averaged per gradient step
    learning_rate: float = core.traced(1e-3)  # Adam
    num_steps: int = 1000
    high_data_step_factor: int = 10  # num_steps multiplier when T / d > high_data_ratio
    high_data_ratio: float = core.static(500.0)  # decides the step count, a loop length

    def __post_init__(self):
        check_config(
            self,
            index_dim=at_least(1),
            epinet_hidden_sizes=check_sizes,
            prior_hidden_sizes=check_sizes,
            prior_scale=check_nonnegative,
            l2_exponent=check_nonnegative,
            num_index_samples=at_least(1),
            high_data_step_factor=at_least(1),
            high_data_ratio=check_positive,
        )


class EpinetParams(NamedTuple):
    base: tuple  # MLP layers: d -> hidden_sizes -> C
    epinet: tuple  # MLP layers: last_hidden + d + D -> epinet_hidden_sizes -> C * D


class EpinetState(NamedTuple):
    params: EpinetParams  # trained
    opt_state: Any  # optax.adam state
    prior: tuple  # D stacked prior MLPs, every leaf with a leading [D] axis; fixed


class EpinetHyper(NamedTuple):
    """The traced hyperparameters of EpinetConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    prior_scale: jax.Array
    l2: jax.Array
    l2_exponent: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array


def l2_weight(spec: ProblemSpec, config: EpinetConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight on base + epinet parameters after num_seen observations. Returns []."""
    return core.config_weight(_l2_weight, spec, config, num_seen)


def _l2_weight(hyper: Any, num_seen: jax.Array, *, input_dim: int, mode: str) -> jax.Array:
    """The weight above from the hyper."""
    if mode == "testbed":
        return hyper.l2 * (input_dim / true_divisor(num_seen)) ** hyper.l2_exponent
    return core.penalty_weight(hyper, num_seen, input_dim=input_dim, mode=mode)


def default_num_steps(spec: ProblemSpec, config: EpinetConfig) -> int:
    """SGD steps for fitting T = spec.num_train examples: 10x more when T / d > 500."""
    if spec.num_train / spec.input_dim > config.high_data_ratio:
        return config.num_steps * config.high_data_step_factor
    return config.num_steps


@core.cached_functions
def _functions(
    *,
    hidden_sizes: tuple[int, ...],
    epinet_hidden_sizes: tuple[int, ...],
    prior_hidden_sizes: tuple[int, ...],
    num_classes: int,
    input_dim: int,
    index_dim: int,
    num_index_samples: int,
    regularization: str,
    high_data_step_factor: int,
    high_data_ratio: float,
):
    """The epinet's functions for one static setting."""
    del high_data_step_factor, high_data_ratio  # they decide only the step count
    d, c = input_dim, num_classes
    base_sizes = (d, *hidden_sizes, c)
    epinet_in = hidden_sizes[-1] + d + index_dim
    epinet_sizes = (epinet_in, *epinet_hidden_sizes, c * index_dim)
    prior_sizes = (d, *prior_hidden_sizes, c)

    def init(hyper: Any, key: jax.Array) -> EpinetState:
        k_base, k_epi, k_prior = jax.random.split(key, 3)
        params = EpinetParams(
            base=init_mlp_layers(k_base, base_sizes),
            epinet=init_mlp_layers(k_epi, epinet_sizes),
        )
        prior = jax.vmap(lambda k: init_mlp_layers(k, prior_sizes, first_bias_std=d**-0.5))(
            jax.random.split(k_prior, index_dim)
        )
        return EpinetState(
            params=params, opt_state=core.init_optimizer(hyper, params), prior=prior
        )

    def prior_outputs(state: EpinetState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [D, n, C]: every prior MLP at once; independent of z, so a
        training step computes it once for all index samples."""
        return jax.vmap(relu_mlp, (0, None))(state.prior, x)

    def logits(
        hyper: Any,
        params: EpinetParams,
        prior_out: jax.Array,
        z: jax.Array,
        x: jax.Array,
    ) -> jax.Array:
        """z [D], x [n, d], prior_out [D, n, C] -> [n, C]."""
        hidden = relu_features(params.base, x)  # [n, H]
        base = hidden @ params.base[-1]["w"] + params.base[-1]["b"]
        # The base is trained through `base`; the epinet only reads the features.
        features = jax.lax.stop_gradient(hidden)
        epi_in = jnp.concatenate([features, x, jnp.broadcast_to(z, (x.shape[0], index_dim))], -1)
        epi = relu_mlp(params.epinet, epi_in).reshape(x.shape[0], c, index_dim) @ z
        prior = jnp.einsum("k,knc->nc", z, prior_out)
        prior_multiplier = hyper.prior_scale / hyper.temperature
        return base + epi + prior_multiplier * prior

    update, sample_logits = index_functions(
        input_dim=input_dim,
        regularization=regularization,
        index_dim=index_dim,
        num_index_samples=num_index_samples,
        context=prior_outputs,
        logits=logits,
        l2_weight=_l2_weight,
    )
    return init, update, sample_logits


def make_epinet(spec: ProblemSpec, config: EpinetConfig = EpinetConfig()) -> Agent:
    """Epinet agent for ``spec``. See the module docstring."""
    return core.make_agent(
        _functions,
        spec,
        config,
        name="epinet",
        num_steps=default_num_steps(spec, config),
    )


ENTRIES = (AgentEntry("epinet", EpinetConfig, make_epinet, colour="#e377c2", core=6),)
