"""Correlation coefficients with percentile-bootstrap confidence intervals.

Paper 000 Sec. 5.2 correlates testbed d_KL with bandit regret over (agent, seed)
points, with "bootstrap sampling to estimate confidence intervals on the
correlation coefficient on a logarithmic scale at the 5th and 95th percentiles".
Here: Pearson's r of (log x, log y), Spearman's rho of (x, y) (rank based, so the
log does not change it), and for each the 5th and 95th percentiles of the
statistic over `num_resamples` resamples of the points with replacement.

All functions are pure: randomness comes from an explicit seed or
numpy.random.Generator.

How many resamples an interval needs (`min_resamples`): a percentile interval
reads its bounds from the tails of the bootstrap distribution, so each tail must
hold enough draws for its percentile to be more than the most extreme one or two
values. The rule here: at least MIN_TAIL_DRAWS = 10 draws beyond each bound, i.e.
num_resamples * tail >= 10 with tail the smaller tail fraction; for the 90%
interval used throughout (5th-95th percentiles) that is >= 200 resamples.
Smaller counts are refused (ValueError naming num_resamples). When degenerate
resamples (constant x or y) are left out and fewer than that many finite draws
remain, the interval is NaN and the verdict undecided.

An interval that excludes its own estimate (`excludes_estimate`) is possible:
with few or tied points the bootstrap distribution of a correlation can be very
skewed (resamples that repeat points are pulled towards +-1). Such an interval
is reported with `SKEWED_NOTE` beside it and never used for a verdict.

How many points a verdict needs (`MIN_VERDICT_POINTS` = 5): with n points a
resample with at most two distinct points has a correlation of exactly +-1 (or
none), whatever the data. Such resamples make up 78% of all at n = 3, 34% at
n = 4, 10% at n = 5 and 2% at n = 6. At n <= 4 a third or more of the draws carry
no information about the data, so both 5% tails, and with them the verdict, are
read from them (3 perfectly correlated points give the interval [1, 1]); there are
also only C(2n - 1, n) = 10 (n = 3) or 35 (n = 4) distinct resamples. From n = 5
nine draws in ten use three or more distinct points, and 5 is the usual smallest
sample for a Pearson correlation test; a verdict at n = 5 is still a weak one
(its 10% can reach a 5% tail), which the n printed beside it shows. An interval
over fewer points is still computed and reported; it decides nothing.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "CorrelationResult",
    "DEFAULT_PERCENTILES",
    "MIN_TAIL_DRAWS",
    "MIN_VERDICT_POINTS",
    "SKEWED_NOTE",
    "check_num_resamples",
    "excludes_estimate",
    "interval_text",
    "min_resamples",
    "percentile_interval",
    "positive_points",
    "bootstrap_correlations",
    "correlate",
    "pearson",
    "pearson_rows",
    "pearson_log",
    "spearman",
]

MIN_POINTS = 3  # with 2 points any correlation is +-1
MIN_VERDICT_POINTS = 5  # fewer points: the interval is reported but gives no verdict (module doc)
MIN_TAIL_DRAWS = 10  # bootstrap draws needed beyond each bound of a percentile interval
DEFAULT_PERCENTILES = (5.0, 95.0)  # the papers' 90% interval
SKEWED_NOTE = "interval excludes the estimate: skewed bootstrap, no verdict from it"


def _tail_fraction(percentiles: tuple[float, float]) -> float:
    low, high = percentiles
    return min(float(low), 100.0 - float(high)) / 100.0


def min_resamples(percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> int:
    """The fewest resamples whose percentile interval has MIN_TAIL_DRAWS draws beyond
    each bound: ceil(10 / tail), 200 for the (5, 95) percentiles. An interval with a
    bound at 0 or 100 (the sample minimum or maximum) is never well estimated: refused."""
    tail = _tail_fraction(percentiles)
    if tail <= 0:
        raise ValueError(f"percentiles must lie strictly inside (0, 100) for a bootstrap interval, got {percentiles!r}")
    # Rounded before the ceiling: (1 - 0.9) / 2 is 0.04999..., which must still give 200.
    return int(np.ceil(round(MIN_TAIL_DRAWS / tail, 6)))


def check_num_resamples(
    num_resamples: Any, percentiles: tuple[float, float] = DEFAULT_PERCENTILES, name: str = "num_resamples"
) -> int:
    """num_resamples as an int, or a one-line ValueError naming `name` and the minimum
    for an interval at `percentiles` (see min_resamples)."""
    minimum = min_resamples(percentiles)
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, (int, np.integer)) or num_resamples < minimum:
        level = float(percentiles[1]) - float(percentiles[0])
        raise ValueError(
            f"{name} must be an integer >= {minimum} for a {level:g}% percentile interval "
            f"(>= {MIN_TAIL_DRAWS} resamples beyond each bound), got {num_resamples!r}"
        )
    return int(num_resamples)


def percentile_interval(draws: np.ndarray, percentiles: tuple[float, float] = DEFAULT_PERCENTILES) -> tuple[float, float]:
    """The (low, high) percentiles of the finite draws; NaN when fewer finite draws
    remain than min_resamples(percentiles) asks for (too many degenerate resamples)."""
    values = np.asarray(draws, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size < min_resamples(percentiles):
        return float("nan"), float("nan")
    low, high = np.percentile(values, list(percentiles))
    return float(low), float(high)


def excludes_estimate(estimate: float, low: float, high: float) -> bool:
    """True when a defined interval does not contain its own point estimate."""
    if not (np.isfinite(estimate) and np.isfinite(low) and np.isfinite(high)):
        return False
    return not (low <= estimate <= high)


def interval_text(estimate: float, low: float, high: float, digits: int = 3) -> str:
    """"est [low, high]", with SKEWED_NOTE in parentheses when the interval excludes the estimate."""

    def fmt(value: float) -> str:
        return "nan" if not np.isfinite(value) else f"{value:.{digits}f}"

    text = f"{fmt(estimate)} [{fmt(low)}, {fmt(high)}]"
    return text + f" ({SKEWED_NOTE})" if excludes_estimate(estimate, low, high) else text


def _as_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D arrays of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    return x, y


def positive_points(rows: Any, where: str, stacklevel: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(kl, regret) of the rows (columns kl and regret) where both are > 0: the Pearson
    correlation is on the log scale. The others (NaN ones too) are dropped with one
    RuntimeWarning starting with ``where``; stacklevel as seen from the caller."""
    kl, regret = rows["kl"].to_numpy(float), rows["regret"].to_numpy(float)
    positive = (kl > 0) & (regret > 0)  # NaN compares False: dropped too
    if not positive.all():
        warnings.warn(
            f"{where}: dropping {int((~positive).sum())} points with kl <= 0 or regret <= 0 "
            "(the Pearson correlation is on the log scale)",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )
    return kl[positive], regret[positive]


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
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
    return float(pearson_rows(x, y))


def pearson_log(x, y) -> float:
    """Pearson correlation of (log x, log y); x and y must be > 0."""
    x, y = _as_pair(x, y)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("pearson_log needs x > 0 and y > 0")
    return pearson(np.log(x), np.log(y))


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties), as scipy.stats.spearmanr."""
    x, y = _as_pair(x, y)
    return float(pearson_rows(stats.rankdata(x), stats.rankdata(y)))


def bootstrap_correlations(
    x, y, num_resamples: int = 1000, rng: np.random.Generator | int | None = 0
) -> dict[str, np.ndarray]:
    """Pearson-log and Spearman statistics over bootstrap resamples of the points.

    Args:
      x, y: [n] positive values (one per agent-seed point).
      num_resamples: B, the number of resamples (each draws n points with replacement);
        any B >= 1 (the draws themselves; an interval from them needs
        min_resamples(), which `correlate` enforces).
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
        "pearson_log": pearson_rows(np.log(xs), np.log(ys)),
        # Ranks are recomputed within each resample: duplicated points tie.
        "spearman": pearson_rows(stats.rankdata(xs, axis=-1), stats.rankdata(ys, axis=-1)),
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
    percentiles: tuple[float, float] = DEFAULT_PERCENTILES,
) -> CorrelationResult:
    """Pearson (log scale) and Spearman correlation with bootstrap intervals.

    Args:
      x, y: [n] positive values, n >= 3.
      num_resamples: number of bootstrap resamples, >= min_resamples(percentiles)
        (200 for the default 90% interval).
      rng: numpy Generator or seed.
      percentiles: the interval's lower and upper percentiles (paper: 5th, 95th).

    Degenerate resamples (constant x or y) are left out of the percentiles; if
    fewer than min_resamples(percentiles) finite draws remain, the interval is NaN.
    """
    x, y = _as_pair(x, y)
    if len(x) < MIN_POINTS:
        raise ValueError(f"need at least {MIN_POINTS} points to correlate, got {len(x)}")
    lo, hi = percentiles
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"percentiles must satisfy 0 <= low < high <= 100, got {percentiles!r}")
    check_num_resamples(num_resamples, percentiles)
    draws = bootstrap_correlations(x, y, num_resamples, rng)
    p_low, p_high = percentile_interval(draws["pearson_log"], percentiles)
    s_low, s_high = percentile_interval(draws["spearman"], percentiles)
    return CorrelationResult(
        pearson_log=pearson_log(x, y),
        pearson_ci_low=p_low,
        pearson_ci_high=p_high,
        spearman=spearman(x, y),
        spearman_ci_low=s_low,
        spearman_ci_high=s_high,
        n=len(x),
    )
