"""Posterior fidelity: how close an agent's predictive is to a reference posterior's.

Paper 004 (Sec. 1.2) scores approximate inference by its distance to an HMC
reference rather than to the environment: the *agreement* of top-1 predictions
and the *total variation* (TV) between the two predictive distributions,
averaged over test inputs. Here both are computed for marginal predictions and,
as the testbed does for d_KL, for joint predictions of tau labels at once, plus
``kl_to_reference``: d_KL^tau with the reference's predictive in place of the
environment's, KL(P_ref || P_agent) (the testbed's orientation: truth first).

Each side is a sampler as in ``estimate_kl`` (``FittedAgent(agent, state)`` or a
callable ``(key, x) -> logits``) and is represented by a *model set*: all its
members with equal weights when it has ``member_logits`` (method "exact":
ensembles, the hmc agent's kept draws), else ``num_models`` draws of
``sample_logits`` (method "monte_carlo", the same M draws scoring every test
input). Its predictive is the mixture of the set: marginal p(y | x) = (1/M)
sum_m p_m(y | x), joint P(y_1..tau) = (1/M) sum_m prod_t p_m(y_t | x_t).

Joint TV and KL over the C^tau label vectors y_1..tau of a test tau-tuple:

- ``"enumerate"``: every label vector; exact for the two model sets (so exact
  outright when both sides have finitely many members). Cost ~ (M + R) * C^tau
  per tuple. ``"auto"`` enumerates when C^tau <= MAX_AUTO_ENUMERATED (2^10:
  tau <= 10 with two classes).
- ``"sample"``: ``num_label_samples`` label vectors per tuple from the even
  mixture R = (P_agent + P_ref) / 2, with TV = E_R[|P_ref - P_agent| / (P_ref +
  P_agent)] = E_R[|tanh(d / 2)|] and KL = E_R[2 sigmoid(d) d], d = log P_ref -
  log P_agent: unbiased, symmetric in the two sides (for TV), every TV term in
  [0, 1]. Each tuple's value comes with its Monte Carlo standard error; the
  result's ``*_mc_stderr`` is the error of the mean from label sampling alone
  (0 when enumerated), ``*_stderr`` the standard error over test tuples (which
  includes it).

Test inputs: ``num_test`` tau-tuples from the problem's input distribution in its
design (iid, or kappa anchors drawn with replacement, as ``estimate_kl``); the
marginal agreement and TV average over the distinct inputs of all tuples (K per
tuple: tau iid inputs, or the kappa anchors), which are iid input draws.

Everything below ``posterior_fidelity`` is a pure function of arrays;
``fidelity_per_sample`` is jittable and vmappable over agent states, reference
states and keys (the runner vmaps it over seeds). Hyperparameters of both agents
are array leaves of their records, so a second identical call never recompiles.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.keys import LABEL_TAG, MODEL_TAG, REFERENCE_MODEL_TAG, TEST_TAG
from decision_bench._src.validation import check_choice, check_int
from decision_bench.envs.testbed import TestbedProblem, polyadic_design
from decision_bench.evaluation.kl import (
    Sampler,
    check_sampler_and_key,
    split_sampler,
    check_sampler_logits,
    model_set,
    resolve_method,
    summarize,
)
from decision_bench.evaluation.likelihood import DEFAULT_MAX_ROWS, chunk_size

__all__ = [
    "FidelityArrays",
    "FidelityConfig",
    "FidelityResult",
    "LABEL_METHODS",
    "ReferenceKLResult",
    "fidelity_config",
    "fidelity_per_sample",
    "joint_fidelity_enumerated",
    "joint_fidelity_sampled",
    "kl_to_reference",
    "marginal_fidelity",
    "posterior_fidelity",
    "resolve_label_method",
    "summarize_fidelity",
]

LABEL_METHODS = ("auto", "enumerate", "sample")
MAX_AUTO_ENUMERATED = 2**10  # "auto" enumerates up to 1024 label vectors (tau = 10, C = 2)
MAX_ENUMERATED = 2**14  # "enumerate" refuses more (memory: models x vectors per tuple)
DEFAULT_LABEL_SAMPLES = 1000


# ---------------------------------------------------------------- array functions


def _mixture_marginal(logits: jax.Array) -> jax.Array:
    """Mixture class probabilities. logits [M, n, C] -> [n, C]."""
    return jnp.mean(jax.nn.softmax(logits, axis=-1), axis=0)


def marginal_fidelity(agent_logits: jax.Array, reference_logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Top-1 agreement and TV of the two mixtures' marginal predictions per input.

    agent_logits: [M, n, C] (the agent's M models on n inputs); reference_logits:
    [R, n, C]. Returns (agree [n] f32 in {0, 1}, tv [n] f32 in [0, 1]), with
    tv = (1/2) sum_c |p_agent(c | x) - p_ref(c | x)| (paper 004, Eqs. 1-2, per input).
    """
    pa, pr = _mixture_marginal(agent_logits), _mixture_marginal(reference_logits)
    agree = (jnp.argmax(pa, axis=-1) == jnp.argmax(pr, axis=-1)).astype(jnp.float32)
    tv = jnp.clip(0.5 * jnp.sum(jnp.abs(pa - pr), axis=-1), 0.0, 1.0)
    return agree, tv


def _all_label_log_probs(log_p: jax.Array) -> jax.Array:
    """log prod_t p_m(y_t) for every label vector, row-major (y_1 slowest).

    log_p: [M, tau, C] log-probabilities -> [M, C^tau].
    """
    num_models, tau, _ = log_p.shape
    joint = log_p[:, 0, :]
    for t in range(1, tau):  # tau is static: an unrolled outer sum, C^(t+1) wide
        joint = (joint[:, :, None] + log_p[:, t, None, :]).reshape(num_models, -1)
    return joint


def _log_mixture(per_model: jax.Array) -> jax.Array:
    """log (1/M) sum_m exp(per_model[m]). [M, L] -> [L]."""
    return jax.nn.logsumexp(per_model, axis=0) - jnp.log(per_model.shape[0])


def _kl_terms(log_ref: jax.Array, log_agent: jax.Array) -> jax.Array:
    """P_ref (log P_ref - log P_agent) per label vector, 0 where P_ref is 0. [L] -> [L]."""
    p_ref = jnp.exp(log_ref)
    safe = jnp.where(p_ref > 0, log_ref - log_agent, 0.0)
    return jnp.where(p_ref > 0, p_ref * safe, 0.0)


def joint_fidelity_enumerated(
    agent_logits: jax.Array, reference_logits: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Exact joint TV and KL(P_ref || P_agent) over all C^tau label vectors of one tuple.

    agent_logits: [M, tau, C]; reference_logits: [R, tau, C] (the models on the
    tuple's tau inputs, in order). Returns (tv [], kl []): tv in [0, 1]; kl >= 0
    up to rounding, +inf when the agent gives probability 0 to a vector the
    reference does not.
    """
    log_a = _log_mixture(_all_label_log_probs(jax.nn.log_softmax(agent_logits, axis=-1)))
    log_r = _log_mixture(_all_label_log_probs(jax.nn.log_softmax(reference_logits, axis=-1)))
    tv = jnp.clip(0.5 * jnp.sum(jnp.abs(jnp.exp(log_a) - jnp.exp(log_r))), 0.0, 1.0)
    return tv, jnp.sum(_kl_terms(log_r, log_a))


def _label_log_probs(log_p: jax.Array, y: jax.Array) -> jax.Array:
    """log of the mixture's probability of each label vector.

    log_p: [M, tau, C]; y: [S, tau] i32 -> [S]. A one-hot contraction (a matrix
    product); -inf log-probabilities are floored to the most negative finite
    number first, so that 0 * log 0 is 0 and a chosen -inf stays -inf.
    """
    floor = jnp.finfo(log_p.dtype).min
    one_hot = jax.nn.one_hot(y, log_p.shape[-1], dtype=log_p.dtype)
    per_model = jnp.einsum("mtc,stc->ms", jnp.maximum(log_p, floor), one_hot)
    return _log_mixture(per_model)


def _mean_and_stderr(values: jax.Array) -> tuple[jax.Array, jax.Array]:
    n = values.shape[0]
    mean = jnp.mean(values)
    stderr = jnp.std(values, ddof=1) / jnp.sqrt(n) if n > 1 else jnp.full((), jnp.nan)
    return mean, stderr


def joint_fidelity_sampled(
    key: jax.Array, agent_logits: jax.Array, reference_logits: jax.Array, num_samples: int
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Monte Carlo joint TV and KL(P_ref || P_agent) of one tuple, with standard errors.

    key: draws the label vectors; agent_logits: [M, tau, C]; reference_logits:
    [R, tau, C]; num_samples S (static). Each label vector comes from the even
    mixture of the two predictives (a side with probability 1/2, a model of it
    uniformly, then y_t ~ p_model(. | x_t)); with d = log P_ref(y) - log P_agent(y):
    TV = mean |tanh(d / 2)|, KL = mean 2 sigmoid(d) d (see the module docstring).
    Returns (tv [], tv_stderr [], kl [], kl_stderr []).
    """
    log_a = jax.nn.log_softmax(agent_logits, axis=-1)
    log_r = jax.nn.log_softmax(reference_logits, axis=-1)
    k_side, k_a, k_r, k_y = jax.random.split(key, 4)
    from_reference = jax.random.bernoulli(k_side, 0.5, (num_samples,))
    pick_a = jax.random.randint(k_a, (num_samples,), 0, log_a.shape[0])
    pick_r = jax.random.randint(k_r, (num_samples,), 0, log_r.shape[0])
    chosen = jnp.where(from_reference[:, None, None], log_r[pick_r], log_a[pick_a])  # [S, tau, C]
    y = jax.random.categorical(k_y, chosen, axis=-1).astype(jnp.int32)  # [S, tau]
    d = _label_log_probs(log_r, y) - _label_log_probs(log_a, y)  # [S]
    d = jnp.where(jnp.isnan(d), 0.0, d)  # both sides -inf: a vector neither could draw
    tv_terms = jnp.abs(jnp.tanh(0.5 * d))
    kl_terms = jnp.where(d > -jnp.inf, 2.0 * jax.nn.sigmoid(d) * d, 0.0)
    tv, tv_se = _mean_and_stderr(tv_terms)
    kl, kl_se = _mean_and_stderr(kl_terms)
    return jnp.clip(tv, 0.0, 1.0), tv_se, kl, kl_se


@dataclasses.dataclass(frozen=True)
class FidelityConfig:
    """Settings of one fidelity evaluation.

    tau: labels per joint prediction (None: the problem's); kappa: the test
    design's distinct inputs per tuple, which is the problem's (None takes it);
    num_test: tuples N; num_models, reference_num_models (None: num_models):
    draws per side when it has no members; method, reference_method: "auto" |
    "exact" | "monte_carlo" per side; label_method: "auto" | "enumerate" |
    "sample"; num_label_samples: label vectors per tuple for "sample"; max_rows:
    bound on (model, input or label vector) rows per batch.

    ``posterior_fidelity`` and ``kl_to_reference`` take one as given;
    ``resolve`` checks it against the samplers and the problem and returns the
    config ``fidelity_per_sample`` is compiled for (every field set, the
    methods resolved), a jit static argument.
    """

    tau: int | None = None
    kappa: int | None = None
    num_test: int = 1000
    num_models: int = 1000
    reference_num_models: int | None = None
    method: str = "auto"
    reference_method: str = "auto"
    label_method: str = "auto"
    num_label_samples: int = DEFAULT_LABEL_SAMPLES
    max_rows: int = DEFAULT_MAX_ROWS

    def resolve(self, fitted: Sampler, reference: Sampler, problem: TestbedProblem) -> FidelityConfig:
        """The checked, resolved config for these samplers on this problem (ValueError naming a bad field)."""
        if not isinstance(problem, TestbedProblem):
            raise ValueError(f"problem must be a TestbedProblem, got {type(problem).__name__}")
        kappa = problem.spec.kappa
        if self.kappa is not None and self.kappa != kappa:
            raise ValueError(f"kappa is the problem's test design (kappa={kappa!r}), got {self.kappa!r}")
        tau = problem.spec.tau if self.tau is None else check_int("tau", self.tau, 1)
        num_models = check_int("num_models", self.num_models, 1)
        method = resolve_method(fitted, self.method)
        reference_method = resolve_method(reference, self.reference_method)
        if "partition" in (method, reference_method):
            raise ValueError(
                "method and reference_method must be 'auto', 'exact' or 'monte_carlo' "
                "(the fidelity mixtures need every model's probabilities, not partition cells)"
            )
        return FidelityConfig(
            tau=tau,
            kappa=kappa,
            num_test=check_int("num_test", self.num_test, 1),
            num_models=num_models,
            reference_num_models=num_models if self.reference_num_models is None
            else check_int("reference_num_models", self.reference_num_models, 1),
            method=method,
            reference_method=reference_method,
            label_method=resolve_label_method(self.label_method, tau, problem.spec.num_classes),
            num_label_samples=check_int("num_label_samples", self.num_label_samples, 2),
            max_rows=check_int("max_rows", self.max_rows, 1),
        )


def fidelity_config(config: FidelityConfig | None = None, **settings: Any) -> FidelityConfig:
    """``config`` (default ``FidelityConfig()``) with the named fields replaced; ValueError
    naming a keyword that is not a field."""
    if config is None:
        config = FidelityConfig()
    elif not isinstance(config, FidelityConfig):
        raise ValueError(f"config must be a FidelityConfig, got {type(config).__name__}")
    unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(FidelityConfig)})
    if unknown:
        raise ValueError(f"unknown fidelity settings {unknown}; the fields of FidelityConfig are accepted")
    return dataclasses.replace(config, **settings)


class FidelityArrays(NamedTuple):
    """Per-sample fidelity values (leading axes as vmapped, e.g. [S, ...] over seeds).

    agreement, tv: [N, K] marginal values on each tuple's K distinct inputs;
    tv_joint, kl: [N] per tuple; tv_joint_mc_stderr, kl_mc_stderr: [N] their
    label-sampling standard errors (0 when enumerated).
    """

    agreement: jax.Array
    tv: jax.Array
    tv_joint: jax.Array
    tv_joint_mc_stderr: jax.Array
    kl: jax.Array
    kl_mc_stderr: jax.Array


def fidelity_per_sample(
    agent_source: Any,
    agent_state: Any,
    reference_source: Any,
    reference_state: Any,
    prior: Any,
    key: jax.Array,
    cfg: FidelityConfig,
) -> FidelityArrays:
    """Fidelity of an agent to a reference on cfg.num_test fresh test tuples.

    agent_source, reference_source: Agent or callable (as ``kl.model_set``);
    *_state: their states (vmappable); prior: the problem's prior (its inputs);
    key: the evaluation key (test inputs under TEST_TAG, the agent's models under
    MODEL_TAG, the reference's under REFERENCE_MODEL_TAG, label vectors under
    LABEL_TAG). Pure and jittable with cfg static. Returns FidelityArrays.
    """
    input_dim = prior.input_dim
    test_keys = jax.random.split(jax.random.fold_in(key, TEST_TAG), cfg.num_test)
    inputs, pick = jax.vmap(lambda k: polyadic_design(k, prior, cfg.tau, cfg.kappa))(test_keys)
    # inputs [N, K, d], pick [N, tau]
    agent_models, num_agent = model_set(agent_source, agent_state, cfg.method, cfg.num_models, input_dim)
    ref_models, num_ref = model_set(
        reference_source, reference_state, cfg.reference_method, cfg.reference_num_models, input_dim
    )
    num_test, rows = inputs.shape[0], inputs.shape[1]
    num_classes = jax.eval_shape(agent_models, key, inputs[0]).shape[-1]
    if cfg.label_method == "enumerate":
        width = num_classes**cfg.tau
    else:
        width = cfg.num_label_samples * cfg.tau
    chunk = chunk_size(num_test, num_agent + num_ref, max(rows, width), cfg.max_rows)
    num_chunks = -(-num_test // chunk)
    index = jnp.arange(num_chunks * chunk) % num_test  # pad with real tuples, dropped below
    x_chunks = inputs[index].reshape(num_chunks, chunk, rows, input_dim)
    pick_chunks = pick[index].reshape(num_chunks, chunk, cfg.tau)
    label_keys = jax.random.split(jax.random.fold_in(key, LABEL_TAG), num_chunks * chunk)
    label_keys = label_keys.reshape(num_chunks, chunk, *label_keys.shape[1:])
    k_agent = jax.random.fold_in(key, MODEL_TAG)
    k_ref = jax.random.fold_in(key, REFERENCE_MODEL_TAG)

    def score(xs):
        x_chunk, pick_chunk, keys = xs
        flat = x_chunk.reshape(chunk * rows, input_dim)
        la = agent_models(k_agent, flat).reshape(num_agent, chunk, rows, -1)
        lr = ref_models(k_ref, flat).reshape(num_ref, chunk, rows, -1)
        agree, tv = marginal_fidelity(
            la.reshape(num_agent, chunk * rows, -1), lr.reshape(num_ref, chunk * rows, -1)
        )
        gather = pick_chunk[None, :, :, None]
        ja = jnp.take_along_axis(la, gather, axis=2)  # [M, B, tau, C]
        jr = jnp.take_along_axis(lr, gather, axis=2)
        if cfg.label_method == "enumerate":
            tv_j, kl = jax.vmap(joint_fidelity_enumerated, in_axes=(1, 1))(ja, jr)
            zeros = jnp.zeros_like(tv_j)
            tv_se, kl_se = zeros, zeros
        else:
            tv_j, tv_se, kl, kl_se = jax.vmap(
                lambda k, a, r: joint_fidelity_sampled(k, a, r, cfg.num_label_samples),
                in_axes=(0, 1, 1),
            )(keys, ja, jr)
        return agree.reshape(chunk, rows), tv.reshape(chunk, rows), tv_j, tv_se, kl, kl_se

    out = jax.lax.map(score, (x_chunks, pick_chunks, label_keys))
    flat = [o.reshape(num_chunks * chunk, *o.shape[2:])[:num_test] for o in out]
    return FidelityArrays(*flat)


@functools.partial(jax.jit, static_argnames=("cfg",))
def _fidelity_compiled(
    source: Any, state: Any, ref_source: Any, ref_state: Any, prior: Any, key: jax.Array, *, cfg: FidelityConfig
) -> FidelityArrays:
    """``fidelity_per_sample`` compiled once per pair of source structures and config."""
    return fidelity_per_sample(source, state, ref_source, ref_state, prior, key, cfg)


# ---------------------------------------------------------------- host side


def resolve_label_method(label_method: str, tau: int, num_classes: int) -> str:
    """"enumerate" or "sample" for a design; ValueError naming label_method otherwise."""
    check_choice("label_method", label_method, LABEL_METHODS)
    size = num_classes**tau
    if label_method == "auto":
        return "enumerate" if size <= MAX_AUTO_ENUMERATED else "sample"
    if label_method == "enumerate" and size > MAX_ENUMERATED:
        raise ValueError(
            f"label_method='enumerate' handles at most {MAX_ENUMERATED} label vectors, got "
            f"num_classes**tau = {num_classes}**{tau} = {size}; use 'sample' or 'auto'"
        )
    return label_method


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, np.float64).reshape(-1)
    stderr = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else float("nan")
    return float(values.mean()), float(stderr)


def _mc_stderr(per_sample_stderr: np.ndarray) -> float:
    """Standard error of a mean of N independent estimates from their own errors."""
    se = np.asarray(per_sample_stderr, np.float64)
    return float(math.sqrt(np.sum(se**2)) / se.size)


def summarize_fidelity(arrays: FidelityArrays, *, strict: bool = False) -> dict[str, float]:
    """Host-side means of one problem's FidelityArrays (no leading seed axis).

    Returns agreement, agreement_stderr, tv, tv_stderr, tv_joint,
    tv_joint_stderr, tv_joint_mc_stderr, kl_to_reference,
    kl_to_reference_stderr, kl_to_reference_mc_stderr, fraction_finite. The KL
    per-tuple values are clipped as ``kl.summarize`` does (strict: raise
    NonFiniteEstimateError when fewer than half are finite, else NaN).
    """
    a = jax.tree.map(np.asarray, arrays)
    agreement, agreement_se = _mean_se(a.agreement)
    tv, tv_se = _mean_se(a.tv)
    tv_joint, tv_joint_se = _mean_se(a.tv_joint)
    kl, kl_se, fraction = summarize(a.kl, strict=strict)
    finite = np.isfinite(a.kl)
    return {
        "agreement": agreement,
        "agreement_stderr": agreement_se,
        "tv": tv,
        "tv_stderr": tv_se,
        "tv_joint": tv_joint,
        "tv_joint_stderr": tv_joint_se,
        "tv_joint_mc_stderr": _mc_stderr(a.tv_joint_mc_stderr),
        "kl_to_reference": kl,
        "kl_to_reference_stderr": kl_se,
        "kl_to_reference_mc_stderr": _mc_stderr(a.kl_mc_stderr[finite]) if finite.any() else float("nan"),
        "fraction_finite": fraction,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class _ResultSettings:
    """The settings both result classes report (``_result_settings``): the design,
    the label and model-set methods, and each side's model-set size."""

    tau: int
    kappa: int | None
    num_test: int
    label_method: str
    method: str
    reference_method: str
    num_models: int
    reference_num_models: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class FidelityResult(_ResultSettings):
    """Fidelity of an agent to a reference on one problem.

    agreement: share of test inputs where the two marginal predictions have the
    same top class (higher is better); tv: mean marginal TV; tv_joint: mean TV
    of the joint predictions of tau labels (tau = 1: the marginal TV on other
    inputs); kl_to_reference: mean KL(P_ref || P_agent) of the joint
    predictions (clipped as d_KL is; NaN when fewer than half were finite). Each
    has a standard error over test inputs (``*_stderr``); the joint ones also
    the part due to label sampling (``*_mc_stderr``, 0 when enumerated).
    tv_joint_per_sample, kl_per_sample: [num_test] per-tuple values. method,
    reference_method: how each side's model set was built; num_models,
    reference_num_models: its size; label_method: "enumerate" | "sample".
    """

    agreement: float
    agreement_stderr: float
    tv: float
    tv_stderr: float
    tv_joint: float
    tv_joint_stderr: float
    tv_joint_mc_stderr: float
    kl_to_reference: float
    kl_to_reference_stderr: float
    kl_to_reference_mc_stderr: float
    fraction_finite: float
    tv_joint_per_sample: np.ndarray
    kl_per_sample: np.ndarray


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReferenceKLResult(_ResultSettings):
    """d_KL^tau of an agent against a reference's predictive, KL(P_ref || P_agent).

    kl, kl_stderr (over test tuples), kl_mc_stderr (label sampling; 0 when
    enumerated), per_sample [num_test], fraction_finite, and the settings as in
    FidelityResult.
    """

    kl: float
    kl_stderr: float
    kl_mc_stderr: float
    per_sample: np.ndarray
    fraction_finite: float


def _evaluate(
    key: jax.Array, fitted: Sampler, reference: Sampler, problem: TestbedProblem, config: FidelityConfig
) -> tuple[FidelityArrays, FidelityConfig, int, int]:
    """(per-sample arrays, resolved config, models of the fitted side, of the reference side)."""
    check_sampler_and_key(fitted, key)
    try:
        check_sampler_and_key(reference, key)
    except ValueError as error:
        raise ValueError(str(error).replace("sampler", "reference", 1)) from None
    cfg = config.resolve(fitted, reference, problem)
    source, state = split_sampler(fitted)
    ref_source, ref_state = split_sampler(reference)
    input_dim = problem.spec.input_dim
    sizes = []
    for name, (src, st, meth, m) in {
        "fitted": (source, state, cfg.method, cfg.num_models),
        "reference": (ref_source, ref_state, cfg.reference_method, cfg.reference_num_models),
    }.items():
        sizes.append(model_set(src, st, meth, m, input_dim)[1])
        try:
            check_sampler_logits(src, st, meth, key, cfg.tau, input_dim, problem.spec.num_classes)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    arrays = _fidelity_compiled(source, state, ref_source, ref_state, problem.prior, key, cfg=cfg)
    return arrays, cfg, sizes[0], sizes[1]


def _result_settings(cfg: FidelityConfig, num_models: int, reference_num_models: int) -> dict[str, Any]:
    """``_ResultSettings``'s fields from the resolved config and the two model-set sizes."""
    sizes = {"num_models": num_models, "reference_num_models": reference_num_models}
    names = [f.name for f in dataclasses.fields(_ResultSettings) if f.name not in sizes]
    return {**{name: getattr(cfg, name) for name in names}, **sizes}


def posterior_fidelity(
    key: jax.Array,
    fitted: Sampler,
    reference: Sampler,
    problem: TestbedProblem,
    config: FidelityConfig | None = None,
    **settings: Any,
) -> FidelityResult:
    """Agreement, marginal TV, joint TV and KL(P_ref || P_agent) of ``fitted`` against ``reference``.

    key: a jax random key (the same key, the same result); fitted, reference:
    FittedAgent(agent, state) or callables (key, x[n, d]) -> logits [n, C];
    problem: a TestbedProblem (its input distribution, classes and design);
    config: a FidelityConfig (None: the defaults); settings: its fields as
    keywords (``num_test=200``), replacing config's.
    """
    arrays, cfg, m, r = _evaluate(key, fitted, reference, problem, fidelity_config(config, **settings))
    values = summarize_fidelity(arrays, strict=False)
    return FidelityResult(
        **values,
        tv_joint_per_sample=np.asarray(arrays.tv_joint),
        kl_per_sample=np.asarray(arrays.kl),
        **_result_settings(cfg, m, r),
    )


def kl_to_reference(
    key: jax.Array,
    fitted: Sampler,
    reference: Sampler,
    problem: TestbedProblem,
    config: FidelityConfig | None = None,
    **settings: Any,
) -> ReferenceKLResult:
    """d_KL^tau of ``fitted`` with ``reference``'s predictive in place of the environment.

    KL(P_ref || P_agent) of joint predictions of tau labels, averaged over
    num_test test tuples: exact in the label vectors when label_method resolves
    to "enumerate" (num_classes**tau <= 1024 under "auto"), else sampled with a
    stated Monte Carlo error. Arguments as ``posterior_fidelity``. Raises
    NonFiniteEstimateError, as ``estimate_kl`` does, when fewer than half of the
    per-tuple values are finite.
    """
    arrays, cfg, m, r = _evaluate(key, fitted, reference, problem, fidelity_config(config, **settings))
    per_sample = np.asarray(arrays.kl)
    values = summarize_fidelity(arrays, strict=True)  # NonFiniteEstimateError, as estimate_kl
    return ReferenceKLResult(
        kl=values["kl_to_reference"],
        kl_stderr=values["kl_to_reference_stderr"],
        kl_mc_stderr=values["kl_to_reference_mc_stderr"],
        per_sample=per_sample,
        fraction_finite=values["fraction_finite"],
        **_result_settings(cfg, m, r),
    )
