"""Correlation coefficients with percentile-bootstrap confidence intervals.

Paper 000 Sec. 5.2 correlates testbed d_KL with bandit regret over (agent, seed)
points, with "bootstrap sampling to estimate confidence intervals on the
correlation coefficient on a logarithmic scale at the 5th and 95th percentiles".
Here: Pearson's r of (log x, log y), Spearman's rho of (x, y) (rank based, so the
log does not change it), and for each the 5th and 95th percentiles of the
statistic over `num_resamples` resamples of the points with replacement.

All functions are pure: randomness comes from an explicit seed or
numpy.random.Generator.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "CorrelationResult",
    "bootstrap_correlations",
    "correlate",
    "pearson",
    "pearson_log",
    "spearman",
]

MIN_POINTS = 3  # with 2 points any correlation is +-1


def _as_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D arrays of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    return x, y


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r along the last axis. x, y: [..., n] -> [...]; NaN where a row is constant."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    sxy = np.sum(xc * yc, axis=-1)
    sxx = np.sum(xc * xc, axis=-1)
    syy = np.sum(yc * yc, axis=-1)
    denom = np.sqrt(sxx * syy)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(denom > 0, sxy / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(r, -1.0, 1.0)


def pearson(x, y) -> float:
    """Pearson correlation of two 1-D arrays of length n >= 2; NaN if one is constant."""
    x, y = _as_pair(x, y)
    return float(_pearson_rows(x, y))


def pearson_log(x, y) -> float:
    """Pearson correlation of (log x, log y); x and y must be > 0."""
    x, y = _as_pair(x, y)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("pearson_log needs x > 0 and y > 0")
    return pearson(np.log(x), np.log(y))


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties), as scipy.stats.spearmanr."""
    x, y = _as_pair(x, y)
    return float(_pearson_rows(stats.rankdata(x), stats.rankdata(y)))


def bootstrap_correlations(
    x, y, num_resamples: int = 1000, rng: np.random.Generator | int | None = 0
) -> dict[str, np.ndarray]:
    """Pearson-log and Spearman statistics over bootstrap resamples of the points.

    Args:
      x, y: [n] positive values (one per agent-seed point).
      num_resamples: B, the number of resamples (each draws n points with replacement).
      rng: a numpy Generator or a seed for one.

    Returns:
      {"pearson_log": [B], "spearman": [B]}. A resample whose x or y is constant
      (possible for small n) has no correlation and gives NaN.
    """
    x, y = _as_pair(x, y)
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, (int, np.integer)) or num_resamples < 1:
        raise ValueError(f"num_resamples must be an integer >= 1, got {num_resamples!r}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("bootstrap_correlations needs x > 0 and y > 0 (Pearson is on the log scale)")
    rng = np.random.default_rng(rng)
    idx = rng.integers(0, len(x), size=(int(num_resamples), len(x)))  # [B, n]
    xs, ys = x[idx], y[idx]
    return {
        "pearson_log": _pearson_rows(np.log(xs), np.log(ys)),
        # Ranks are recomputed within each resample: duplicated points tie.
        "spearman": _pearson_rows(stats.rankdata(xs, axis=-1), stats.rankdata(ys, axis=-1)),
    }


@dataclasses.dataclass(frozen=True)
class CorrelationResult:
    """Point estimates and 90% percentile-bootstrap intervals for one (x, y) set."""

    pearson_log: float
    pearson_ci_low: float
    pearson_ci_high: float
    spearman: float
    spearman_ci_low: float
    spearman_ci_high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


def correlate(
    x,
    y,
    num_resamples: int = 1000,
    rng: np.random.Generator | int | None = 0,
    percentiles: tuple[float, float] = (5.0, 95.0),
) -> CorrelationResult:
    """Pearson (log scale) and Spearman correlation with bootstrap intervals.

    Args:
      x, y: [n] positive values, n >= 3.
      num_resamples: number of bootstrap resamples.
      rng: numpy Generator or seed.
      percentiles: the interval's lower and upper percentiles (paper: 5th, 95th).

    Degenerate resamples (constant x or y) are left out of the percentiles.
    """
    x, y = _as_pair(x, y)
    if len(x) < MIN_POINTS:
        raise ValueError(f"need at least {MIN_POINTS} points to correlate, got {len(x)}")
    lo, hi = percentiles
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"percentiles must satisfy 0 <= low < high <= 100, got {percentiles!r}")
    draws = bootstrap_correlations(x, y, num_resamples, rng)

    def interval(values: np.ndarray) -> tuple[float, float]:
        values = values[np.isfinite(values)]
        if values.size == 0:
            return float("nan"), float("nan")
        low, high = np.percentile(values, [lo, hi])
        return float(low), float(high)

    p_low, p_high = interval(draws["pearson_log"])
    s_low, s_high = interval(draws["spearman"])
    return CorrelationResult(
        pearson_log=pearson_log(x, y),
        pearson_ci_low=p_low,
        pearson_ci_high=p_high,
        spearman=spearman(x, y),
        spearman_ci_low=s_low,
        spearman_ci_high=s_high,
        n=len(x),
    )
