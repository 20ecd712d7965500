"""Deep ensembles: ensemble and ensemble+ (paper 000, App. C.2 and C.6).

The M members are one stacked pytree (leading axis M) trained by one vmapped
forward pass and one Adam optimiser; Adam acts element-wise, so this is exactly
M independent Adam runs, compiled once instead of M times.

Loss: the mean over M member indices drawn uniformly WITH replacement each step
(member_sampling="with_replacement", the reference's behaviour: enn's
``average_single_index_loss(loss, num_index_samples=M)`` over an integer indexer)
of the batch-mean (bootstrap weight x cross-entropy), plus
``decayed_weight(l2, num_seen, num_members=M) * sum over all members of theta**2``,
i.e. per member the mlp loss with L2 weight ``l2 * d * sqrt(beta) / T`` (the
paper's ``/ (M T)`` is the weight on the sum over members). So in a step a member
drawn k times gets k/M of the data term (k ~ Binomial(M, 1/M): about 37% of members
get only the decay in a given step). member_sampling="all" trains every member on
every step instead (weight 1/M each), an option the reference does not have.

ensemble+ adds to each member a fixed random prior network with the generative
MLP's architecture (hidden (50, 50), ReLU), whose raw output is scaled by
``prior_scale / sqrt(beta)``. Both its trained members and its prior networks are
initialised as the reference's (enn's ensemble MLP with ``nonzero_bias=True``):
uncorrected truncated-normal weights, a first-layer bias (1/sqrt(d)) * N(0, 1)
truncated to [-2, 2], other biases zero. (ensemble, like mlp, starts with zero
biases: the reference builds it with ``nonzero_bias=False``.) Prior networks sit
outside the optimiser: never trained, never regularised, never decayed.

Bootstrap weights (ensemble+): one weight per (member, data index), mean 1:
"none" (all 1), "exponential" (Exp(1)), "bernoulli" (2 x Bernoulli(1/2)). They are
drawn at init and stored; a batch looks them up at ``Batch.index % length``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice, check_int, check_nonnegative, check_sizes
from decision_bench.agents._src.checks import check_common
from decision_bench.agents._src.losses import cross_entropy, sum_of_squares
from decision_bench.agents._src.networks import MLP
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry
from decision_bench.priors import init_mlp_layers, mlp_forward
from decision_bench.specs import ProblemSpec

BOOTSTRAP_TYPES = ("none", "exponential", "bernoulli")
MEMBER_SAMPLING = ("with_replacement", "all")

# Weight-table length when the spec has no training-set size (the bandit): the
# replay buffer capacity of paper 000, App. E, so each stored example keeps its
# own weight.
DEFAULT_BOOTSTRAP_SIZE = 10_000


@dataclasses.dataclass(frozen=True)
class EnsembleConfig:
    """ensemble defaults (paper 000, App. C.2): M = 100, l2 = 1 adaptive, 1000 steps."""

    num_ensemble: int = 100  # M
    hidden_sizes: tuple[int, ...] = (50, 50)
    l2: float = core.traced(1.0)  # lambda; weight = l2 * d * sqrt(beta) / (M T) on the sum over members
    learning_rate: float = core.traced(1e-3)
    num_steps: int = 1000
    member_sampling: str = "with_replacement"  # "with_replacement" (reference) | "all"

    def __post_init__(self):
        object.__setattr__(self, "num_ensemble", check_int("num_ensemble", self.num_ensemble, 1))
        check_choice("member_sampling", self.member_sampling, MEMBER_SAMPLING)
        check_common(self)


@dataclasses.dataclass(frozen=True)
class EnsemblePlusConfig(EnsembleConfig):
    """ensemble+ defaults (paper 000, App. C.6): ensemble plus prior networks, scale 3."""

    prior_scale: float = core.traced(3.0)  # prior output multiplied by prior_scale / sqrt(beta)
    prior_hidden_sizes: tuple[int, ...] = (50, 50)  # the generative MLP's architecture
    bootstrap: str = "none"  # "none" | "exponential" | "bernoulli"
    bootstrap_size: int | None = None  # weights per member; None: T, or 10,000 if T = 0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "prior_scale", check_nonnegative("prior_scale", self.prior_scale))
        object.__setattr__(
            self, "prior_hidden_sizes", check_sizes("prior_hidden_sizes", self.prior_hidden_sizes)
        )
        check_choice("bootstrap", self.bootstrap, BOOTSTRAP_TYPES)
        if self.bootstrap_size is not None:
            object.__setattr__(
                self, "bootstrap_size", check_int("bootstrap_size", self.bootstrap_size, 1)
            )


EnsembleState = core.TrainState  # params: flax MLP params, every leaf with a leading [M] axis


class EnsemblePlusState(NamedTuple):
    params: Any  # trained MLP params, leading [M] axis
    opt_state: Any
    prior_params: Any  # prior MLP layers (priors.init_mlp_layers), leading [M] axis; fixed
    bootstrap_weights: jax.Array  # [M, L] f32, mean 1 (L = 1 for "none")


# EnsembleConfig's traced fields are l2 and learning_rate: the shared record.
EnsembleHyper = core.L2Hyper


class EnsemblePlusHyper(NamedTuple):
    """The traced hyperparameters of EnsemblePlusConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    l2: jax.Array
    learning_rate: jax.Array
    prior_scale: jax.Array
    temperature: jax.Array


def l2_weight(spec: ProblemSpec, config: EnsembleConfig, num_seen: jax.Array) -> jax.Array:
    """Weight on sum over members of theta**2: l2 * d sqrt(beta) / (M T) (testbed),
    l2 * 2 sqrt(beta) / (M t) (sequential), for a spec and config. Returns a [] f32."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen, num_members=config.num_ensemble)


def bootstrap_weights(key: jax.Array, kind: str, shape: tuple[int, ...]) -> jax.Array:
    """Per-(member, example) weights with mean 1. Returns [*shape] f32."""
    check_choice("bootstrap", kind, BOOTSTRAP_TYPES)
    if kind == "exponential":
        return jax.random.exponential(key, shape, jnp.float32)
    if kind == "bernoulli":
        return 2.0 * jax.random.bernoulli(key, 0.5, shape).astype(jnp.float32)
    return jnp.ones(shape, jnp.float32)


def member_weights(key: jax.Array, num_members: int, kind: str) -> jax.Array:
    """Weight [M] f32 of each member's data loss in one step; sums to 1.

    "with_replacement": counts of M uniform draws over the members, divided by M
    (the reference); "all": 1/M each.
    """
    if kind == "all":
        return jnp.full((num_members,), 1.0 / num_members, jnp.float32)
    draws = jax.random.randint(key, (num_members,), 0, num_members)
    return jnp.zeros((num_members,), jnp.float32).at[draws].add(1.0 / num_members)


def _select(tree: Any, index: jax.Array) -> Any:
    """Member `index` of a stacked pytree."""
    return jax.tree.map(lambda leaf: leaf[index], tree)


@core.cached_functions
def _functions(
    *,
    num_ensemble: int,
    hidden_sizes: tuple[int, ...],
    num_classes: int,
    input_dim: int,
    regularization: str,
    member_sampling: str,
    weights_length: int,
    prior_hidden_sizes: tuple[int, ...] | None = None,
    bootstrap: str = "none",
    bootstrap_size: int | None = None,
):
    """The ensemble's functions for one static setting (shapes, modes): ensemble+
    when it has prior networks (``prior_hidden_sizes``)."""
    del bootstrap_size  # weights_length is derived from it
    plus = prior_hidden_sizes is not None
    num_members = num_ensemble
    prior_hidden_sizes = prior_hidden_sizes or ()
    net = MLP(hidden_sizes, num_classes, nonzero_first_bias=plus)
    prior_sizes = (input_dim, *prior_hidden_sizes, num_classes)

    def member_forward(hyper: Any, params: Any, prior_params: Any, x: jax.Array) -> jax.Array:
        """One member: x [n, d] -> [n, C]."""
        logits = net.apply(params, x)
        if plus:
            prior_multiplier = hyper.prior_scale / jnp.sqrt(hyper.temperature)
            logits = logits + prior_multiplier * mlp_forward(prior_params, x, "relu")
        return logits

    def all_members(hyper: Any, state: Any, x: jax.Array) -> jax.Array:
        """x [n, d] -> [M, n, C]."""
        prior_params = state.prior_params if plus else None
        prior_axis = 0 if plus else None
        return jax.vmap(member_forward, (None, 0, prior_axis, None))(
            hyper, state.params, prior_params, x
        )

    def init_prior(key: jax.Array) -> tuple:
        """One member's fixed prior network (enn's nonzero_bias=True initialisation)."""
        return init_mlp_layers(
            key, prior_sizes, first_bias_std=input_dim**-0.5, first_bias_truncated=True
        )

    def init(hyper: Any, key: jax.Array) -> Any:
        k_net, k_prior, k_boot = jax.random.split(key, 3)
        dummy = jnp.zeros((1, input_dim), jnp.float32)
        params = jax.vmap(net.init, (0, None))(jax.random.split(k_net, num_members), dummy)
        opt_state = core.init_optimizer(hyper, params)
        if not plus:
            return core.TrainState(params=params, opt_state=opt_state)
        return EnsemblePlusState(
            params=params,
            opt_state=opt_state,
            prior_params=jax.vmap(init_prior)(jax.random.split(k_prior, num_members)),
            bootstrap_weights=bootstrap_weights(k_boot, bootstrap, (num_members, weights_length)),
        )

    def loss(params: Any, hyper: Any, state: Any, batch: Batch, key: jax.Array) -> jax.Array:
        """The key draws this step's member indices; bootstrap weights were drawn at init."""
        logits = all_members(hyper, state._replace(params=params), batch.x)  # [M, B, C]
        xent = cross_entropy(logits, batch.y)  # [M, B]
        if plus:
            xent = xent * state.bootstrap_weights[:, batch.index % weights_length]
        weights = member_weights(key, num_members, member_sampling)  # [M]
        data_loss = (weights * xent.mean(axis=1)).sum()
        decay = core.penalty_weight(
            hyper, batch.num_seen, input_dim=input_dim, mode=regularization, num_members=num_members
        )
        return data_loss + decay * sum_of_squares(params)

    def sample_logits(hyper: Any, key: jax.Array, state: Any, x: jax.Array) -> jax.Array:
        """One member chosen uniformly at random, applied to all n inputs: [n, d] -> [n, C]."""
        member = jax.random.randint(key, (), 0, num_members)
        prior_params = _select(state.prior_params, member) if plus else None
        return member_forward(hyper, _select(state.params, member), prior_params, x)

    return init, core.sgd_update(loss), sample_logits, all_members


def _build(spec: ProblemSpec, config: EnsembleConfig, plus: bool) -> Agent:
    weights_length = 1
    # "none" keeps a [M, 1] table of ones: the lookup stays the same code and
    # nothing of size M x L is stored for it.
    if plus and config.bootstrap != "none":
        weights_length = config.bootstrap_size or (spec.num_train or DEFAULT_BOOTSTRAP_SIZE)
    name = "ensemble+" if plus else "ensemble"
    return core.make_agent(_functions, spec, config, name=name, weights_length=weights_length)


def make_ensemble(spec: ProblemSpec, config: EnsembleConfig) -> Agent:
    """A deep ensemble of config.num_ensemble MLPs (no prior networks, no bootstrap)."""
    if isinstance(config, EnsemblePlusConfig):
        raise ValueError("make_ensemble got an EnsemblePlusConfig; use make_ensemble_plus")
    return _build(spec, config, plus=False)


def make_ensemble_plus(spec: ProblemSpec, config: EnsemblePlusConfig) -> Agent:
    """Ensemble with randomized prior functions and optional bootstrap weights."""
    if not isinstance(config, EnsemblePlusConfig):
        raise ValueError(
            f"make_ensemble_plus needs an EnsemblePlusConfig, got {type(config).__name__}"
        )
    return _build(spec, config, plus=True)


ENTRIES = (
    AgentEntry(
        "ensemble", EnsembleConfig, make_ensemble, colour="#ff7f0e", core=1,
        paper_grid={"l2": (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)},  # App. C.2
    ),
    AgentEntry(
        "ensemble+", EnsemblePlusConfig, make_ensemble_plus, colour="#2ca02c", core=5,
        paper_grid={"l2": (0.1, 0.3, 1.0, 3.0, 10.0)},  # App. C.6
    ),
)
