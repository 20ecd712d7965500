"""The testbed runner: fit every agent on every problem of a sweep and evaluate it.

For each (agent, setting) all seeds run as ONE compiled, vmapped computation:
environments are sampled with ``jax.vmap(sample_environment)``, agents fitted
with ``jax.vmap(fit)`` and evaluated with a vmapped ``tau_sample_log_likelihoods`` on
every test design (tau, kappa) of the sweep, plus accuracy and ECE. An agent is
fitted once per (setting, seed) and that fit is scored on all designs (the
agent cannot see tau). Compile seconds are read from JAX's compilation events
(``_src.compile_clock``), apart from run seconds.

Keys (decision_bench._src.keys). Seed s of setting (d, T, beta) has the problem
key ``pk = problem_key(s, d, T, beta)``: its environment and training data are
``sample_environment(pk, ...)``, exactly those of ``make_testbed_problem(...,
seed=s)``, so every setting has its own environments, as in the reference; the
fit key is ``fold_in(pk, FIT_TAG)``; design i is scored by ``estimate_kl``'s
core with ``fold_in(fold_in(fold_in(pk, EVAL_TAG), DESIGN_TAG), i)``, so a row
can be reproduced one problem at a time (tests/evaluation/test_evaluation_runner.py).

Rows: one per (agent, setting, tau, kappa, seed); a setting is (prior,
activation, hidden_sizes, input_dim, num_train, temperature). For prior "mlp",
``activation`` is the generative network's activation name (e.g. "relu") and
``hidden_sizes`` its hidden widths joined by "-" (e.g. "50-50"; see
``sweeps.hidden_sizes_label``); for the other priors, which have no such
network, both are missing (None). The family does not enter the problem key:
settings differing only in it share their keys (paired environments).
Timing columns are amortised: a group's wall seconds divided by its rows, so
that a column's sum is the total time spent.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from decision_bench._src.compile_clock import compile_clock
from decision_bench._src.devices import pad_seeds, padded_seed_count, shard_seeds
from decision_bench._src.keys import (
    CLASSIFICATION_KEY_TAG,
    DESIGN_TAG,
    EVAL_TAG,
    FIDELITY_TAG,
    FIT_TAG,
    REFERENCE_FIT_TAG,
    problem_key,
)
from decision_bench._src.validation import check_choice, check_int, check_seed_list
from decision_bench._src.versions import environment_info
from decision_bench.agents import Agent, fit, make, names, params_are_finite
from decision_bench.agents import registry as agent_registry
from decision_bench.agents.contract import check_agent_contract, check_state_fits
from decision_bench.agents.host_agent import is_host_agent
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.agents.training import bucket_size
from decision_bench.envs.testbed import sample_environment
from decision_bench.evaluation.kl import (
    METHODS,
    EvalConfig,
    FittedAgent,
    resolve_method,
    summarize,
    tau_sample_log_likelihoods,
)
from decision_bench.evaluation.fidelity import (
    FidelityConfig,
    fidelity_per_sample,
    resolve_label_method,
    summarize_fidelity,
)
from decision_bench.evaluation.likelihood import DEFAULT_MAX_ROWS
from decision_bench.evaluation.metrics import NUM_BINS, NUM_SAMPLES, classification_metrics
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, get_sweep, hidden_sizes_label
from decision_bench.specs import ProblemSpec

COLUMNS = (
    "agent",
    "prior",
    "activation",
    "hidden_sizes",
    "input_dim",
    "num_train",
    "temperature",
    "tau",
    "kappa",
    "seed",
    "kl",
    "kl_stderr",
    "accuracy",
    "ece",
    "fraction_finite",
    "params_finite",
    "fit_seconds",
    "eval_seconds",
    "compile_seconds",
    "method",
    "num_models",
    "num_test",
)

# Appended to COLUMNS when run_testbed is given a reference (see _add_fidelity):
# the agent's distance to the reference agent's posterior on the same problem.
FIDELITY_COLUMNS = (
    "reference",
    "agreement",
    "tv",
    "tv_joint",
    "tv_joint_stderr",
    "kl_to_reference",
    "kl_to_reference_stderr",
    "reference_converged",
    "fidelity_seconds",
)
# The reference models the environment family itself: these config fields (where
# its config has them) are taken from the setting unless overridden.
_MODEL_FIELDS = ("prior", "activation", "hidden_sizes")
_REFERENCE_CACHE_SIZE = 32

def _agent_factories(
    agent_names: str | Sequence[str] | Mapping[str, Callable[..., Agent] | None],
) -> dict[str, Callable[..., Agent] | None]:
    """{name: factory or None (the registry)} from "a,b", [names] or {name: factory}."""
    if isinstance(agent_names, Mapping):
        items = dict(agent_names)
        for name, factory in items.items():
            if factory is None:
                check_choice("agent_names", name, names())
                check_inputs_fit(name, "the testbed", one_hot=False)
            elif not callable(factory):
                raise ValueError(
                    f"agent_names[{name!r}] must be None (registry) or a callable "
                    f"make_agent(spec, **overrides) -> Agent, got {type(factory).__name__}"
                )
        if not items:
            raise ValueError("agent_names must name at least one agent, got an empty mapping")
        return items
    listed = agent_names.split(",") if isinstance(agent_names, str) else list(agent_names)
    listed = [name.strip() for name in listed if name.strip()]
    if not listed:
        raise ValueError(f"agent_names must name at least one agent, got {agent_names!r}")
    for name in listed:
        check_choice("agent_names", name, names())
        check_inputs_fit(name, "the testbed", one_hot=False)
    return dict.fromkeys(listed)  # drop repeats, keep order


def _seed_list(seeds: int | Iterable[int] | None, sweep: Sweep) -> tuple[int, ...]:
    return tuple(range(sweep.num_seeds)) if seeds is None else check_seed_list(seeds)


def _timed(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, float, float]:
    """(result, seconds computing, seconds compiling) of a jitted call.

    The runner calls ordinary jitted functions, so JAX's own cache (keyed on the
    agent's functions and the shapes) decides what compiles; the clock says how
    much of the call's wall time was compilation."""
    with compile_clock() as clock:
        start = time.perf_counter()
        out = jax.block_until_ready(fn(*args, **kwargs))
        wall = time.perf_counter() - start
    return out, max(wall - clock.seconds, 0.0), clock.seconds


def problem_keys(setting: TestbedSetting, seeds: Sequence[int]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(env, fit, eval) keys [S] of the seeds of a setting (the module docstring's
    derivation): ``problem_key`` of each seed, then FIT_TAG and EVAL_TAG folded in."""
    env_keys = jnp.stack(
        [problem_key(s, setting.input_dim, setting.num_train, setting.temperature) for s in seeds]
    )
    fit_keys = jax.vmap(lambda k: jax.random.fold_in(k, FIT_TAG))(env_keys)
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, EVAL_TAG))(env_keys)
    return env_keys, fit_keys, eval_keys


def design_kls(
    per_design: Sequence[tuple[Any, Any]], configs: Sequence[EvalConfig], seeds: Sequence[int]
) -> Iterator[tuple[EvalConfig, int, int, float, float, float]]:
    """(design config, seed index, seed, kl, kl_stderr, fraction_finite) for every design
    and seed, design-major, from ``evaluate_seeds``' per-design (env, agent)
    log-likelihoods [S, ...]: the kl columns of a testbed row."""
    for d, cfg in enumerate(configs):
        env_ll, agent_ll = (np.asarray(a) for a in per_design[d])
        for s, seed in enumerate(seeds):
            kl, stderr, fraction = summarize(env_ll[s] - agent_ll[s], strict=False)
            yield cfg, s, seed, kl, stderr, fraction


@functools.partial(jax.jit, static_argnames=("num_rows",))
def fit_seeds(
    agent: Agent,
    prior: Any,
    env_keys: jax.Array,
    fit_keys: jax.Array,
    num_train: jax.Array,
    *,
    num_rows: int,
) -> tuple[Any, Any]:
    """Samples each seed's environment and training data and fits the agent on it.

    env_keys, fit_keys [S]; num_train [] i32 (T); returns (env params, agent
    states), leading axis [S]. The data are sampled with num_rows =
    bucket_size(T) rows and the fit uses the first T (sampling is prefix-stable,
    so they are the rows an unpadded sample would hold): one program per (agent
    family and shape, prior shape, bucket), with the agent's hyperparameters,
    the prior's temperature and T traced.
    """

    def one(env_key: jax.Array, fit_key: jax.Array) -> tuple[Any, Any]:
        env_params, data = sample_environment(env_key, prior, num_rows)
        return env_params, fit(agent, fit_key, data, num_train=num_train)

    return jax.vmap(one)(env_keys, fit_keys)


@functools.partial(jax.jit, static_argnames=("configs", "num_test", "method"))
def evaluate_seeds(
    agent: Agent,
    prior: Any,
    states: Any,
    env_params: Any,
    eval_keys: jax.Array,
    *,
    configs: tuple[EvalConfig, ...],
    num_test: int,
    method: str,
) -> tuple:
    """Every design's (env, agent) log-likelihoods, accuracy, ECE and a finiteness
    flag for each seed (leading axis [S])."""

    def one(state: Any, params: Any, key: jax.Array) -> tuple:
        design_key = jax.random.fold_in(key, DESIGN_TAG)
        per_design = tuple(
            tau_sample_log_likelihoods(
                agent, state, prior, params, jax.random.fold_in(design_key, i), cfg
            )
            for i, cfg in enumerate(configs)
        )
        acc, ece = classification_metrics(
            agent, state, prior, params, jax.random.fold_in(key, CLASSIFICATION_KEY_TAG),
            num_test, method, NUM_SAMPLES, NUM_BINS,
        )
        return per_design, acc, ece, params_are_finite(state)

    return jax.vmap(one)(states, env_params, eval_keys)


def _run_group(
    agent_name: str,
    factory: Callable[..., Agent] | None,
    setting: TestbedSetting,
    sweep: Sweep,
    seeds: tuple[int, ...],
    num_test: int,
    num_models: int,
    method: str,
    overrides: Mapping[str, Any],
    max_rows: int,
    reference: Reference | None,
) -> list[dict[str, Any]]:
    """Fits one agent on one setting for all seeds (vmapped) and evaluates every design
    (and its fidelity to ``reference``'s fit on the same problems, when given)."""
    prior = setting.build_prior()
    is_mlp = setting.prior == "mlp"
    activation = setting.activation if is_mlp else None
    hidden_sizes = hidden_sizes_label(setting.hidden_sizes) if is_mlp else None
    spec = ProblemSpec(
        input_dim=prior.input_dim,
        num_classes=prior.num_classes,
        temperature=prior.temperature,
        num_train=setting.num_train,
    )
    agent = make(agent_name, spec, **overrides) if factory is None else factory(spec, **overrides)
    check_agent_contract(agent, spec, f"agent {agent_name!r}")
    resolved = resolve_method(FittedAgent(agent, None), method)
    # A host agent's seeds stay on one device: its callbacks must not hold up a collective.
    max_devices = 1 if is_host_agent(agent) else None
    num_padded = padded_seed_count(len(seeds), max_devices)
    check_state_fits(agent, num_padded, f"agent {agent_name!r}")
    configs = tuple(
        EvalConfig(
            tau=design.tau,
            kappa=design.kappa,
            num_test=num_test,
            num_models=num_models,
            method=resolved,
            # The evaluation is vmapped over the (padded) seeds: share the row budget.
            max_rows=max(1, max_rows // num_padded),
        )
        for design in sweep.designs
    )
    # Seeds are independent: spread over the devices (one per core where the process
    # asked for that, _src/devices.py), the fit and evaluation run partitioned alike.
    # A setting's seeds are padded to a multiple of the devices (copies of the last
    # seed, computed and dropped: every seed is its own problem, nothing is shared).
    env_keys, fit_keys, eval_keys = shard_seeds(
        pad_seeds(problem_keys(setting, seeds), len(seeds), max_devices), num_padded, max_devices)

    (env_params, states), fit_s, fit_compile_s = _timed(
        fit_seeds, agent, prior, env_keys, fit_keys, jnp.int32(setting.num_train),
        num_rows=bucket_size(setting.num_train),
    )
    (per_design, acc, ece, finite_params), eval_s, eval_compile_s = _timed(
        evaluate_seeds, agent, prior, states, env_params, eval_keys,
        configs=configs, num_test=num_test, method=resolved,
    )
    if resolved == "exact":
        one_state = jax.tree.map(lambda leaf: leaf[0], states)
        x_probe = jnp.zeros((1, spec.input_dim), jnp.float32)
        models_used = int(jax.eval_shape(agent.member_logits, one_state, x_probe).shape[0])
    else:
        models_used = num_models
    num_rows = len(seeds) * len(configs)
    rows = []
    for cfg, s, seed, kl, stderr, fraction in design_kls(per_design, configs, seeds):
        rows.append(
            {
                "agent": agent_name,
                "prior": setting.prior,
                "activation": activation,
                "hidden_sizes": hidden_sizes,
                "input_dim": setting.input_dim,
                "num_train": setting.num_train,
                "temperature": setting.temperature,
                "tau": cfg.tau,
                "kappa": cfg.kappa,
                "seed": seed,
                "kl": kl,
                "kl_stderr": stderr,
                "accuracy": float(acc[s]),
                "ece": float(ece[s]),
                "fraction_finite": fraction,
                "params_finite": bool(finite_params[s]),
                "fit_seconds": fit_s / num_rows,
                "eval_seconds": eval_s / num_rows,
                "compile_seconds": (fit_compile_s + eval_compile_s) / num_rows,
                "method": resolved,
                "num_models": models_used,
                "num_test": num_test,
            }
        )
    if reference is not None:
        _add_fidelity(
            reference, rows, agent, states, setting, prior, spec,
            seeds=seeds, env_keys=env_keys, eval_keys=eval_keys, configs=configs,
        )
    return rows


# ---------------------------------------------------------------- fidelity to a reference


def reference_agent(name: str, spec: ProblemSpec, setting: TestbedSetting, overrides: Mapping[str, Any]) -> Agent:
    """The reference agent ``name`` for a setting: its model fields (prior,
    activation, hidden_sizes, where its config has them) follow the setting's
    generative model unless ``overrides`` sets them. ValueError (one line) when
    it cannot model the setting."""
    fields = agent_registry.hyperparameters(name)
    model = {"prior": setting.prior, "activation": setting.activation, "hidden_sizes": tuple(setting.hidden_sizes)}
    chosen = {f: model[f] for f in _MODEL_FIELDS if f in fields and f not in overrides}
    try:
        return make(name, spec, **chosen, **overrides)
    except ValueError as error:
        raise ValueError(
            f"reference {name!r} cannot model the setting (prior={setting.prior!r}, "
            f"activation={setting.activation!r}, hidden_sizes={tuple(setting.hidden_sizes)}): {error}"
        ) from None


class ReferenceFits:
    """Reference fits kept for reuse: (name, overrides, setting, seeds) -> (agent,
    states, converged [S] or None, fit seconds), the oldest dropped beyond ``limit``.

    A reference is fitted once per setting and seeds and shared by every agent
    scored against it: ``run_testbed`` keeps one for its call, and a caller that
    runs one agent per call (the testbed command, one cell per agent and setting)
    passes the same one to every call.
    """

    def __init__(self, limit: int = _REFERENCE_CACHE_SIZE):
        self.limit = check_int("limit", limit, 1)
        self.fits: dict[tuple, tuple[Agent, Any, np.ndarray | None, float]] = {}

    def get(self, key: tuple):
        return self.fits.get(key)

    def put(self, key: tuple, value: tuple) -> None:
        if len(self.fits) >= self.limit:
            self.fits.pop(next(iter(self.fits)))
        self.fits[key] = value


@dataclasses.dataclass(frozen=True)
class Reference:
    """The agent whose posterior every testbed agent is scored against.

    name: a registry name (e.g. "hmc"); overrides: {hyperparameter: value} of
    it (its model fields default to each setting's generative model, see
    ``reference_agent``); fits: where its fits are kept for reuse, so calls
    given the same Reference share a setting's fit (the default: a new store).
    """

    name: str
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    fits: ReferenceFits = dataclasses.field(default_factory=ReferenceFits, compare=False, repr=False)

    def check(self) -> None:
        """ValueError (one line) unless name is a registered agent that can take
        the testbed's inputs and overrides names its hyperparameters."""
        check_choice("reference", self.name, names())
        check_inputs_fit(self.name, "the testbed", one_hot=False)
        agent_registry.config(self.name, **dict(self.overrides))  # unknown names fail here


def _as_reference(
    reference: str | Reference | None,
    overrides: Mapping[str, Any] | None,
    fits: ReferenceFits | None,
) -> Reference | None:
    """run_testbed's reference arguments as one checked Reference (or None)."""
    if isinstance(reference, Reference):
        if overrides or fits is not None:
            raise ValueError("reference_overrides and reference_fits go into the Reference, not beside it")
        chosen = reference
    elif reference is not None:
        chosen = Reference(reference, dict(overrides or {}), ReferenceFits() if fits is None else fits)
    elif overrides:
        raise ValueError("reference_overrides needs a reference (e.g. reference='hmc')")
    else:
        return None
    chosen.check()
    return chosen


def _reference_fit(
    fits: ReferenceFits,
    name: str,
    overrides: Mapping[str, Any],
    setting: TestbedSetting,
    prior: Any,
    spec: ProblemSpec,
    seeds: tuple[int, ...],
    env_keys: jax.Array,
) -> tuple[Agent, Any, np.ndarray | None, float]:
    cache_key = (name, tuple(sorted((k, repr(v)) for k, v in overrides.items())), setting, seeds)
    cached = fits.get(cache_key)
    if cached is not None:
        agent, states, converged, _ = cached
        return agent, states, converged, 0.0
    agent = reference_agent(name, spec, setting, overrides)
    fit_keys = jax.vmap(lambda k: jax.random.fold_in(k, REFERENCE_FIT_TAG))(env_keys)
    start = time.perf_counter()
    # The same environment keys as the agent's fit: the same environments and data.
    _, states = jax.block_until_ready(
        fit_seeds(agent, prior, env_keys, fit_keys, jnp.int32(setting.num_train),
                   num_rows=bucket_size(setting.num_train))
    )
    seconds = time.perf_counter() - start
    # The reference's own checks (an MCMC run's convergence), per seed; None if it has none.
    converged = None if agent.diagnose is None else np.asarray(jax.vmap(agent.diagnose)(states))
    fits.put(cache_key, (agent, states, converged, seconds))
    return agent, states, converged, seconds


@functools.partial(jax.jit, static_argnames=("configs",))
def _fidelity_seeds(
    agent: Agent,
    states: Any,
    reference: Agent,
    reference_states: Any,
    prior: Any,
    eval_keys: jax.Array,
    *,
    configs: tuple[FidelityConfig, ...],
) -> tuple:
    """``fidelity_per_sample`` of every config for each seed (leading axis [S]);
    config i is scored with ``fold_in(fold_in(eval_key, FIDELITY_TAG), i)``."""

    def one(state: Any, reference_state: Any, key: jax.Array) -> tuple:
        fidelity_key = jax.random.fold_in(key, FIDELITY_TAG)
        return tuple(
            fidelity_per_sample(
                agent, state, reference, reference_state, prior, jax.random.fold_in(fidelity_key, i), cfg
            )
            for i, cfg in enumerate(configs)
        )

    return jax.vmap(one)(states, reference_states, eval_keys)


def _add_fidelity(
    reference: Reference,
    rows: list[dict[str, Any]],
    agent: Agent,
    states: Any,
    setting: TestbedSetting,
    prior: Any,
    spec: ProblemSpec,
    *,
    seeds: tuple[int, ...],
    env_keys: jax.Array,
    eval_keys: jax.Array,
    configs: tuple[EvalConfig, ...],
) -> None:
    """Adds FIDELITY_COLUMNS to ``rows`` (design-major, as ``_run_group`` builds them).

    agreement and tv (marginal) come from one tau = 1 pass per seed (config 0)
    and are the same on every design's row of a seed; tv_joint and
    kl_to_reference are each design's (tau, kappa) (config d + 1).
    fidelity_seconds: the reference's fit (when not cached) and the scoring,
    compilation included, amortised over the rows.
    """
    ref_agent, ref_states, converged, fit_seconds = _reference_fit(
        reference.fits, reference.name, reference.overrides, setting, prior, spec, seeds, env_keys
    )
    resolved = resolve_method(FittedAgent(agent, None), configs[0].method)
    ref_method = resolve_method(FittedAgent(ref_agent, None), "auto")
    agent_method = "monte_carlo" if resolved == "partition" else resolved

    def fidelity_config(tau: int, kappa: int | None) -> FidelityConfig:
        return FidelityConfig(
            tau=tau,
            kappa=kappa,
            num_test=configs[0].num_test,
            num_models=configs[0].num_models,
            reference_num_models=configs[0].num_models,
            method=agent_method,
            reference_method=ref_method,
            label_method=resolve_label_method("auto", tau, spec.num_classes),
            max_rows=configs[0].max_rows,
        )

    fidelity_configs = (fidelity_config(1, None),) + tuple(fidelity_config(c.tau, c.kappa) for c in configs)
    start = time.perf_counter()
    per_config = jax.block_until_ready(
        _fidelity_seeds(agent, states, ref_agent, ref_states, prior, eval_keys, configs=fidelity_configs)
    )
    seconds = (time.perf_counter() - start + fit_seconds) / len(rows)
    per_config = [jax.tree.map(np.asarray, arrays) for arrays in per_config]
    for d in range(len(configs)):
        for s in range(len(seeds)):
            marginal = summarize_fidelity(jax.tree.map(lambda a: a[s], per_config[0]))
            joint = summarize_fidelity(jax.tree.map(lambda a: a[s], per_config[d + 1]))
            rows[d * len(seeds) + s].update(
                {
                    "reference": reference.name,
                    "agreement": marginal["agreement"],
                    "tv": marginal["tv"],
                    "tv_joint": joint["tv_joint"],
                    "tv_joint_stderr": joint["tv_joint_stderr"],
                    "kl_to_reference": joint["kl_to_reference"],
                    "kl_to_reference_stderr": joint["kl_to_reference_stderr"],
                    "reference_converged": None if converged is None else bool(converged[s]),
                    "fidelity_seconds": seconds,
                }
            )


def run_testbed(
    agent_names: str | Sequence[str] | Mapping[str, Callable[..., Agent] | None],
    sweep: str | Sweep = "quick",
    seeds: int | Iterable[int] | None = None,
    *,
    num_test: int = 1000,
    num_models: int = 1000,
    method: str = "auto",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    progress: bool = True,
    reference: str | Reference | None = None,
    reference_overrides: Mapping[str, Any] | None = None,
    reference_fits: ReferenceFits | None = None,
) -> pd.DataFrame:
    """Fits and evaluates agents on a sweep; returns one row per problem and design.

    agent_names: registry names, as a list or "mlp,ensemble+", or a mapping
    {name: None (registry) or make_agent(spec, **overrides) -> Agent}; sweep: a name in
    SWEEP_NAMES or a Sweep; seeds: None (the sweep's default count), a count n
    (seeds 0..n-1) or distinct seeds; num_test, num_models, method: as in
    ``estimate_kl``; overrides: {agent name: {hyperparameter: value}};
    max_rows: the evaluation memory bound, shared by the vmapped seeds;
    reference: None, a ``Reference``, or a registry name (e.g. "hmc") whose agent is fitted on
    the same environments and data (the same problem keys, its own fit key
    ``fold_in(pk, REFERENCE_FIT_TAG)``) and against which every agent's
    posterior fidelity is scored (evaluation/fidelity.py): then the rows also
    have FIDELITY_COLUMNS; reference_overrides, reference_fits: with a name,
    the ``Reference``'s overrides and fits (None: none, and a new
    ``ReferenceFits`` for this call).
    Programs are compiled once per agent family and shape, prior shape and T,
    and reused across calls in the process (JAX's jit cache).

    Columns: COLUMNS. ``kl`` is NaN (never a silent average) when fewer than
    half the per-sample estimates were finite; ``fraction_finite`` says how many
    were. ``df.attrs`` holds "versions" (environment_info()), "sweep", "seeds".
    """
    agents = _agent_factories(agent_names)
    sweep = get_sweep(sweep) if isinstance(sweep, str) else sweep
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a sweep name or a Sweep, got {type(sweep).__name__}")
    seed_values = _seed_list(seeds, sweep)
    num_test = check_int("num_test", num_test, 1)
    num_models = check_int("num_models", num_models, 1)
    max_rows = check_int("max_rows", max_rows, 1)
    check_choice("method", method, METHODS)
    overrides = dict(overrides or {})
    reference = _as_reference(reference, reference_overrides, reference_fits)
    unknown = sorted(set(overrides) - set(agents))
    if unknown:
        raise ValueError(f"overrides name agents that are not run: {unknown}; agents are {list(agents)}")
    groups = [(a, s) for a in agents for s in sweep.settings]
    rows: list[dict[str, Any]] = []
    bar = tqdm(groups, desc=f"testbed {sweep.name}", unit="setting", disable=not progress)
    for agent_name, setting in bar:
        family = "" if setting.is_default_family else (
            f" {setting.activation}-{hidden_sizes_label(setting.hidden_sizes)}"
        )
        bar.set_postfix_str(
            f"{agent_name}{family} d={setting.input_dim} T={setting.num_train} beta={setting.temperature}"
        )
        rows.extend(
            _run_group(
                agent_name,
                agents[agent_name],
                setting,
                sweep,
                seed_values,
                num_test,
                num_models,
                method,
                overrides.get(agent_name, {}),
                max_rows,
                reference,
            )
        )
    columns = list(COLUMNS) + (list(FIDELITY_COLUMNS) if reference is not None else [])
    frame = pd.DataFrame(rows, columns=columns)
    frame["kappa"] = frame["kappa"].astype("Int64")
    frame.attrs["versions"] = environment_info()
    frame.attrs["sweep"] = sweep.name
    frame.attrs["seeds"] = list(seed_values)
    return frame
