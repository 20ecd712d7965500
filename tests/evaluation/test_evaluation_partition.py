"""The random-partition estimator (paper 003, Alg. 4) against a plain numpy version."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp, ndtri, softmax

from decision_bench.evaluation.likelihood import PROBIT_CLIP, _partition


def partition_reference(logits, y, planes, offsets, clip=PROBIT_CLIP):
    """Alg. 4 written out with dicts and loops. logits [M, B, tau, C] -> [B]."""
    num_models, batch, tau, _ = logits.shape
    out = []
    for b in range(batch):
        log_p = log_softmax(logits[:, b], -1)[:, np.arange(tau), y[b]]  # [M, tau]
        probits = np.clip(ndtri(softmax(logits[:, b], -1)), -clip, clip).reshape(num_models, -1)
        side = probits @ planes[b].T + offsets[b] > 0
        cells: dict = {}
        for m in range(num_models):
            cells.setdefault(tuple(side[m]), []).append(m)
        terms = [
            np.log(len(ms) / num_models) + (logsumexp(log_p[ms], axis=0) - np.log(len(ms))).sum()
            for ms in cells.values()
        ]
        out.append(logsumexp(terms))
    return np.array(out)


# 60 samples per chunk: the size at which an XLA:CPU simplification bug once
# dropped a term (see likelihood._partition).
@pytest.mark.parametrize("batch", [3, 60])
def test_partition_matches_numpy_reference(batch):
    rng = np.random.default_rng(batch)
    num_models, tau, num_classes, planes_n = 200, 10, 2, 7
    logits = (3 * rng.normal(size=(num_models, batch, tau, num_classes))).astype(np.float32)
    y = rng.integers(0, num_classes, (batch, tau))
    planes = rng.normal(size=(batch, planes_n, tau * num_classes)).astype(np.float32)
    offsets = rng.normal(size=(batch, planes_n)).astype(np.float32)
    got = np.asarray(jax.jit(_partition, static_argnums=4)(logits, y, planes, offsets, PROBIT_CLIP))
    want = partition_reference(logits.astype(np.float64), y, planes, offsets)
    close = np.abs(got - want) <= 1e-4 * (1 + np.abs(want))
    # A model whose probit vector lies within float32 rounding of a hyperplane may
    # fall on the other side in float32 than in float64; allow one such sample.
    assert close.sum() >= batch - 1


def test_partition_of_identical_models_is_exact():
    """All models equal -> one cell -> the model's own likelihood."""
    rng = np.random.default_rng(0)
    batch, tau = 60, 10
    one = rng.normal(size=(1, batch, tau, 2)).astype(np.float32)
    logits = np.repeat(one, 50, axis=0)
    y = rng.integers(0, 2, (batch, tau))
    planes = rng.normal(size=(batch, 7, tau * 2)).astype(np.float32)
    offsets = rng.normal(size=(batch, 7)).astype(np.float32)
    got = np.asarray(jax.jit(_partition, static_argnums=4)(logits, y, planes, offsets, PROBIT_CLIP))
    want = log_softmax(one[0].astype(np.float64), -1)[
        np.arange(batch)[:, None], np.arange(tau)[None], y
    ].sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
