"""d_KL^{tau, kappa} of an agent's joint predictions, and NLL on data without an environment.

``estimate_kl(sampler, problem, key)`` follows paper 000, Alg. 1-3 and paper 001,
Def. 1: draw ``num_test`` test tau-samples from the problem (iid or polyadic, as
the problem was made), compute each one's exact environment log-likelihood and
the agent's log-likelihood, and average log(p / p_hat).

A sampler is either a ``FittedAgent(agent, state)`` or any callable
``(key, x[n, d]) -> logits[n, C]`` that makes one joint epistemic draw per key,
so models from other frameworks can be evaluated too.

Methods (how p_hat is computed):

- ``"exact"``: all members of a finite-index agent (``agent.member_logits``),
  equal weights; ``num_models`` is ignored.
- ``"monte_carlo"``: ``num_models`` draws of ``sample_logits`` (paper 000, Alg. 3).
- ``"partition"``: ``num_models`` draws, random-partition estimator (paper 003,
  Alg. 4), for large tau.
- ``"auto"``: "exact" when the sampler exposes members, else "monte_carlo".

The same model draws score every test tau-sample, so an agent is applied to all
num_test * tau inputs in a few large batches instead of once per sample.

Non-finite per-sample values (a model set that gives an observed label
probability 0) are handled as the reference implementation does: +inf (and NaN)
are clipped to the largest finite per-sample value, -inf to the smallest; the
fraction that was finite is reported. When fewer than half are finite the
estimate is meaningless and ``NonFiniteEstimateError`` is raised.
"""

import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.keys import MODEL_TAG, TEST_TAG
from decision_bench._src.validation import check_choice, check_int
from decision_bench.agents.base import Agent
from decision_bench.envs.testbed import TestbedProblem, sample_polyadic_test
from decision_bench.evaluation.likelihood import (
    DEFAULT_MAX_ROWS,
    ModelSet,
    agent_log_likelihoods,
    chunk_size,
)

METHODS = ("auto", "exact", "monte_carlo", "partition")
MIN_FRACTION_FINITE = 0.5


class FittedAgent(NamedTuple):
    """An agent with its trained state: what ``estimate_kl`` evaluates."""

    agent: Agent
    state: Any


Sampler = Union[FittedAgent, Callable[[jax.Array, jax.Array], jax.Array]]


class NonFiniteEstimateError(FloatingPointError):
    """Most per-sample log-likelihood ratios were inf or NaN."""


@dataclasses.dataclass(frozen=True)
class KLResult:
    """d_KL estimate for one problem.

    kl: mean of the clipped per-sample values; kl_stderr: their standard error
    (std with ddof=1 over sqrt(num_test), NaN for num_test = 1);
    per_sample: [num_test] log(p / p_hat) as computed (before clipping);
    fraction_finite: share of per_sample that was finite;
    env_log_likelihood, agent_log_likelihood: [num_test] log p and log p_hat;
    method: the method used ("auto" resolved); num_models: models per estimate.
    """

    kl: float
    kl_stderr: float
    per_sample: np.ndarray
    fraction_finite: float
    env_log_likelihood: np.ndarray
    agent_log_likelihood: np.ndarray
    method: str
    num_models: int


@dataclasses.dataclass(frozen=True)
class NLLResult:
    """Negative log-likelihood of test tau-samples without a known environment.

    nll: mean over tau-samples of -log p_hat(y_{1:tau} | x_{1:tau}) (clipped as
    for KL); nll_stderr; per_sample: [N] as computed; fraction_finite; method;
    num_models.
    """

    nll: float
    nll_stderr: float
    per_sample: np.ndarray
    fraction_finite: float
    method: str
    num_models: int


def resolve_method(sampler: Sampler, method: str) -> str:
    """The method actually used: "exact", "monte_carlo" or "partition"."""
    check_choice("method", method, METHODS)
    has_members = isinstance(sampler, FittedAgent) and sampler.agent.member_logits is not None
    if method == "auto":
        return "exact" if has_members else "monte_carlo"
    if method == "exact" and not has_members:
        raise ValueError(
            "method='exact' needs a FittedAgent whose agent has member_logits "
            "(a finite-index agent); use method='monte_carlo' or 'auto'"
        )
    return method


def _check_sampler(sampler: Any) -> None:
    if isinstance(sampler, FittedAgent):
        if not isinstance(sampler.agent, Agent):
            raise ValueError(f"sampler.agent must be an Agent, got {type(sampler.agent).__name__}")
        return
    if not callable(sampler):
        raise ValueError(
            "sampler must be a FittedAgent(agent, state) or a callable (key, x) -> logits, "
            f"got {type(sampler).__name__}"
        )


def model_set(
    source: Any, state: Any, method: str, num_models: int, input_dim: int
) -> tuple[ModelSet, int]:
    """The model set of a sampler for a resolved method, and its size M.

    source: an Agent (with its ``state``) or a callable (key, x) -> [n, C]
    (state ignored). Returns (models, M) with models(key, x[n, d]) -> [M, n, C].
    """
    if isinstance(source, Agent) and method == "exact":

        def members(key, x):
            del key  # all members with equal weight: nothing to sample
            return source.member_logits(state, x)

        return members, _num_members(source, state, input_dim)
    if isinstance(source, Agent):
        draw = lambda key, x: source.sample_logits(key, state, x)  # noqa: E731
    else:
        draw = source

    def sampled(key, x):
        return jax.vmap(lambda k: draw(k, x))(jax.random.split(key, num_models))

    return sampled, num_models


def _num_members(agent: Agent, state: Any, input_dim: int) -> int:
    shape = jax.eval_shape(agent.member_logits, state, jnp.zeros((1, input_dim), jnp.float32))
    return int(shape.shape[0])


def _shape_text(shape: tuple) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def check_sampler_logits(
    source: Any,
    state: Any,
    method: str,
    key: jax.Array,
    num_inputs: int,
    input_dim: int,
    num_classes: int | None,
    *,
    min_classes: int = 2,
) -> None:
    """Checks that one draw of a sampler maps x [n, d] to logits [n, num_classes].

    Traced with ``jax.eval_shape`` (no compilation, no computation), once, before
    an estimate: a wrong shape otherwise either broadcasts into a plausible but
    meaningless number ([n, 3] logits on 2 classes) or fails in a reshape deep in
    the jitted estimator.

    source, state: as ``model_set``; method: resolved; "exact" checks
    ``agent.member_logits(state, x)``, which must give [M, n, num_classes];
    key: the key the draws are made from; num_inputs n: inputs per sampler call;
    num_classes: the problem's class count, or None when unknown (then any
    C >= min_classes is accepted). Raises ValueError (one line) naming the
    function, the shape it returned and the shape expected.
    """
    x = jax.ShapeDtypeStruct((num_inputs, input_dim), jnp.float32)
    if isinstance(source, Agent) and method == "exact":
        name, prefix, shown_prefix = "sampler.agent.member_logits(state, x)", "num_members, ", "M, "
        out = jax.eval_shape(lambda x_: source.member_logits(state, x_), x)
    elif isinstance(source, Agent):
        name, prefix, shown_prefix = "sampler.agent.sample_logits(key, state, x)", "", ""
        out = jax.eval_shape(lambda k, x_: source.sample_logits(k, state, x_), key, x)
    else:
        name, prefix, shown_prefix = "sampler(key, x)", "", ""
        out = jax.eval_shape(source, key, x)
    rank = 3 if prefix else 2
    shape = tuple(out.shape) if isinstance(out, jax.ShapeDtypeStruct) else None
    if shape is not None and len(shape) == rank and shape[-2] == num_inputs and shape[0] >= 1:
        classes_ok = shape[-1] == num_classes if num_classes is not None else shape[-1] >= min_classes
        if classes_ok:
            return
    got = f"logits of shape {_shape_text(shape)}" if shape is not None else f"a {type(out).__name__}"
    if num_classes is not None:
        expected = f"[{prefix}n, num_classes] = [{shown_prefix}{num_inputs}, {num_classes}]"
    else:
        expected = (
            f"[{prefix}n, num_classes] = [{shown_prefix}{num_inputs}, C] with C >= {min_classes} "
            "(more than the largest label in y)"
        )
    raise ValueError(
        f"{name} returned {got} for x of shape {_shape_text((num_inputs, input_dim))}; "
        f"expected {expected}"
    )


def _models_per_call(source: Any, state: Any, method: str, num_models: int, input_dim: int) -> int:
    """M: the models one model-set call returns (all members for "exact")."""
    if isinstance(source, Agent) and method == "exact":
        return _num_members(source, state, input_dim)
    return num_models


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Static settings of one evaluation: the test design (tau, kappa), N, M, the
    resolved method and the (model, input) row budget per batch."""

    tau: int
    kappa: int | None
    num_test: int
    num_models: int
    method: str
    max_rows: int


def split_sampler(sampler: Sampler) -> tuple[Any, Any]:
    """(source, state) as pytrees that jit takes as ordinary arguments: an Agent
    is one already (functions static, hyperparameters leaves); a plain callable
    becomes a ``Partial`` with no leaves, so the same callable reuses its program."""
    if isinstance(sampler, FittedAgent):
        return sampler.agent, sampler.state
    return jax.tree_util.Partial(sampler), None


def distinct_rows(tau: int, kappa: int | None) -> int:
    """Inputs per test tau-sample an agent is evaluated on: kappa anchors when
    kappa < tau, else the tau inputs themselves."""
    return tau if kappa is None else min(tau, kappa)


def tau_sample_log_likelihoods(
    source: Any,
    state: Any,
    prior: Any,
    env_params: Any,
    key: jax.Array,
    cfg: EvalConfig,
) -> tuple[jax.Array, jax.Array]:
    """Environment and agent log-likelihoods of cfg.num_test fresh tau-samples.

    source: Agent or callable; state: the agent state (vmappable, e.g. over seeds);
    env_params: the environment (vmappable); key: evaluation key.
    Returns (env_ll [num_test], agent_ll [num_test]).
    """
    test_keys = jax.random.split(jax.random.fold_in(key, TEST_TAG), cfg.num_test)
    tests = jax.vmap(lambda k: sample_polyadic_test(k, prior, env_params, cfg.tau, cfg.kappa))(
        test_keys
    )
    models, num_models = model_set(source, state, cfg.method, cfg.num_models, prior.input_dim)
    if distinct_rows(cfg.tau, cfg.kappa) < cfg.tau:
        # kappa < tau anchors: the agent's models run on the anchors only.
        x, pick = tests.inputs, tests.pick
    else:
        x, pick = jax.vmap(lambda t: t.inputs[t.pick])(tests), None
    agent_ll = agent_log_likelihoods(
        models,
        jax.random.fold_in(key, MODEL_TAG),
        x,
        tests.y,
        num_models=num_models,
        estimator="partition" if cfg.method == "partition" else "mixture",
        max_rows=cfg.max_rows,
        pick=pick,
    )
    return tests.env_log_likelihood, agent_ll


@functools.partial(jax.jit, static_argnames=("cfg",))
def _tau_sample_log_likelihoods_compiled(
    source: Any, state: Any, prior: Any, env_params: Any, key: jax.Array, *, cfg: EvalConfig
) -> tuple[jax.Array, jax.Array]:
    """``tau_sample_log_likelihoods`` compiled once per source pytree structure and config."""
    return tau_sample_log_likelihoods(source, state, prior, env_params, key, cfg)


def summarize(per_sample: np.ndarray, *, strict: bool = True) -> tuple[float, float, float]:
    """(mean, stderr, fraction_finite) of per-sample values with non-finite clipping.

    +inf and NaN are replaced by the largest finite value, -inf by the smallest
    (the reference clips +inf to the largest finite estimate). With strict=True,
    raises NonFiniteEstimateError when fewer than half are finite; otherwise the
    mean and stderr are NaN in that case, and the fraction tells why.
    """
    values = np.asarray(per_sample, np.float64)
    finite = np.isfinite(values)
    fraction = float(finite.mean()) if values.size else 0.0
    if fraction < MIN_FRACTION_FINITE:
        if strict:
            raise NonFiniteEstimateError(
                f"only {fraction:.1%} of {values.size} per-sample estimates are finite "
                f"(need >= {MIN_FRACTION_FINITE:.0%}): the agent gives probability 0 to "
                "observed labels, or produced NaN"
            )
        return float("nan"), float("nan"), fraction
    high, low = values[finite].max(), values[finite].min()
    clipped = np.where(finite, values, np.where(values == -np.inf, low, high))
    stderr = clipped.std(ddof=1) / np.sqrt(clipped.size) if clipped.size > 1 else float("nan")
    return float(clipped.mean()), float(stderr), fraction


def check_sampler_and_key(sampler: Any, key: Any) -> None:
    """ValueError (one line) unless sampler is a FittedAgent or a callable and key one
    jax random key: the checks every estimator of this package starts with."""
    _check_sampler(sampler)
    if not isinstance(key, jax.Array) or key.shape not in ((), (2,)):
        raise ValueError(f"key must be a single jax.random key, got {key!r}")


def estimate_kl(
    sampler: Sampler,
    problem: TestbedProblem,
    key: jax.Array,
    num_test: int = 1000,
    num_models: int = 1000,
    method: str = "auto",
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> KLResult:
    """d_KL^{tau, kappa} of a sampler on one testbed problem (tau, kappa from problem.spec).

    sampler: FittedAgent(agent, state) or a callable (key, x[n, d]) -> logits [n, C]
    (one joint epistemic draw per key); problem: a TestbedProblem; key: a jax
    random key (the same key gives the same result); num_test: test tau-samples
    N; num_models: agent draws M (unused by "exact"); method: "auto" | "exact" |
    "monte_carlo" | "partition"; max_rows: bound on (model, input) rows per batch.
    """
    check_sampler_and_key(sampler, key)
    num_models = check_int("num_models", num_models, 1)
    max_rows = check_int("max_rows", max_rows, 1)
    num_test = check_int("num_test", num_test, 1)
    if not isinstance(problem, TestbedProblem):
        raise ValueError(f"problem must be a TestbedProblem, got {type(problem).__name__}")
    resolved = resolve_method(sampler, method)
    source, state = split_sampler(sampler)
    tau, input_dim = problem.spec.tau, problem.spec.input_dim
    # The sampler sees the test inputs chunk by chunk: n = chunk * tau rows per call.
    models = _models_per_call(source, state, resolved, num_models, input_dim)
    rows = distinct_rows(tau, problem.spec.kappa)
    num_inputs = chunk_size(num_test, models, rows, max_rows) * rows
    check_sampler_logits(
        source, state, resolved, key, num_inputs, input_dim, problem.spec.num_classes
    )
    cfg = EvalConfig(
        tau=problem.spec.tau,
        kappa=problem.spec.kappa,
        num_test=num_test,
        num_models=num_models,
        method=resolved,
        max_rows=max_rows,
    )
    env_ll, agent_ll = _tau_sample_log_likelihoods_compiled(
        source, state, problem.prior, problem.env_params, key, cfg=cfg
    )
    env_ll, agent_ll = np.asarray(env_ll), np.asarray(agent_ll)
    per_sample = env_ll - agent_ll
    kl, stderr, fraction = summarize(per_sample, strict=True)
    return KLResult(kl, stderr, per_sample, fraction, env_ll, agent_ll, resolved, models)


@functools.partial(jax.jit, static_argnames=("method", "num_models", "max_rows"))
def _nll_per_sample(
    source: Any, state: Any, key: jax.Array, x: jax.Array, y: jax.Array,
    *, method: str, num_models: int, max_rows: int,
) -> jax.Array:
    """Joint NLL [N] of labelled tau-samples x [N, tau, d], y [N, tau]."""
    models, size = model_set(source, state, method, num_models, x.shape[-1])
    return -agent_log_likelihoods(
        models,
        jax.random.fold_in(key, MODEL_TAG),
        x,
        y,
        num_models=size,
        estimator="partition" if method == "partition" else "mixture",
        max_rows=max_rows,
    )


def estimate_nll(
    sampler: Sampler,
    x: Any,
    y: Any,
    key: jax.Array,
    num_models: int = 1000,
    method: str = "auto",
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> NLLResult:
    """Joint negative log-likelihood of labelled test tau-samples (no environment needed).

    x: [N, tau, d] (or [N, d], read as tau = 1); y: [N, tau] (or [N]) integer
    labels. The real-data analogue of d_KL: it differs from d_KL by the
    (agent-independent) environment entropy.
    """
    check_sampler_and_key(sampler, key)
    num_models = check_int("num_models", num_models, 1)
    max_rows = check_int("max_rows", max_rows, 1)
    x = jnp.asarray(x, jnp.float32)
    y = jnp.asarray(y)
    if x.ndim == 2:
        x, y = x[:, None, :], y.reshape(-1, 1) if y.ndim == 1 else y
    if x.ndim != 3 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape [N, tau, d] or [N, d] with N, tau >= 1, got {x.shape}")
    if y.shape != x.shape[:2] or not jnp.issubdtype(y.dtype, jnp.integer):
        raise ValueError(f"y must be integer labels of shape {x.shape[:2]}, got {y.dtype}{y.shape}")
    resolved = resolve_method(sampler, method)
    source, state = split_sampler(sampler)
    num_test, tau, input_dim = x.shape
    # No environment says how many classes there are; the labels say at least how many.
    min_classes = max(2, int(np.asarray(y).max()) + 1)
    models = _models_per_call(source, state, resolved, num_models, input_dim)
    num_inputs = chunk_size(num_test, models, tau, max_rows) * tau
    check_sampler_logits(
        source, state, resolved, key, num_inputs, input_dim, None, min_classes=min_classes
    )
    per_sample = np.asarray(
        _nll_per_sample(
            source, state, key, x, y.astype(jnp.int32),
            method=resolved, num_models=num_models, max_rows=max_rows,
        )
    )
    nll, stderr, fraction = summarize(per_sample, strict=True)
    return NLLResult(nll, stderr, per_sample, fraction, resolved, models)
