"""How far HMC's members can be trusted: the diagnostics record and its checks.

Monitored quantities: the log joint density (Stan's lp__) and the predictive
log-odds logit_c - logit_0 at ``num_probes`` inputs drawn from the prior's input
distribution, each with blackjax's rank-normalised split R-hat (Vehtari et al.
2021) and bulk effective sample size. Weight-space diagnostics would always
fail: a network's posterior is invariant to permuting hidden units, so chains
find equivalent modes that differ in every weight but not in the function.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# Thresholds of diagnostics_pass / diagnostic_problems.
MAX_RHAT = 1.1  # Gelman et al.'s classic bound; Vehtari et al. (2021) ask 1.01 of long runs
MIN_ESS = 100.0  # bulk ESS over all chains, for every monitored quantity
MAX_DIVERGENT_FRACTION = 0.01  # of the sampling transitions, over all chains


class HMCDiagnostics(NamedTuple):
    """One fit's diagnostics (any leaf may carry leading axes, e.g. seeds).

    Monitored quantities (Q = 1 + num_probes * (num_classes - 1)): the log joint
    density, then the log-odds logit_c - logit_0 at each probe input (probe-major).
    Before the chains run (``sampled`` False) the sampler fields are 0 (not NaN,
    so that ``params_are_finite`` holds for an unfitted or T = 0 state).
    """

    sampled: jax.Array  # [] bool: the chains ran; False: members are init's prior draws
    num_data: jax.Array  # [] f32: training rows in the likelihood the members were drawn under
    num_seen: jax.Array  # [] f32: training rows the agent was told of (T, or t in the bandit)
    rhat: jax.Array  # [Q] f32: rank-normalised split R-hat
    ess: jax.Array  # [Q] f32: bulk effective sample size over all chains
    acceptance_rate: jax.Array  # [num_chains] f32: mean acceptance probability while sampling
    step_size: jax.Array  # [num_chains] f32: the adapted step size
    integration_steps: jax.Array  # [num_chains] f32: mean leapfrog steps per transition
    num_divergent: jax.Array  # [num_chains] i32: divergent sampling transitions


def initial_diagnostics(num_quantities: int, num_chains: int) -> HMCDiagnostics:
    """The diagnostics of members no chain has produced yet."""
    # Zeros, not NaN: the state must stay finite (params_are_finite checks every
    # floating leaf); ``sampled`` says that nothing was computed yet.
    zeros_q = jnp.zeros((num_quantities,), jnp.float32)
    zeros_c = jnp.zeros((num_chains,), jnp.float32)
    return HMCDiagnostics(
        sampled=jnp.zeros((), bool),
        num_data=jnp.zeros((), jnp.float32),
        num_seen=jnp.zeros((), jnp.float32),
        rhat=zeros_q,
        ess=zeros_q,
        acceptance_rate=zeros_c,
        step_size=zeros_c,
        integration_steps=zeros_c,
        num_divergent=jnp.zeros((num_chains,), jnp.int32),
    )


def diagnostics_pass(
    diagnostics: HMCDiagnostics,
    max_rhat: float = MAX_RHAT,
    min_ess: float = MIN_ESS,
    max_divergent_fraction: float = MAX_DIVERGENT_FRACTION,
    num_transitions: int | None = None,
) -> jax.Array:
    """True where the members can be trusted; jittable, [...] bool over any
    leading axes (states stacked over seeds).

    Passes when the chains ran with max R-hat <= max_rhat, min bulk ESS >=
    min_ess, at most max_divergent_fraction of num_transitions (sampling
    transitions per chain, num_samples * thinning; None skips the divergence
    check) divergent, and the members condition on every row seen; or when no
    data were seen (members are exact prior draws). A NaN R-hat or ESS fails.
    """
    d = diagnostics
    ok = (
        (jnp.max(d.rhat, axis=-1) <= max_rhat)
        & (jnp.min(d.ess, axis=-1) >= min_ess)
        & (d.num_data >= d.num_seen)
    )
    if num_transitions is not None:
        total = num_transitions * d.num_divergent.shape[-1]
        ok = ok & (jnp.sum(d.num_divergent, axis=-1) <= max_divergent_fraction * total)
    return jnp.where(d.sampled, ok, d.num_seen == 0)


def diagnostic_problems(
    diagnostics: HMCDiagnostics,
    config: Any = None,
    max_rhat: float = MAX_RHAT,
    min_ess: float = MIN_ESS,
    max_divergent_fraction: float = MAX_DIVERGENT_FRACTION,
) -> list[str]:
    """Host-side: one line per failed check of one (unstacked) fit; [] if it passes.

    config: the HMCConfig of the run (its num_chains, num_samples and thinning),
    for the divergence check; None skips it.
    """
    d = jax.tree.map(np.asarray, diagnostics)
    if d.rhat.ndim != 1:
        raise ValueError(
            f"diagnostic_problems takes one fit's diagnostics (rhat [Q]), got rhat of shape "
            f"{d.rhat.shape}; use diagnostics_pass for stacked states"
        )
    if not bool(d.sampled):
        if float(d.num_seen) == 0:
            return []
        return [f"the chains never ran although {float(d.num_seen):g} training rows were seen"]
    problems = []
    rhat, ess = float(np.max(d.rhat)), float(np.min(d.ess))
    if not rhat <= max_rhat:
        problems.append(f"max R-hat {rhat:.3f} > {max_rhat} (quantity {int(np.nanargmax(d.rhat))})")
    if not ess >= min_ess:
        problems.append(f"min bulk ESS {ess:.1f} < {min_ess} (quantity {int(np.nanargmin(d.ess))})")
    if float(d.num_data) < float(d.num_seen):
        problems.append(
            f"the members condition on {float(d.num_data):g} of {float(d.num_seen):g} training rows"
        )
    if config is not None:
        total = config.num_samples * config.thinning * config.num_chains
        divergent = int(np.sum(d.num_divergent))
        if divergent > max_divergent_fraction * total:
            problems.append(f"{divergent} of {total} sampling transitions diverged")
    return problems
