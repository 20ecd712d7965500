"""Full-batch HMC chains on a prior's posterior (blackjax), with their diagnostics.

Per chain: blackjax's window adaptation (Stan's schedule: step size by dual
averaging towards ``target_acceptance_rate`` from ``initial_step_size``,
diagonal inverse mass matrix from the slow windows) for ``num_warmup``
transitions, then ``num_samples * thinning`` transitions of which every
``thinning``-th is kept. Each sampling transition draws its step size uniformly
in step_size * (1 -/+ ``step_size_jitter``), independently of the state, so every
transition still leaves the posterior invariant while a fixed trajectory length
no longer resonates with near-Gaussian directions (which the adapted mass matrix
makes all unit-scale at once). ``num_chains`` chains are vmapped, each started at
an exact prior draw mapped through the inverse bijection (over-dispersed, as
R-hat assumes).

``algorithm="hmc"`` takes ``num_integration_steps`` leapfrog steps per
transition; ``"nuts"`` builds trees of up to ``2**max_num_doublings`` steps.
Fixed-length HMC suits vmapped chains: vmapped NUTS advances every chain through
the deepest tree of any chain, at a cost per transition not known in advance
(bench/hmc.py compares them).

The likelihood is prod_i softmax(prior.logits(theta, x_i))[y_i] with per-row
weights (0 leaves a row out), the logits being f(x) / beta exactly as the
environment computes them.

blackjax is imported when the chains are traced, so this module imports
without it; ``require_blackjax`` names the extra to install.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.extras import require_extra
from decision_bench.agents.hmc.coordinates import Coordinates
from decision_bench.agents.hmc.diagnostics import HMCDiagnostics

ALGORITHMS = ("hmc", "nuts")


class HMCHyper(NamedTuple):
    """hmc's real-valued hyperparameters, [] f32 leaves (see agents/core.py)."""

    initial_step_size: jax.Array  # where the step-size adaptation starts
    target_acceptance_rate: jax.Array  # what the adaptation aims for
    step_size_jitter: jax.Array  # sampling step sizes are uniform in step_size * (1 -/+ jitter)
    temperature: jax.Array  # the problem's beta: logits are f(x) / beta


@dataclasses.dataclass(frozen=True)
class SamplerSettings:
    """Everything static about one sampler run (shapes and loop lengths)."""

    coords: Coordinates
    algorithm: str  # one of ALGORITHMS
    num_chains: int
    num_warmup: int
    num_samples: int  # kept per chain
    thinning: int
    num_integration_steps: int  # "hmc" only
    max_num_doublings: int  # "nuts" only
    num_probes: int

    @property
    def num_members(self) -> int:
        return self.num_chains * self.num_samples

    @property
    def num_quantities(self) -> int:
        return 1 + self.num_probes * (self.coords.num_classes - 1)


def require_blackjax() -> None:
    """Raises ImportError naming the `bayes` extra when blackjax is missing."""
    require_extra("bayes", "agent 'hmc'")


def log_likelihood(
    prior: Any, params: Any, x: jax.Array, y: jax.Array, weight: jax.Array
) -> jax.Array:
    """sum_i weight_i log softmax(prior.logits(params, x_i))[y_i]. Returns []."""
    log_p = jax.nn.log_softmax(prior.logits(params, x), axis=-1)
    picked = jnp.take_along_axis(log_p, y[:, None].astype(jnp.int32), axis=-1)[:, 0]
    return jnp.sum(weight * picked)


def run_chains(
    settings: SamplerSettings,
    key: jax.Array,
    hyper: HMCHyper,
    x: jax.Array,
    y: jax.Array,
    weight: jax.Array,
) -> tuple[Any, HMCDiagnostics]:
    """The chains on data (x [n, d], y [n]) with per-row likelihood weights
    weight [n] (0 or 1: rows to leave out). Returns (members, diagnostics): the
    members are the prior's params with a leading [num_chains * num_samples]
    axis, chain-major. Traceable."""
    import blackjax
    from blackjax.adaptation.base import get_filter_adapt_info_fn

    coords = settings.coords
    prior = coords.prior(hyper.temperature)
    num_chains = settings.num_chains

    def log_density(u: jax.Array) -> jax.Array:
        return coords.log_prior(u) + log_likelihood(prior, coords.to_params(u), x, y, weight)

    if settings.algorithm == "hmc":
        algorithm, extra = blackjax.hmc, {"num_integration_steps": settings.num_integration_steps}
    else:
        algorithm, extra = blackjax.nuts, {"max_num_doublings": settings.max_num_doublings}

    k_init, k_warmup, k_sample, k_probe = jax.random.split(key, 4)
    starts = jax.vmap(lambda k: coords.from_params(prior.init(k)))(
        jax.random.split(k_init, num_chains)
    )

    warmup = blackjax.window_adaptation(
        algorithm,
        log_density,
        initial_step_size=hyper.initial_step_size,
        target_acceptance_rate=hyper.target_acceptance_rate,
        adaptation_info_fn=get_filter_adapt_info_fn(),  # keep no per-step record
        **extra,
    )

    def adapt(k: jax.Array, u: jax.Array):
        (state, parameters), _ = warmup.run(k, u, num_steps=settings.num_warmup)
        return state, parameters["step_size"], parameters["inverse_mass_matrix"]

    states, step_sizes, inverse_masses = jax.vmap(adapt)(
        jax.random.split(k_warmup, num_chains), starts
    )

    def sample_chain(k, state, step_size, inverse_mass):
        def transition(state, k):
            k_jitter, k_step = jax.random.split(k)
            # A fresh step size per transition, independent of the state (so each
            # transition still leaves the posterior invariant): breaks the
            # resonance of fixed-length trajectories with near-Gaussian directions.
            jitter = jax.random.uniform(k_jitter, (), jnp.float32, -1.0, 1.0)
            kernel = algorithm(
                log_density,
                step_size=step_size * (1.0 + hyper.step_size_jitter * jitter),
                inverse_mass_matrix=inverse_mass,
                **extra,
            )
            state, info = kernel.step(k_step, state)
            return state, (info.acceptance_rate, info.is_divergent, info.num_integration_steps)

        def kept(state, k):
            state, (accept, divergent, steps) = jax.lax.scan(
                transition, state, jax.random.split(k, settings.thinning)
            )
            return state, (state.position, accept.mean(), divergent.sum(), steps.mean())

        _, (positions, accept, divergent, steps) = jax.lax.scan(
            kept, state, jax.random.split(k, settings.num_samples)
        )
        return positions, accept.mean(), divergent.sum(), steps.astype(jnp.float32).mean()

    positions, accept, divergent, steps = jax.vmap(sample_chain)(
        jax.random.split(k_sample, num_chains), states, step_sizes, inverse_masses
    )  # positions [num_chains, num_samples, dim]

    probes = prior.sample_inputs(k_probe, settings.num_probes)

    def monitored(u: jax.Array) -> jax.Array:
        logits = prior.logits(coords.to_params(u), probes)
        log_odds = (logits[:, 1:] - logits[:, :1]).reshape(-1)
        return jnp.concatenate([log_density(u)[None], log_odds])

    quantities = jax.vmap(jax.vmap(monitored))(positions)  # [num_chains, num_samples, Q]
    # A quantity that no draw changes (a probe where every sampled ReLU network is
    # dead) has R-hat 0/0 and ESS 0 in blackjax; it is trivially converged.
    constant = jnp.all(quantities == quantities[:1, :1], axis=(0, 1))
    rhat = jnp.where(constant, 1.0, blackjax.diagnostics.rhat(quantities))
    ess = jnp.where(constant, settings.num_members, blackjax.diagnostics.ess_bulk(quantities))
    members = jax.vmap(coords.to_params)(positions.reshape(settings.num_members, coords.dim))
    diagnostics = HMCDiagnostics(
        sampled=jnp.ones((), bool),
        num_data=jnp.sum(weight).astype(jnp.float32),
        num_seen=jnp.sum(weight).astype(jnp.float32),
        rhat=rhat.astype(jnp.float32),
        ess=ess.astype(jnp.float32),
        acceptance_rate=accept.astype(jnp.float32),
        step_size=step_sizes.astype(jnp.float32),
        integration_steps=steps,
        num_divergent=divergent.astype(jnp.int32),
    )
    return members, diagnostics
