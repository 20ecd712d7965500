"""The registered hmc agent and direct posterior sampling on a data set.

The agent's members are ``num_chains * num_samples`` kept draws of the chains
(sampler.py) on the problem's own prior, chain-major; ``member_logits``
enumerates them with equal weight and ``sample_logits`` picks one uniformly, for
all inputs at once. Its state carries the chains' diagnostics (diagnostics.py).

How ``fit`` drives it: every update writes its batch into a buffer of the
training set at ``batch.index`` and marks the rows seen; the update whose step
is ceil(T / batch_size) - 1 (T = ``batch.num_seen``) runs the chains on the rows
seen. With fit's batch size the stream has by then delivered every position
once, so the chains see the whole data set with no duplicates and no weighting;
``agent.num_steps`` is ceil(T / batch_size). The trigger depends only on the
step counter and T, so under vmap ``lax.cond`` stays a branch. In the bandit the
chains run at the first update, on that batch's rows.

Static: the prior family, hidden sizes, activation, input dimension, number of
classes and of training rows, algorithm, num_chains, num_warmup, num_samples,
thinning, num_integration_steps, max_num_doublings, num_probes and batch_size.
Data (``HMCHyper``): initial_step_size, target_acceptance_rate,
step_size_jitter and the problem's temperature.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice, check_positive, check_sizes
from decision_bench.agents import _bayes_common as common
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.core import as_hyper, bind
from decision_bench.agents.hmc.coordinates import (
    PRIOR_FAMILIES,
    Coordinates,
    coordinates_of_prior,
    model_coordinates,
)
from decision_bench.agents.hmc.diagnostics import HMCDiagnostics, initial_diagnostics
from decision_bench.agents.hmc.sampler import (
    ALGORITHMS,
    HMCHyper,
    SamplerSettings,
    require_blackjax,
    run_chains,
)
from decision_bench.agents.regularization import REGULARIZATION_MODES
from decision_bench.envs.testbed import Dataset
from decision_bench.priors import ACTIVATIONS
from decision_bench.specs import ProblemSpec


def _open_unit_interval(name: str, value: Any) -> float:
    number = check_positive(name, value)
    if not number < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return number


@dataclasses.dataclass(frozen=True)
class HMCConfig:
    """hmc defaults. Model: the prior family and architecture of the environments
    (the testbed's: a (50, 50) ReLU MLP). Sampler: 4 chains of 500 warm-up and
    500 sampling transitions of 32 leapfrog steps, every 5th kept: 400 members.
    """

    prior: str = "mlp"  # "mlp" | "logistic": the generative family of the problems
    hidden_sizes: tuple[int, ...] = (50, 50)  # the MLP prior's (ignored for "logistic")
    activation: str = "relu"  # the MLP prior's (ignored for "logistic")
    algorithm: str = "hmc"  # "hmc" (fixed trajectory) | "nuts"
    num_chains: int = 4
    num_warmup: int = 500  # window-adaptation transitions per chain
    num_samples: int = 100  # kept per chain: num_chains * num_samples members
    thinning: int = 5  # sampling transitions per kept draw
    num_integration_steps: int = 32  # leapfrog steps per HMC transition
    max_num_doublings: int = 8  # NUTS tree depth cap (at most 2**8 - 1 leapfrog steps)
    initial_step_size: float = 0.05  # where dual averaging starts
    target_acceptance_rate: float = 0.8  # Stan's default
    step_size_jitter: float = 0.5  # sampling step sizes uniform in the adapted one * (1 -/+ 0.5)
    num_probes: int = 8  # inputs whose predictive log-odds the diagnostics monitor
    batch_size: int = 100  # fit's (default) batch size: data collected in ceil(T / 100) updates
    regularization: str = "testbed"  # unused (exact Bayes needs no decay); a uniform interface

    def __post_init__(self):
        check_choice("prior", self.prior, PRIOR_FAMILIES)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("regularization", self.regularization, REGULARIZATION_MODES)
        common.validate_fields(
            self,
            {
                "hidden_sizes": check_sizes,
                "num_chains": common.at_least(1),
                "num_warmup": common.at_least(1),
                # split R-hat halves each chain; each half needs >= 2 draws
                "num_samples": common.at_least(4),
                "thinning": common.at_least(1),
                "num_integration_steps": common.at_least(1),
                "max_num_doublings": common.at_least(1),
                "initial_step_size": check_positive,
                "target_acceptance_rate": _open_unit_interval,
                "step_size_jitter": common.unit_interval_open,
                "num_probes": common.at_least(1),
                "batch_size": common.at_least(1),
            },
        )

    @property
    def num_members(self) -> int:
        return self.num_chains * self.num_samples


class HMCState(NamedTuple):
    members: Any  # the prior's params, every leaf with a leading [num_members] axis
    x: jax.Array  # [num_train, input_dim] f32: the training inputs collected from batches
    y: jax.Array  # [num_train] i32
    seen: jax.Array  # [num_train] bool: rows written so far
    step: jax.Array  # [] i32: updates done
    diagnostics: HMCDiagnostics


class HMCPosterior(NamedTuple):
    """What ``hmc_posterior`` returns: members (leading axis num_chains *
    num_samples, chain-major: reshape to [num_chains, num_samples, ...] for
    per-chain statistics) and their diagnostics."""

    members: Any
    diagnostics: HMCDiagnostics



def _coordinates(config: HMCConfig, input_dim: int, num_classes: int) -> Coordinates:
    return model_coordinates(config.prior, config.hidden_sizes, config.activation, input_dim, num_classes)


def _settings(config: HMCConfig, coords: Coordinates) -> SamplerSettings:
    return SamplerSettings(
        coords,
        config.algorithm,
        config.num_chains,
        config.num_warmup,
        config.num_samples,
        config.thinning,
        config.num_integration_steps,
        config.max_num_doublings,
        config.num_probes,
    )


# ---------------------------------------------------------------- direct use


@functools.partial(jax.jit, static_argnums=0)
def _posterior(
    settings: SamplerSettings, key: jax.Array, hyper: HMCHyper, x: jax.Array, y: jax.Array
) -> HMCPosterior:
    weight = jnp.ones((x.shape[0],), jnp.float32)
    return HMCPosterior(*run_chains(settings, key, hyper, x, y, weight))


def hmc_posterior(
    key: jax.Array, prior: Any, data: Dataset, config: HMCConfig | None = None
) -> HMCPosterior:
    """HMC draws from the posterior of ``prior`` (an MLPPrior or LogisticPrior
    instance, its own temperature) given ``data`` (x [T, d], y [T]; T may be 0).

    config: the sampler settings (None: the defaults); its model fields (prior,
    hidden_sizes, activation) must agree with ``prior`` when given.
    """
    require_blackjax()
    coords = coordinates_of_prior(prior)
    if config is None:
        config = HMCConfig(
            prior=coords.family,
            **({"hidden_sizes": coords.hidden_sizes, "activation": coords.activation}
               if coords.family == "mlp" else {}),
        )
    if config.prior != coords.family:
        raise ValueError(f"config.prior={config.prior!r} disagrees with the {coords.family!r} prior")
    if coords.family == "mlp":
        for field in ("hidden_sizes", "activation"):
            if getattr(config, field) != getattr(coords, field):
                raise ValueError(
                    f"config.{field}={getattr(config, field)!r} disagrees with the prior's "
                    f"{getattr(coords, field)!r}"
                )
    x = jnp.asarray(data.x, jnp.float32)
    y = jnp.asarray(data.y, jnp.int32)
    common.check_batch_dim(x, y, coords.input_dim, "hmc_posterior")
    hyper = as_hyper(
        HMCHyper,
        initial_step_size=config.initial_step_size,
        target_acceptance_rate=config.target_acceptance_rate,
        step_size_jitter=config.step_size_jitter,
        temperature=prior.temperature,
    )
    return _posterior(_settings(config, coords), key, hyper, x, y)


# ---------------------------------------------------------------- agent


def hyperparameters(spec: ProblemSpec, config: HMCConfig) -> HMCHyper:
    """The hyper leaves of an hmc agent for ``spec`` and ``config``."""
    return as_hyper(
        HMCHyper,
        initial_step_size=config.initial_step_size,
        target_acceptance_rate=config.target_acceptance_rate,
        step_size_jitter=config.step_size_jitter,
        temperature=spec.temperature,
    )


def collection_steps(num_train: int, batch_size: int) -> int:
    """Updates after which fit's stream has delivered every one of num_train
    positions in batches of batch_size: ceil(T / B), at least 1."""
    return max(1, -(-num_train // batch_size))


@functools.lru_cache(maxsize=None)
def _functions(settings: SamplerSettings, num_rows: int, batch_size: int):
    """hmc's functions for one static setting; the same objects for the same
    setting, so every hmc agent of that shape shares its compiled programs."""
    coords = settings.coords
    input_dim = coords.input_dim

    def init(hyper: HMCHyper, key: jax.Array) -> HMCState:
        prior = coords.prior(hyper.temperature)
        members = jax.vmap(prior.init)(jax.random.split(key, settings.num_members))
        return HMCState(
            members=members,
            x=jnp.zeros((num_rows, input_dim), jnp.float32),
            y=jnp.zeros((num_rows,), jnp.int32),
            seen=jnp.zeros((num_rows,), bool),
            step=jnp.zeros((), jnp.int32),
            diagnostics=initial_diagnostics(settings.num_quantities, settings.num_chains),
        )

    def update(hyper: HMCHyper, key: jax.Array, state: HMCState, batch: Batch) -> HMCState:
        common.check_batch_dim(batch.x, batch.y, input_dim, "hmc update")
        num_seen = jnp.asarray(batch.num_seen, jnp.float32)
        collected = state._replace(
            x=state.x.at[batch.index].set(batch.x.astype(jnp.float32), mode="drop"),
            y=state.y.at[batch.index].set(batch.y.astype(jnp.int32), mode="drop"),
            seen=state.seen.at[batch.index].set(True, mode="drop"),
            step=state.step + 1,
            diagnostics=state.diagnostics._replace(num_seen=num_seen),
        )
        if num_rows == 0:
            return collected
        # The update by which fit's stream has delivered every position (see
        # collection_steps); T is data, so every T of a padded bucket shares this.
        last = jnp.maximum(jnp.ceil(num_seen / batch_size).astype(jnp.int32), 1) - 1

        def run(s: HMCState) -> HMCState:
            members, diagnostics = run_chains(
                settings, key, hyper, s.x, s.y, s.seen.astype(jnp.float32)
            )
            return s._replace(members=members, diagnostics=diagnostics._replace(num_seen=num_seen))

        return jax.lax.cond(state.step == last, run, lambda s: s, collected)

    def member_logits(hyper: HMCHyper, state: HMCState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [num_members, n, C]: every kept draw."""
        common.check_input_dim(x, input_dim, "hmc member_logits")
        prior = coords.prior(hyper.temperature)
        return jax.vmap(prior.logits, (0, None))(state.members, x)

    def sample_logits(hyper: HMCHyper, key: jax.Array, state: HMCState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one kept draw, picked uniformly, for all n inputs."""
        common.check_input_dim(x, input_dim, "hmc sample_logits")
        i = jax.random.randint(key, (), 0, settings.num_members)
        member = jax.tree.map(lambda leaf: leaf[i], state.members)
        return coords.prior(hyper.temperature).logits(member, x)

    return init, update, sample_logits, member_logits


def make_hmc(spec: ProblemSpec, config: HMCConfig = HMCConfig()) -> Agent:
    """HMC agent for ``spec``. See the module docstring."""
    require_blackjax()
    coords = _coordinates(config, spec.input_dim, spec.num_classes)
    functions = _functions(_settings(config, coords), spec.num_train, config.batch_size)
    return bind(
        hyperparameters(spec, config),
        *functions,
        num_steps=collection_steps(spec.num_train, config.batch_size),
        name="hmc",
    )
