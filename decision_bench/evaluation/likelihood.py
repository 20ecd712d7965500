"""Agent log-likelihoods of test tau-samples: exact, Monte Carlo and random partition.

Everything here is a pure, jittable function of arrays. An agent's belief is
represented by a *model set*: a function ``models(key, x[n, d]) -> [M, n, C]``
that returns the logits of M models on all n inputs at once. The same key gives
the same M models for every call, so the test tau-samples can be processed in
chunks and still all be scored by the same model draws (paper 000, Alg. 3 uses
one set of M models per test sample; sharing them across test samples keeps the
estimate unbiased per sample and is what makes evaluation fast).

Estimators of log p_hat(y_{1:tau} | x_{1:tau}), each [N] for N tau-samples:

- ``"mixture"``: log (1/M) sum_m prod_t p_m(y_t | x_t), computed as a logsumexp
  of summed log-probabilities, so tau = 100 does not underflow. With the M
  members of a finite ensemble this is exact; with M sampled models it is the
  Monte Carlo estimate of paper 000, Alg. 3.
- ``"partition"``: paper 003, App. A.1, Alg. 4. Each model's probits
  Phi^{-1}(p_m(c | x_t)), clipped to [-clip, clip] and stacked over (t, c), are
  cut by ``num_hyperplanes`` random hyperplanes into at most 2^H cells; within a
  cell the models' probabilities of the observed labels are averaged per t and
  the likelihood is sum_cells (count / M) prod_t mean_p.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri

ModelSet = Callable[[jax.Array, jax.Array], jax.Array]  # (key, x[n, d]) -> [M, n, C]

ESTIMATORS = ("mixture", "partition")
NUM_HYPERPLANES = 7  # paper 003, Alg. 4
PROBIT_CLIP = 5.0  # paper 003, Alg. 4: |probit| <= 5

# Largest number of (model, input) rows evaluated at once. Bounds peak memory:
# a 50-unit hidden layer over this many rows is ~100 MB in f32.
DEFAULT_MAX_ROWS = 2**19


def chunk_size(num_test: int, num_models: int, tau: int, max_rows: int = DEFAULT_MAX_ROWS) -> int:
    """Test tau-samples per chunk so that num_models * chunk * tau <= max_rows (at least 1)."""
    return max(1, min(num_test, max_rows // max(1, num_models * tau)))


def _per_model_log_lik(logits: jax.Array, y: jax.Array) -> jax.Array:
    """log p_m(y_t | x_t) for each model, chunk sample and position.

    logits: [M, B, tau, C], y: [B, tau] -> [M, B, tau].
    """
    log_p = jax.nn.log_softmax(logits, axis=-1)
    labels = jnp.broadcast_to(y[None, :, :, None], log_p.shape[:-1] + (1,))
    return jnp.take_along_axis(log_p, labels, axis=-1)[..., 0]


def _mixture(logits: jax.Array, y: jax.Array) -> jax.Array:
    """log (1/M) sum_m prod_t p_m(y_t|x_t). logits: [M, B, tau, C], y: [B, tau] -> [B]."""
    num_models = logits.shape[0]
    joint = _per_model_log_lik(logits, y).sum(-1)  # [M, B]
    return jax.nn.logsumexp(joint, axis=0) - jnp.log(num_models)


def _partition(
    logits: jax.Array, y: jax.Array, planes: jax.Array, offsets: jax.Array, clip: float
) -> jax.Array:
    """Alg. 4 on a chunk of B tau-samples, each with its own hyperplanes.

    logits: [M, B, tau, C]; y: [B, tau]; planes: [B, H, tau * C]; offsets: [B, H].
    Returns [B] log p_hat.
    """
    num_models, batch, tau, num_classes = logits.shape
    num_planes = planes.shape[1]
    num_cells = 2**num_planes
    log_p = _per_model_log_lik(logits, y)  # [M, B, tau]
    probits = jnp.clip(ndtri(jax.nn.softmax(logits, axis=-1)), -clip, clip)
    probits = probits.reshape(num_models, batch, tau * num_classes)
    side = jnp.einsum("mbw,bhw->mbh", probits, planes) + offsets > 0  # [M, B, H]
    cell = (side.astype(jnp.int32) * (2 ** jnp.arange(num_planes, dtype=jnp.int32))).sum(-1)
    # One flat segment id per (sample, cell), so each reduction is one scatter.
    segment = (cell + num_cells * jnp.arange(batch, dtype=jnp.int32)).reshape(-1)  # [M * B]
    num_segments = batch * num_cells
    flat_log_p = log_p.reshape(num_models * batch, tau)
    counts = jax.ops.segment_sum(jnp.ones_like(segment, jnp.float32), segment, num_segments)
    occupied = counts > 0  # [B * K]
    # Mean probability within a cell, in log space: shifting by the cell's own
    # maximum keeps confident models (p ~ 1e-40) from underflowing to log 0.
    cell_max = jax.ops.segment_max(flat_log_p, segment, num_segments)  # [B * K, tau]
    shift = jnp.where(occupied[:, None], cell_max, 0.0)
    sums = jax.ops.segment_sum(jnp.exp(flat_log_p - shift[segment]), segment, num_segments)
    log_sum = (shift + jnp.log(jnp.where(occupied[:, None], sums, 1.0))).sum(-1)  # [B * K]
    log_count = jnp.log(jnp.maximum(counts, 1.0))
    # log(count / M) + sum_t log(sum_t / count). The tau * log(count) term is
    # written out rather than summed over a broadcast: XLA:CPU (jax 0.10.2)
    # dropped "sum_t (a_t - log count)[:, None]"'s broadcast term for chunks of
    # ~50 samples or more (caught by tests/evaluation/test_evaluation_partition.py).
    per_cell = log_count - jnp.log(num_models) + log_sum - tau * log_count
    per_cell = jnp.where(occupied, per_cell, -jnp.inf).reshape(batch, num_cells)
    return jax.nn.logsumexp(per_cell, axis=-1)


def agent_log_likelihoods(
    models: ModelSet,
    key: jax.Array,
    x: jax.Array,
    y: jax.Array,
    *,
    num_models: int,
    estimator: str = "mixture",
    num_hyperplanes: int = NUM_HYPERPLANES,
    probit_clip: float = PROBIT_CLIP,
    max_rows: int = DEFAULT_MAX_ROWS,
    pick: jax.Array | None = None,
) -> jax.Array:
    """log p_hat(y_{1:tau} | x_{1:tau}) for N test tau-samples under a model set.

    models: (key, x[n, d]) -> [num_models, n, C], the same models for the same key;
    key: drawn once into the model set (and the hyperplanes for "partition");
    x: [N, tau, d]; y: [N, tau] int labels. Returns [N] f32.

    pick: None, or [N, tau] i32 when x holds each sample's K distinct inputs
    [N, K, d] and position t of sample n is x[n, pick[n, t]] (a polyadic design,
    ``envs.polyadic_design``). The models then run on K inputs per sample instead
    of tau, and their logits are gathered: the same values, a fraction of the work.

    The N tau-samples are scored in chunks (``lax.map``) of at most ``max_rows``
    (model, input) rows, all with the same models.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {list(ESTIMATORS)}, got {estimator!r}")
    num_test, rows, input_dim = x.shape  # rows: K distinct inputs per sample, or tau
    tau = y.shape[1]
    chunk = chunk_size(num_test, num_models, rows, max_rows)
    num_chunks = -(-num_test // chunk)
    # Pad by repeating real samples (not zeros: a zero input is invalid for some
    # priors, e.g. coins) and drop the padding at the end.
    index = jnp.arange(num_chunks * chunk) % num_test
    x_chunks = x[index].reshape(num_chunks, chunk, rows, input_dim)
    y_chunks = y[index].reshape(num_chunks, chunk, tau)
    # None (an empty pytree) when the rows are the tau positions themselves.
    pick_chunks = None if pick is None else pick[index].reshape(num_chunks, chunk, tau)
    k_models, k_planes = jax.random.split(key)

    def chunk_logits(x_chunk: jax.Array, pick_chunk: jax.Array) -> jax.Array:
        logits = models(k_models, x_chunk.reshape(chunk * rows, input_dim))
        logits = logits.reshape(logits.shape[0], chunk, rows, logits.shape[-1])
        if pick_chunk is None:
            return logits  # [M, B, tau, C]
        return jnp.take_along_axis(logits, pick_chunk[None, :, :, None], axis=2)

    if estimator == "mixture":

        def score(xs):
            x_chunk, y_chunk, pick_chunk = xs
            return _mixture(chunk_logits(x_chunk, pick_chunk), y_chunk)

        out = jax.lax.map(score, (x_chunks, y_chunks, pick_chunks))
    else:
        k_a, k_b = jax.random.split(k_planes)
        width = tau * jax.eval_shape(models, k_models, x[0]).shape[-1]
        # One set of hyperplanes per test tau-sample, as each lives in its own
        # probit space (its own inputs).
        planes = jax.random.normal(k_a, (num_chunks * chunk, num_hyperplanes, width))
        offsets = jax.random.normal(k_b, (num_chunks * chunk, num_hyperplanes))
        planes = planes.reshape(num_chunks, chunk, num_hyperplanes, width)
        offsets = offsets.reshape(num_chunks, chunk, num_hyperplanes)

        def score(xs):
            x_chunk, y_chunk, pick_chunk, p_chunk, o_chunk = xs
            logits = chunk_logits(x_chunk, pick_chunk)
            return _partition(logits, y_chunk, p_chunk, o_chunk, probit_clip)

        out = jax.lax.map(score, (x_chunks, y_chunks, pick_chunks, planes, offsets))
    return out.reshape(-1)[:num_test]
