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
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

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
class EpinetConfig:
    """epinet defaults (testbed_facts.md and the reference epinet agent)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # base MLP
    index_dim: int = 8
    epinet_hidden_sizes: tuple[int, ...] = (15, 15)
    prior_hidden_sizes: tuple[int, ...] = (5, 5)  # each of the index_dim prior MLPs
    prior_scale: float = 0.3  # prior output multiplied by prior_scale / beta
    l2: float = 0.2
    l2_exponent: float = 0.7  # testbed weight l2 * (d / T)**l2_exponent
    num_index_samples: int = 8  # index draws averaged per gradient step
    learning_rate: float = 1e-3  # Adam
    num_steps: int = 1000
    high_data_step_factor: int = 10  # num_steps multiplier when T / d > high_data_ratio
    high_data_ratio: float = 500.0
    regularization: str = "testbed"  # "testbed" | "sequential" | "sequential_linear_beta"

    def __post_init__(self):
        common.validate_fields(
            self,
            {
                "hidden_sizes": check_sizes,
                "index_dim": common.at_least(1),
                "epinet_hidden_sizes": check_sizes,
                "prior_hidden_sizes": check_sizes,
                "prior_scale": check_nonnegative,
                "l2": check_nonnegative,
                "l2_exponent": check_nonnegative,
                "num_index_samples": common.at_least(1),
                "learning_rate": check_positive,
                "num_steps": common.at_least(0),
                "high_data_step_factor": common.at_least(1),
                "high_data_ratio": check_positive,
            },
        )
        check_choice("regularization", self.regularization, REGULARIZATION_MODES)


class EpinetParams(NamedTuple):
    base: tuple  # MLP layers: d -> hidden_sizes -> C
    epinet: tuple  # MLP layers: last_hidden + d + D -> epinet_hidden_sizes -> C * D


class EpinetState(NamedTuple):
    params: EpinetParams  # trained
    opt_state: Any  # optax.adam state
    prior: tuple  # D stacked prior MLPs, every leaf with a leading [D] axis; fixed


def l2_weight(spec: ProblemSpec, config: EpinetConfig, num_seen: jax.Array) -> jax.Array:
    """The L2 weight on base + epinet parameters after num_seen observations. Returns []."""
    if config.regularization == "testbed":
        n = common.effective_num_seen(num_seen)
        return config.l2 * (spec.input_dim / n) ** config.l2_exponent
    return decayed_weight(
        config.l2,
        num_seen,
        input_dim=spec.input_dim,
        temperature=spec.temperature,
        mode=config.regularization,
    )


def default_num_steps(spec: ProblemSpec, config: EpinetConfig) -> int:
    """SGD steps for fitting T = spec.num_train examples: 10x more when T / d > 500."""
    if spec.num_train / spec.input_dim > config.high_data_ratio:
        return config.num_steps * config.high_data_step_factor
    return config.num_steps


def make_epinet(spec: ProblemSpec, config: EpinetConfig = EpinetConfig()) -> Agent:
    """Epinet agent for ``spec``. See the module docstring."""
    d, c, index_dim = spec.input_dim, spec.num_classes, config.index_dim
    base_sizes = (d, *config.hidden_sizes, c)
    epinet_in = config.hidden_sizes[-1] + d + index_dim
    epinet_sizes = (epinet_in, *config.epinet_hidden_sizes, c * index_dim)
    prior_sizes = (d, *config.prior_hidden_sizes, c)
    prior_multiplier = config.prior_scale / spec.temperature
    optimizer = optax.adam(config.learning_rate)

    def init(key: jax.Array, spec_: ProblemSpec | None = None) -> EpinetState:
        common.check_same_spec(spec_, spec)
        k_base, k_epi, k_prior = jax.random.split(key, 3)
        params = EpinetParams(
            base=init_mlp_layers(k_base, base_sizes),
            epinet=init_mlp_layers(k_epi, epinet_sizes),
        )
        prior = jax.vmap(lambda k: init_mlp_layers(k, prior_sizes, first_bias_std=d**-0.5))(
            jax.random.split(k_prior, index_dim)
        )
        return EpinetState(params=params, opt_state=optimizer.init(params), prior=prior)

    def prior_outputs(prior: tuple, x: jax.Array) -> jax.Array:
        """x [n, d] -> [D, n, C]: every prior MLP at once; independent of z, so a
        training step computes it once for all index samples."""
        return jax.vmap(common.relu_mlp, (0, None))(prior, x)

    def logits_at(params: EpinetParams, prior_out: jax.Array, z: jax.Array, x: jax.Array):
        """z [D], x [n, d], prior_out [D, n, C] -> [n, C]."""
        hidden = common.relu_features(params.base, x)  # [n, H]
        base = hidden @ params.base[-1]["w"] + params.base[-1]["b"]
        # The base is trained through `base`; the epinet only reads the features.
        features = jax.lax.stop_gradient(hidden)
        epi_in = jnp.concatenate([features, x, jnp.broadcast_to(z, (x.shape[0], index_dim))], -1)
        epi = common.relu_mlp(params.epinet, epi_in).reshape(x.shape[0], c, index_dim) @ z
        prior = jnp.einsum("k,knc->nc", z, prior_out)
        return base + epi + prior_multiplier * prior

    def loss_fn(params: EpinetParams, prior: tuple, batch: Batch, key: jax.Array):
        zs = jax.random.normal(key, (config.num_index_samples, index_dim), jnp.float32)
        prior_out = prior_outputs(prior, batch.x)
        per_index = jax.vmap(
            lambda z: common.mean_cross_entropy(logits_at(params, prior_out, z, batch.x), batch.y)
        )(zs)
        decay = l2_weight(spec, config, batch.num_seen) * common.sum_of_squares(params)
        return per_index.mean() + decay

    def update(state: EpinetState, batch: Batch, key: jax.Array) -> EpinetState:
        common.check_batch(batch.x, batch.y, spec, "epinet update")
        grads = jax.grad(loss_fn)(state.params, state.prior, batch, key)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return EpinetState(
            params=optax.apply_updates(state.params, updates),
            opt_state=opt_state,
            prior=state.prior,
        )

    def sample_logits(state: EpinetState, key: jax.Array, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one index z shared by all n inputs."""
        common.check_inputs(x, spec, "epinet sample_logits")
        z = jax.random.normal(key, (index_dim,), jnp.float32)
        return logits_at(state.params, prior_outputs(state.prior, x), z, x)

    return Agent(
        init=init,
        update=update,
        sample_logits=sample_logits,
        member_logits=None,
        num_steps=default_num_steps(spec, config),
        name="epinet",
    )
