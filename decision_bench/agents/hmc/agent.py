"""The registered hmc agent and direct posterior sampling on a data set.

The agent's members are ``num_chains * num_samples`` kept draws of the chains
(sampler.py) on the problem's own prior, chain-major; ``member_logits``
enumerates them with equal weight and ``sample_logits`` picks one uniformly, for
all inputs at once. Its state carries the chains' diagnostics (diagnostics.py),
and ``agent.diagnose(state)`` says whether they pass.

Fitting: ``fit`` hands the agent the whole training set (``fit_data``; no
update steps), and the chains run once on it, with no duplicates and no
weighting; padding rows of a padded fit are left out of the likelihood. With T
= 0 nothing runs and ``init``'s members, independent draws of the prior, are the
exact posterior. ``update`` (the bandit's, ``update_mode="online"``) stores each
new observation at its position and reruns the chains on every row stored: the
posterior given all observations so far, at the cost of a full run per step.

Static: the prior family, hidden sizes, activation, input dimension, number of
classes and of training rows, algorithm, num_chains, num_warmup, num_samples,
thinning, num_integration_steps, max_num_doublings and num_probes.
Data (``HMCHyper``): initial_step_size, target_acceptance_rate,
step_size_jitter and the problem's temperature.
"""

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_choice, check_positive, check_sizes
from decision_bench.agents._src import checks
from decision_bench.agents import data_buffer
from decision_bench.agents.data_buffer import DataBuffer
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.core import as_hyper, bind
from decision_bench.agents.hmc.coordinates import (
    PRIOR_FAMILIES,
    Coordinates,
    coordinates_of_prior,
    model_coordinates,
)
from decision_bench.agents.hmc.diagnostics import HMCDiagnostics, diagnostics_pass, initial_diagnostics
from decision_bench.agents.hmc.sampler import (
    ALGORITHMS,
    HMCHyper,
    SamplerSettings,
    require_blackjax,
    run_chains,
)
from decision_bench.agents.entry import AgentEntry
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
    batch_size: int = 100  # unused (fit hands hmc the whole data set); accepted so stored configs load

    def __post_init__(self):
        check_choice("prior", self.prior, PRIOR_FAMILIES)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_choice("activation", self.activation, ACTIVATIONS)
        checks.validate_fields(
            self,
            {
                "hidden_sizes": check_sizes,
                "num_chains": checks.at_least(1),
                "num_warmup": checks.at_least(1),
                # split R-hat halves each chain; each half needs >= 2 draws
                "num_samples": checks.at_least(4),
                "thinning": checks.at_least(1),
                "num_integration_steps": checks.at_least(1),
                "max_num_doublings": checks.at_least(1),
                "initial_step_size": check_positive,
                "target_acceptance_rate": _open_unit_interval,
                "step_size_jitter": checks.unit_interval_open,
                "num_probes": checks.at_least(1),
                "batch_size": checks.at_least(1),
            },
        )

    @property
    def num_members(self) -> int:
        return self.num_chains * self.num_samples


class HMCState(NamedTuple):
    members: Any  # the prior's params, every leaf with a leading [num_members] axis
    data: DataBuffer  # the training rows the members condition on ([num_train] rows)
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


def _hyper(config: HMCConfig, temperature: Any) -> HMCHyper:
    """HMCHyper's leaves: the config's fields of those names and the temperature."""
    fields = {name: getattr(config, name) for name in HMCHyper._fields if name != "temperature"}
    return as_hyper(HMCHyper, temperature=temperature, **fields)


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
    checks.check_batch_dim(x, y, coords.input_dim, "hmc_posterior")
    return _posterior(_settings(config, coords), key, _hyper(config, prior.temperature), x, y)


# ---------------------------------------------------------------- agent


def hyperparameters(spec: ProblemSpec, config: HMCConfig) -> HMCHyper:
    """The hyper leaves of an hmc agent for ``spec`` and ``config``."""
    return _hyper(config, spec.temperature)


@functools.lru_cache(maxsize=None)
def _functions(settings: SamplerSettings, num_rows: int):
    """hmc's functions for one static setting; the same objects for the same
    setting, so every hmc agent of that shape shares its compiled programs."""
    coords = settings.coords
    input_dim = coords.input_dim

    def init(hyper: HMCHyper, key: jax.Array) -> HMCState:
        prior = coords.prior(hyper.temperature)
        members = jax.vmap(prior.init)(jax.random.split(key, settings.num_members))
        return HMCState(
            members=members,
            data=data_buffer.empty(num_rows, input_dim),
            diagnostics=initial_diagnostics(settings.num_quantities, settings.num_chains),
        )

    def resample(hyper: HMCHyper, key: jax.Array, data: DataBuffer, num_seen: jax.Array) -> HMCState:
        """The chains on every row stored in ``data``."""
        members, diagnostics = run_chains(settings, key, hyper, data.x, data.y, data.seen.astype(jnp.float32))
        num_seen = jnp.asarray(num_seen, jnp.float32)
        return HMCState(members=members, data=data, diagnostics=diagnostics._replace(num_seen=num_seen))

    def update(hyper: HMCHyper, key: jax.Array, state: HMCState, batch: Batch) -> HMCState:
        """Stores the batch's examples at their positions and reruns the chains
        on every row stored (a sequential use: each update costs a full run)."""
        checks.check_batch_dim(batch.x, batch.y, input_dim, "hmc update")
        return resample(hyper, key, data_buffer.write(state.data, batch), batch.num_seen)

    def fit_data(hyper: HMCHyper, key: jax.Array, state: HMCState, data: Dataset, num_train: jax.Array) -> HMCState:
        """The chains on the first num_train rows of data (x [rows, d], y [rows])."""
        checks.check_batch_dim(data.x, data.y, input_dim, "hmc fit_data")
        return resample(hyper, key, data_buffer.from_dataset(num_rows, data, num_train), num_train)

    def member_logits(hyper: HMCHyper, state: HMCState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [num_members, n, C]: every kept draw."""
        checks.check_input_dim(x, input_dim, "hmc member_logits")
        prior = coords.prior(hyper.temperature)
        return jax.vmap(prior.logits, (0, None))(state.members, x)

    def sample_logits(hyper: HMCHyper, key: jax.Array, state: HMCState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one kept draw, picked uniformly, for all n inputs."""
        checks.check_input_dim(x, input_dim, "hmc sample_logits")
        i = jax.random.randint(key, (), 0, settings.num_members)
        member = jax.tree.map(lambda leaf: leaf[i], state.members)
        return coords.prior(hyper.temperature).logits(member, x)

    def diagnose(hyper: HMCHyper, state: HMCState) -> jax.Array:
        """[] bool: the state's diagnostics pass (``diagnostics_pass``, divergences included)."""
        del hyper
        return diagnostics_pass(state.diagnostics, num_transitions=settings.num_samples * settings.thinning)

    return init, update, sample_logits, member_logits, fit_data, diagnose


def make_hmc(spec: ProblemSpec, config: HMCConfig = HMCConfig()) -> Agent:
    """HMC agent for ``spec``. See the module docstring."""
    require_blackjax()
    coords = _coordinates(config, spec.input_dim, spec.num_classes)
    *functions, fit_data, diagnose = _functions(_settings(config, coords), spec.num_train)
    return bind(
        hyperparameters(spec, config),
        *functions,
        fit_data=fit_data,
        diagnose=diagnose,
        num_steps=0,
        name="hmc",
        update_mode="online",
    )


# Full-batch HMC on the problem's own prior (needs the `bayes` extra: blackjax).
ENTRIES = (AgentEntry("hmc", HMCConfig, make_hmc, colour="#17becf"),)
