"""Full-batch Hamiltonian Monte Carlo on the problem's own prior (blackjax): the
reference posterior the other agents approximate.

Model. The agent's model is the generative model of the environment family
itself (decision_bench/priors.py), so with exact inference its predictive
distribution is the Bayes posterior predictive and no agent can have a lower
expected d_KL:

- ``prior="mlp"`` (default): ``MLPPrior(input_dim, hidden_sizes, activation,
  num_classes)`` at the problem's temperature beta. Weights w = z / sqrt(fan_in)
  with z ~ N(0, 1) truncated to [-2, 2] (haiku's uncorrected convention, as the
  prior samples them); the first layer's bias b ~ N(0, 1 / input_dim),
  untruncated; every other bias is exactly 0 under the prior, so it is not a
  variable here either.
- ``prior="logistic"``: ``LogisticPrior``, phi ~ N(0, I_d) (two classes).

The likelihood is prod_i softmax(prior.logits(theta, x_i))[y_i] over the whole
training set, the logits being f(x) / beta exactly as the environment computes
them (``prior.logits`` of a prior whose temperature is the traced hyperparameter).

Truncation. HMC moves an unconstrained vector u. A truncated coordinate is
z = 2 tanh(u / 2), a smooth bijection from R onto (-2, 2), and its density in u
carries the log-Jacobian log dz/du = log sech^2(u / 2) = -2 log cosh(u / 2):

    log p(u) = -z^2 / 2 - 2 log cosh(u / 2) + const,   z = 2 tanh(u / 2),

so the push-forward of p(u) is exactly N(0, 1) restricted to (-2, 2): no
rejection, no reflection at a wall, and the boundary is never reached (the
truncated normal puts no mass on it). Near 0, z ~ u, so under the prior every
coordinate is O(1) and the identity is a sensible starting mass matrix; the tails
of p(u) are exponential (~exp(-|u|)), which the leapfrog integrator handles.
Untruncated Gaussian coordinates are sampled standardised (first-layer bias
b = u / sqrt(input_dim), logistic phi = u). Each chain starts at an exact prior
draw (``prior.init``) mapped back through the inverse bijection, so the chains
start over-dispersed, as R-hat assumes.

Sampler. Per chain: blackjax's window adaptation (Stan's schedule: step size by
dual averaging towards ``target_acceptance_rate`` from ``initial_step_size``,
diagonal inverse mass matrix from the slow windows) for ``num_warmup``
transitions, then ``num_samples * thinning`` transitions of which every
``thinning``-th is kept. Each sampling transition draws its step size uniformly
in step_size * (1 -/+ ``step_size_jitter``), independently of the state, so
every transition still leaves the posterior invariant; without it a fixed
trajectory length resonates with near-Gaussian directions (after the mass matrix
has made them all unit-scale, every one at once) and the chains mix the
variance badly (bulk ESS of the log density on the prior alone: ~200 of 1000
draws without jitter, ~450 with). ``num_chains`` chains are vmapped; the members
are the num_chains * num_samples kept draws, chain-major, enumerated with equal
weight by ``member_logits`` (so evaluation's "exact" method uses all of them)
and picked uniformly by ``sample_logits``.

HMC or NUTS. ``algorithm="hmc"`` (default) uses a fixed number of leapfrog steps
per transition (``num_integration_steps``); ``"nuts"`` builds trees up to
``2**max_num_doublings`` steps. HMC is the default because the chains are
vmapped: vmapped NUTS advances every chain in lock-step through the deepest
tree of any chain plus a while loop's bookkeeping, and its cost per transition
is not known in advance, whereas fixed-length HMC costs exactly
num_integration_steps gradients per transition and compiles to plain scans. On
the d = 2, T = 100 testbed problem (seed 0, 4 chains, 1000 warm-up, 100 kept of
1000 per chain) NUTS built trees of ~180 leapfrog steps per transition and
reached a bulk ESS of ~330 on the log density in 260 s; HMC with 16 steps,
~90-130 in 10-20 s; the defaults (32 steps, 500 warm-up, 500 sampling
transitions thinned by 5) reach ~190-300 in ~9 s: about eight times more
effective samples per gradient than NUTS. NUTS remains available for posteriors where a
fixed trajectory length mixes badly.

Diagnostics (``HMCDiagnostics``, in the state). On the log joint density
(Stan's lp__) and the predictive log-odds logit_c - logit_0 at ``num_probes``
inputs drawn from the prior's input distribution: blackjax's rank-normalised
split R-hat (``diagnostics.rhat``, Vehtari et al. 2021) and bulk effective
sample size (``diagnostics.ess_bulk``). Weight-space diagnostics would always
fail: the posterior of a network is invariant to permuting hidden units, so
chains find equivalent modes that differ in every weight but not in the
function. Also the per-chain acceptance rate, adapted step size, mean leapfrog
steps per transition and number of divergent transitions. ``diagnostics_pass``
(jittable, works on states stacked over seeds) and ``diagnostic_problems``
(host-side, one line per failed check) flag a fit whose max R-hat exceeds
``MAX_RHAT`` = 1.1, whose min bulk ESS is below ``MIN_ESS`` = 100, with more than
``MAX_DIVERGENT_FRACTION`` = 1% divergent transitions, or whose members do not
condition on every training row.

How ``fit`` drives it (agents/training.py is unchanged). HMC needs the full data
set, while ``fit`` feeds ``update`` minibatches of an epoch-shuffled stream of
positions. The state therefore holds a buffer of the training set
([num_train, d] and [num_train]); every update writes its batch into the buffer
at ``batch.index`` (the positions ``fit`` draws) and marks them seen, and the
update whose step is ceil(T / batch_size) - 1 (T = ``batch.num_seen``) runs the
chains on the rows seen. With fit's batch size (``batch_size``, default 100 as
in ``fit``) the stream has by then delivered every position exactly as it is, so
the chains see the whole data set with no duplicates and no weighting.
``agent.num_steps`` is ceil(T / batch_size): ``fit(agent, key, data)`` costs one
pass over the data plus one HMC run; later steps only rewrite the buffer. The
trigger depends only on the step counter and T, which vmapping over seeds or
data sets leaves unbatched, so ``lax.cond`` stays a branch and the chains run
once per seed. With T = 0 ``fit`` takes no step and ``init``'s members, which
are num_members independent draws of the prior, are the exact posterior. If
``fit`` is called with a smaller batch size or fewer steps, the chains
condition on the rows seen so far (or never run) and the diagnostics say so
(``num_data`` < ``num_seen``). Padding rows of a padded ``fit`` are never drawn,
so they are never seen and never enter the likelihood.

The bandit can build the agent (its ``update`` accepts replay batches and drops
positions beyond the buffer), but a one-shot sampler is not a sequential
learner: the chains run at the agent's first update (t = 1, so the trigger
ceil(t / batch_size) - 1 is step 0) on the rows of that batch, and not again
while updates outnumber t / batch_size; the diagnostics then report
num_data < num_seen. A sequential HMC agent (re-running the chains, warm-started,
every so many observations) is future work.

``hmc_posterior(key, prior, data, config)`` runs the same chains directly on a
data set for a prior instance (any temperature, "mlp" or "logistic").

Hyperparameters are data (agents/core.py): ``initial_step_size``,
``target_acceptance_rate``, ``step_size_jitter`` and the problem's temperature
are [] f32 leaves of ``HMCHyper``. Static, because they set shapes and loop
lengths: the prior family, hidden sizes, activation, input dimension, number of
classes and of training rows, algorithm, num_chains, num_warmup, num_samples,
thinning, num_integration_steps, max_num_doublings, num_probes and batch_size.

blackjax is an optional dependency (``pip install 'decision-bench[bayes]'``):
this module imports without it, and ``make_hmc`` / ``hmc_posterior`` raise an
ImportError naming the extra when it is missing.
"""

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.extras import require_extra
from decision_bench._src.validation import check_choice, check_positive, check_sizes
from decision_bench.agents import _bayes_common as common
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents.core import as_hyper, bind
from decision_bench.envs.testbed import Dataset
from decision_bench.priors import ACTIVATIONS, LogisticPrior, MLPPrior
from decision_bench.specs import ProblemSpec

PRIOR_FAMILIES = ("mlp", "logistic")
ALGORITHMS = ("hmc", "nuts")

# Thresholds of diagnostics_pass / diagnostic_problems.
MAX_RHAT = 1.1  # Gelman et al.'s classic bound; Vehtari et al. (2021) ask 1.01 of long runs
MIN_ESS = 100.0  # bulk ESS over all chains, for every monitored quantity
MAX_DIVERGENT_FRACTION = 0.01  # of the sampling transitions, over all chains


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

    def __post_init__(self):
        check_choice("prior", self.prior, PRIOR_FAMILIES)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_choice("activation", self.activation, ACTIVATIONS)
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


class HMCHyper(NamedTuple):
    """hmc's real-valued hyperparameters, [] f32 leaves (see agents/core.py)."""

    initial_step_size: jax.Array  # where the step-size adaptation starts
    target_acceptance_rate: jax.Array  # what the adaptation aims for
    step_size_jitter: jax.Array  # sampling step sizes are uniform in step_size * (1 -/+ jitter)
    temperature: jax.Array  # the problem's beta: logits are f(x) / beta


class HMCDiagnostics(NamedTuple):
    """How far the members can be trusted; see the module docstring.

    Monitored quantities (Q = 1 + num_probes * (num_classes - 1)): the log joint
    density, then the log-odds logit_c - logit_0 at each probe input (probe-major).
    Before the chains run (``sampled`` False) the sampler fields are 0 (not NaN,
    so that ``params_are_finite`` holds for an unfitted or T = 0 state).
    """

    sampled: jax.Array  # [] bool: the chains ran; False: members are init's prior draws
    num_data: jax.Array  # [] f32: training rows in the likelihood the members were drawn under
    num_seen: jax.Array  # [] f32: training rows the agent was told of (batch.num_seen, T)
    rhat: jax.Array  # [Q] f32: rank-normalised split R-hat
    ess: jax.Array  # [Q] f32: bulk effective sample size over all chains
    acceptance_rate: jax.Array  # [num_chains] f32: mean acceptance probability while sampling
    step_size: jax.Array  # [num_chains] f32: the adapted step size
    integration_steps: jax.Array  # [num_chains] f32: mean leapfrog steps per transition
    num_divergent: jax.Array  # [num_chains] i32: divergent sampling transitions


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


# ---------------------------------------------------------------- coordinates


def _log_cosh(v: jax.Array) -> jax.Array:
    """log cosh(v), stable for large |v|."""
    a = jnp.abs(v)
    return a + jnp.log1p(jnp.exp(-2.0 * a)) - math.log(2.0)


@dataclasses.dataclass(frozen=True)
class _Coordinates:
    """The map between a prior's params and HMC's unconstrained vector u [dim].

    Static: built from the prior's shape fields only; the temperature is passed
    to ``prior`` when tracing.
    """

    family: str
    input_dim: int
    hidden_sizes: tuple[int, ...]
    activation: str
    num_classes: int

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        return (self.input_dim, *self.hidden_sizes, self.num_classes)

    @functools.cached_property
    def blocks(self) -> tuple[tuple[str, tuple[int, ...], float, bool], ...]:
        """(name, shape, scale, truncated) per block of u, in order. The MLP's
        weights of layer i are ``w{i}`` (scale 1/sqrt(fan_in), truncated), its
        first bias ``b0`` (scale 1/sqrt(input_dim), Gaussian)."""
        if self.family == "logistic":
            return (("phi", (self.input_dim,), 1.0, False),)
        sizes = self.layer_sizes
        blocks = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            blocks.append((f"w{i}", (fan_in, fan_out), 1.0 / math.sqrt(fan_in), True))
            if i == 0:
                blocks.append(("b0", (fan_out,), 1.0 / math.sqrt(self.input_dim), False))
        return tuple(blocks)

    @property
    def dim(self) -> int:
        return sum(math.prod(shape) for _, shape, _, _ in self.blocks)

    @functools.cached_property
    def truncated_mask(self) -> np.ndarray:
        """[dim] bool: True where the coordinate is a truncated-normal one."""
        return np.concatenate(
            [np.full(math.prod(shape), trunc) for _, shape, _, trunc in self.blocks]
        )

    def prior(self, temperature: Any) -> Any:
        """The prior with this shape at ``temperature`` (may be traced)."""
        if self.family == "logistic":
            template = LogisticPrior(self.input_dim)
        else:
            template = MLPPrior(
                self.input_dim, self.hidden_sizes, self.activation, self.num_classes
            )
        # Rebuilt from its one leaf: the checks of __init__ would need a concrete value.
        return jax.tree.unflatten(jax.tree.structure(template), [temperature])

    def _split(self, u: jax.Array) -> dict[str, jax.Array]:
        parts, offset = {}, 0
        for name, shape, _, _ in self.blocks:
            size = math.prod(shape)
            parts[name] = u[offset : offset + size].reshape(shape)
            offset += size
        return parts

    def to_params(self, u: jax.Array) -> Any:
        """u [dim] -> the prior's params."""
        raw = self._split(u)
        parts = {}
        for name, _, scale, truncated in self.blocks:
            parts[name] = scale * (2.0 * jnp.tanh(0.5 * raw[name]) if truncated else raw[name])
        if self.family == "logistic":
            return {"phi": parts["phi"]}
        layers = []
        for i, fan_out in enumerate(self.layer_sizes[1:]):
            bias = parts["b0"] if i == 0 else jnp.zeros((fan_out,), jnp.float32)
            layers.append({"w": parts[f"w{i}"], "b": bias})
        return tuple(layers)

    def from_params(self, params: Any) -> jax.Array:
        """The prior's params -> u [dim] (inverse of ``to_params``; the biases the
        prior fixes at 0 are dropped)."""
        if self.family == "logistic":
            values = {"phi": params["phi"]}
        else:
            values = {f"w{i}": layer["w"] for i, layer in enumerate(params)}
            values["b0"] = params[0]["b"]
        pieces = []
        for name, _, scale, truncated in self.blocks:
            z = values[name] / scale
            if truncated:
                # f32 rounding can put |z| a hair above 2; keep artanh finite.
                z = jnp.clip(z, -2.0 + 1e-5, 2.0 - 1e-5)
                z = 2.0 * jnp.arctanh(0.5 * z)
            pieces.append(z.reshape(-1))
        return jnp.concatenate(pieces).astype(jnp.float32)

    def log_prior(self, u: jax.Array) -> jax.Array:
        """log p(u) up to a constant, log-Jacobian included. Returns []."""
        half = 0.5 * u
        z = 2.0 * jnp.tanh(half)
        truncated = -0.5 * z**2 - 2.0 * _log_cosh(half)
        gaussian = -0.5 * u**2
        return jnp.sum(jnp.where(self.truncated_mask, truncated, gaussian))


def _coordinates_of_prior(prior: Any) -> _Coordinates:
    if isinstance(prior, MLPPrior):
        return _Coordinates(
            "mlp", prior.input_dim, tuple(prior.hidden_sizes), prior.activation, prior.num_classes
        )
    if isinstance(prior, LogisticPrior):
        return _Coordinates("logistic", prior.input_dim, (), "relu", 2)
    raise ValueError(
        f"prior must be an MLPPrior or a LogisticPrior, got {type(prior).__name__}"
    )


def _coordinates(config: HMCConfig, input_dim: int, num_classes: int) -> _Coordinates:
    if config.prior == "logistic":
        if num_classes != 2:
            raise ValueError(f"prior='logistic' needs num_classes == 2, got {num_classes}")
        return _Coordinates("logistic", input_dim, (), "relu", 2)
    return _Coordinates(
        "mlp", input_dim, tuple(config.hidden_sizes), config.activation, num_classes
    )


# ---------------------------------------------------------------- sampler


@dataclasses.dataclass(frozen=True)
class _Settings:
    """Everything static about one sampler run."""

    coords: _Coordinates
    algorithm: str
    num_chains: int
    num_warmup: int
    num_samples: int
    thinning: int
    num_integration_steps: int
    max_num_doublings: int
    num_probes: int

    @property
    def num_members(self) -> int:
        return self.num_chains * self.num_samples

    @property
    def num_quantities(self) -> int:
        return 1 + self.num_probes * (self.coords.num_classes - 1)


def _settings(config: HMCConfig, coords: _Coordinates) -> _Settings:
    return _Settings(
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


def _require_blackjax() -> None:
    require_extra("bayes", "agent 'hmc'")


def _initial_diagnostics(settings: _Settings) -> HMCDiagnostics:
    # Zeros, not NaN: the state must stay finite (params_are_finite checks every
    # floating leaf); ``sampled`` says that nothing was computed yet.
    zeros_q = jnp.zeros((settings.num_quantities,), jnp.float32)
    zeros_c = jnp.zeros((settings.num_chains,), jnp.float32)
    return HMCDiagnostics(
        sampled=jnp.zeros((), bool),
        num_data=jnp.zeros((), jnp.float32),
        num_seen=jnp.zeros((), jnp.float32),
        rhat=zeros_q,
        ess=zeros_q,
        acceptance_rate=zeros_c,
        step_size=zeros_c,
        integration_steps=zeros_c,
        num_divergent=jnp.zeros((settings.num_chains,), jnp.int32),
    )


def _log_likelihood(
    prior: Any, params: Any, x: jax.Array, y: jax.Array, weight: jax.Array
) -> jax.Array:
    """sum_i weight_i log softmax(prior.logits(params, x_i))[y_i]. Returns []."""
    log_p = jax.nn.log_softmax(prior.logits(params, x), axis=-1)
    picked = jnp.take_along_axis(log_p, y[:, None].astype(jnp.int32), axis=-1)[:, 0]
    return jnp.sum(weight * picked)


def _run_chains(
    settings: _Settings,
    key: jax.Array,
    hyper: HMCHyper,
    x: jax.Array,
    y: jax.Array,
    weight: jax.Array,
) -> tuple[Any, HMCDiagnostics]:
    """The chains on data (x [n, d], y [n]) with per-row likelihood weights
    (0 or 1: rows to leave out). Returns (members, diagnostics); traceable."""
    import blackjax
    from blackjax.adaptation.base import get_filter_adapt_info_fn

    coords = settings.coords
    prior = coords.prior(hyper.temperature)
    num_chains = settings.num_chains

    def log_density(u: jax.Array) -> jax.Array:
        return coords.log_prior(u) + _log_likelihood(prior, coords.to_params(u), x, y, weight)

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


# ---------------------------------------------------------------- diagnostics


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
    config: HMCConfig | None = None,
    max_rhat: float = MAX_RHAT,
    min_ess: float = MIN_ESS,
    max_divergent_fraction: float = MAX_DIVERGENT_FRACTION,
) -> list[str]:
    """Host-side: one line per failed check of one (unstacked) fit; [] if it passes.

    config: the HMCConfig of the run, for the divergence check (None skips it).
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
        return [
            f"the chains never ran although {float(d.num_seen):g} training rows were seen "
            "(fit took too few steps for its batch size)"
        ]
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


# ---------------------------------------------------------------- direct use


@functools.partial(jax.jit, static_argnums=0)
def _posterior(
    settings: _Settings, key: jax.Array, hyper: HMCHyper, x: jax.Array, y: jax.Array
) -> HMCPosterior:
    weight = jnp.ones((x.shape[0],), jnp.float32)
    return HMCPosterior(*_run_chains(settings, key, hyper, x, y, weight))


def hmc_posterior(
    key: jax.Array, prior: Any, data: Dataset, config: HMCConfig | None = None
) -> HMCPosterior:
    """HMC draws from the posterior of ``prior`` (an MLPPrior or LogisticPrior
    instance, its own temperature) given ``data`` (x [T, d], y [T]; T may be 0).

    config: the sampler settings (None: the defaults); its model fields (prior,
    hidden_sizes, activation) must agree with ``prior`` when given.
    """
    _require_blackjax()
    coords = _coordinates_of_prior(prior)
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
def _functions(settings: _Settings, num_rows: int, batch_size: int):
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
            diagnostics=_initial_diagnostics(settings),
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
            members, diagnostics = _run_chains(
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
    _require_blackjax()
    coords = _coordinates(config, spec.input_dim, spec.num_classes)
    functions = _functions(_settings(config, coords), spec.num_train, config.batch_size)
    return bind(
        hyperparameters(spec, config),
        *functions,
        num_steps=collection_steps(spec.num_train, config.batch_size),
        name="hmc",
    )
