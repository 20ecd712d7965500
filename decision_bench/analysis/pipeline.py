"""`analyze(directory)`: correlations, figures and report from a results directory.

Inputs (see decision_bench.analysis.join for the columns read):
  DIR/testbed.csv   one row per (agent, problem, seed) testbed evaluation
  DIR/bandit.csv    one row per (bandit run, log point)
Outputs:
  DIR/correlations.csv  metric, pearson_log, pearson_ci_low, pearson_ci_high,
                        spearman, spearman_ci_low, spearman_ci_high, n
  DIR/joined.csv        the (metric, agent, seed) points that were correlated
  DIR/fig*.png|pdf      Figs. 2, 5, 7, 8, 9 of paper 000
  DIR/report.md         the conclusions in numbers
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from decision_bench.analysis.correlation import MIN_POINTS, CorrelationResult, correlate
from decision_bench.analysis.figures import all_figures, normalised_kl_table
from decision_bench.analysis.join import (
    BANDIT_COLUMNS,
    METRICS,
    TESTBED_COLUMNS,
    drop_nonfinite_kl,
    join_regret,
    read_table,
)

__all__ = ["AnalysisResult", "CORRELATION_COLUMNS", "analyze", "correlation_table", "render_report"]

CORRELATION_COLUMNS = (
    "metric", "pearson_log", "pearson_ci_low", "pearson_ci_high",
    "spearman", "spearman_ci_low", "spearman_ci_high", "n",
)  # fmt: skip
# Metrics the analysis cannot do without; dkl_10_kappa2 is optional (only the
# high-dimensional sweep measures it).
REQUIRED_METRICS = ("dkl_1", "dkl_10")


@dataclasses.dataclass(frozen=True)
class AnalysisResult:
    correlations: pd.DataFrame  # CORRELATION_COLUMNS, one row per metric
    joined: pd.DataFrame  # metric, agent, seed, kl, regret, seed_matched
    figures: tuple[Path, ...]
    report: Path


def correlation_table(
    joined: pd.DataFrame, num_resamples: int = 1000, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, CorrelationResult]]:
    """Correlates kl with regret per metric over the joined (agent, seed) points.

    Each metric gets its own Generator, derived from (seed, metric index), so
    adding or dropping the optional metric does not change the others' intervals.
    Points with kl <= 0 or regret <= 0 have no logarithm; they are dropped with a
    warning. Raises ValueError if a required metric has fewer than 3 points.
    """
    results: dict[str, CorrelationResult] = {}
    for index, metric in enumerate(METRICS):
        rows = joined[joined["metric"] == metric]
        positive = (rows["kl"] > 0) & (rows["regret"] > 0)
        if not positive.all():
            warnings.warn(
                f"{metric}: dropping {int((~positive).sum())} points with kl <= 0 or regret <= 0 "
                "(the Pearson correlation is on the log scale)",
                RuntimeWarning,
                stacklevel=2,
            )
            rows = rows[positive]
        if len(rows) < MIN_POINTS:
            if metric in REQUIRED_METRICS:
                raise ValueError(
                    f"too few (agent, seed) points to correlate {metric} with regret: {len(rows)} "
                    f"(need >= {MIN_POINTS}); check that testbed.csv and bandit.csv share agents "
                    f"and have tau={METRICS[metric][0]} rows"
                )
            continue
        rng = np.random.default_rng([seed, index])
        results[metric] = correlate(rows["kl"].to_numpy(float), rows["regret"].to_numpy(float), num_resamples, rng)
    table = pd.DataFrame(
        [{"metric": m, **r.as_dict()} for m, r in results.items()], columns=list(CORRELATION_COLUMNS)
    )
    return table, results


def _verdict(low: float, high: float) -> str:
    if not (np.isfinite(low) and np.isfinite(high)):
        return "cannot be decided (the bootstrap interval is undefined)"
    if low > 0:
        return "is significantly positively correlated with regret (the 90% interval excludes 0)"
    if high < 0:
        return "is significantly negatively correlated with regret (the 90% interval excludes 0)"
    return "is not significantly correlated with regret (the 90% interval contains 0)"


def _fmt(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:.3f}"


def _markdown_table(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        cells = [(_fmt(v) if isinstance(v, (float, np.floating)) else str(v)) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_report(
    results: dict[str, CorrelationResult],
    joined: pd.DataFrame,
    testbed: pd.DataFrame,
    figures: list[Path],
    num_resamples: int,
    seed: int,
    notes: Sequence[str] = (),
) -> str:
    """The markdown report: verdicts in numbers, per-agent averages, data notes, figures."""
    names = {
        "dkl_1": "Marginal prediction quality (d_KL^1, tau = 1)",
        "dkl_10": "Joint prediction quality (d_KL^10, tau = 10, iid inputs)",
        "dkl_10_kappa2": "Joint prediction quality with dyadic inputs (d_KL^{10, kappa=2})",
    }
    lines = ["# Does joint prediction quality predict regret?", ""]
    lines.append(
        f"Points are (agent, seed) pairs: testbed d_KL averaged over problems, bandit final regret "
        f"(paper 000 Sec. 5.2). Intervals are the 5th-95th percentiles of {num_resamples} bootstrap "
        f"resamples of the points (seed {seed}). Pearson is computed on log d_KL and log regret; "
        f"Spearman on ranks."
    )
    lines.append("")
    for metric, r in results.items():
        lines.append(
            f"- **{names[metric]}** {_verdict(r.pearson_ci_low, r.pearson_ci_high)}: "
            f"Pearson (log) {_fmt(r.pearson_log)} [{_fmt(r.pearson_ci_low)}, {_fmt(r.pearson_ci_high)}], "
            f"Spearman {_fmt(r.spearman)} [{_fmt(r.spearman_ci_low)}, {_fmt(r.spearman_ci_high)}], n = {r.n}."
        )
    lines.append("")
    if "dkl_1" in results and "dkl_10" in results:
        joint, marginal = results["dkl_10"], results["dkl_1"]
        joint_sig = joint.pearson_ci_low > 0
        marginal_sig = marginal.pearson_ci_low > 0
        summary = (
            f"In short: joint prediction quality {'does' if joint_sig else 'does not'} correlate "
            f"significantly with regret (Pearson log {_fmt(joint.pearson_log)}), and marginal prediction "
            f"quality {'does' if marginal_sig else 'does not'} (Pearson log {_fmt(marginal.pearson_log)})."
        )
        if joint_sig and not marginal_sig:
            summary += " This agrees with paper 000 (Figs. 8 and 9)."
        lines += [summary, ""]
    unmatched = joined[~joined["seed_matched"].astype(bool)]
    if len(unmatched):
        lines += [
            f"Note: {len(unmatched)} of {len(joined)} points had no testbed rows for their bandit seed "
            "and use the agent's testbed average over all seeds instead.",
            "",
        ]
    lines += ["## Per-agent averages", ""]
    wide = joined.pivot_table(index="agent", columns="metric", values="kl", aggfunc="mean")
    regret = joined.groupby("agent")["regret"].mean()
    seeds = joined.groupby("agent")["seed"].nunique()
    summary_table = wide.assign(regret=regret, seeds=seeds).reset_index()
    lines += [_markdown_table(summary_table), ""]
    normalised = normalised_kl_table(testbed)
    if not normalised.empty:
        pivot = normalised.pivot_table(index="agent", columns="metric", values="normalised").reset_index()
        lines += ["## d_KL normalised to mlp (Fig. 2)", "", _markdown_table(pivot), ""]
    if notes:
        lines += ["## Data notes", ""] + [f"- {note}" for note in dict.fromkeys(notes)] + [""]
    if figures:
        lines += ["## Figures", ""]
        lines += [f"![{p.stem}]({p.name})" for p in figures if p.suffix == ".png"]
        lines.append("")
    return "\n".join(lines)


def analyze(directory, num_resamples: int = 1000, seed: int = 0) -> AnalysisResult:
    """Reads DIR/testbed.csv and DIR/bandit.csv; writes correlations, figures, report.

    Args:
      directory: the results directory.
      num_resamples: bootstrap resamples per correlation (>= 1).
      seed: seed of the bootstrap Generators.

    Raises:
      FileNotFoundError naming a missing file; ValueError naming missing columns
      or saying that too few points exist to correlate.
    """
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, (int, np.integer)) or num_resamples < 1:
        raise ValueError(f"num_resamples must be an integer >= 1, got {num_resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"results directory not found: {directory}")
    # Data-quality warnings (dropped rows, unmatched agents, skipped figures) are
    # recorded so the report lists them too, then re-issued to the caller.
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            testbed = drop_nonfinite_kl(read_table(directory / "testbed.csv", TESTBED_COLUMNS))
            bandit = read_table(directory / "bandit.csv", BANDIT_COLUMNS)
            joined = join_regret(testbed, bandit)
            table, results = correlation_table(joined, num_resamples, int(seed))
            table.to_csv(directory / "correlations.csv", index=False)
            joined.to_csv(directory / "joined.csv", index=False)
            figures = all_figures(testbed, bandit, joined, results, directory)
    finally:
        # Re-issued even when an error follows: the warnings often explain it.
        for record in caught:
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)
    notes = [str(r.message) for r in caught if issubclass(r.category, RuntimeWarning)]
    report = directory / "report.md"
    text = render_report(results, joined, testbed, figures, int(num_resamples), int(seed), notes)
    report.write_text(text, encoding="utf-8")
    return AnalysisResult(correlations=table, joined=joined, figures=tuple(figures), report=report)
