"""`analyze(directory)`: correlations, figures and report from a results directory.

Inputs (see decision_bench.analysis.inputs for the required and optional columns):
  DIR/testbed.csv   one row per (agent, problem, seed) testbed evaluation
  DIR/bandit.csv    one row per (bandit run, log point)
Both are checked in full (structure and values) before anything is written.
Outputs:
  DIR/correlations.csv  metric, pearson_log, pearson_ci_low, pearson_ci_high,
                        spearman, spearman_ci_low, spearman_ci_high, n, level;
                        one row per (level, metric)
  DIR/joined.csv        the (metric, agent, seed) points that were correlated,
                        with their relative values (kl_relative, regret_relative)
  DIR/joined_agents.csv the (metric, agent) points of the agent level
  DIR/table2.csv        per-agent testbed averages beside paper 000's Table 2
  DIR/fig*.png|pdf      Figs. 2, 5, 7, 8, 9 of paper 000, and fig10 (agent level)
  DIR/report.md         the conclusions in numbers
  DIR/robustness_*, DIR/regret_by_dimension.csv, fig16/fig17 when the results
                        hold several generative families or bandit input
                        dimensions (decision_bench.analysis.robustness_outputs);
                        the headline analysis then uses one slice of them, the
                        default family relu (50, 50) at its smallest bandit
                        dimension, and report.md says so
  DIR/fidelity.csv, fidelity_correlations.csv, fig_fidelity_vs_dkl10 when
                        testbed.csv has the columns of `testbed --reference`
                        (decision_bench.analysis.fidelity)
All outputs are written to a hidden folder in DIR first and moved into place
only when every one is complete (report.md last): a failure part way leaves the
previous outputs as they were.

Levels (the `level` column of correlations.csv):
  agent_seed           points = (agent, seed): testbed d_KL of seed s averaged over
                       problems, bandit final regret of seed s (paper 000 Sec. 5.2).
                       These rows keep their earlier meaning and numbers.
  agent                points = agents: the agent's testbed mean d_KL over all seeds
                       and problems, and its mean final regret over bandit seeds; the
                       bootstrap resamples agents. Few points: n is the number of agents.
  agent_seed_relative  points = (agent, seed) with shared per-seed environment effects
                       divided out: d_KL / (mean d_KL of all agents on testbed seed s),
                       regret / (mean regret of all agents on bandit seed s).
  agent_median_regret  as agent, with the agent's median final regret over bandit seeds.
  agent_log_regret     as agent, with the agent's mean over bandit seeds of log final
                       regret (stored as its exponential, the geometric mean, so that
                       Pearson (log) is the Pearson of log d_KL and the mean log regret).
The last two are robust to heavy tails: per-seed regret is heavy-tailed (an agent
that keeps pulling a bad arm on one seed can hold most of its total regret there),
and a mean over few seeds can follow one seed. They were chosen before any results
were seen and are reported beside the agent level; the headline uses the agent
level (the mean), as before. The report also names the agents whose mean regret is
dominated by a few seeds (HEAVY_TAIL_RULE).
Why: testbed seed s and bandit seed s are unrelated environments, each shared by
every agent. The paper averages each seed's point over many testbed and bandit
problems, so these shared effects average out; at small scale they dominate the
agent_seed points and can make its correlation say more about which seeds were
hard than about agents. The agent and relative levels remove them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from decision_bench._src.extras import FIGURES_SKIPPED, plotting_available
from decision_bench._src.files import atomic_write_text, check_output_dir, checksum_path, write_results_csv
from decision_bench.analysis.correlation import (
    MIN_POINTS,
    MIN_VERDICT_POINTS,
    SKEWED_NOTE,
    CorrelationResult,
    check_num_resamples,
    correlate,
    excludes_estimate,
    interval_text,
    min_resamples,
    positive_points,
)
from decision_bench.analysis.fidelity import fidelity_outputs
from decision_bench.analysis.figures import (
    all_figures,
    normalised_kl_table,
    plot_normalised_kl,
    plot_prior_functions,
)
from decision_bench.analysis.inputs import read_bandit, read_testbed
from decision_bench.analysis.join import (
    METRICS,
    agent_level_points,
    drop_nonfinite_kl,
    join_regret,
    relative_points,
)
from decision_bench.analysis.outputs import staged_outputs
from decision_bench.analysis.robustness_outputs import (
    RobustnessOutputs,
    main_slice,
    needs_robustness,
    render_robustness,
    robustness_outputs,
)
from decision_bench.analysis.tables import TABLE2_METRICS, table2_side_by_side

__all__ = [
    "AnalysisResult",
    "CORRELATION_COLUMNS",
    "HEAVY_TAIL_MIN_SEEDS",
    "HEAVY_TAIL_SHARE",
    "HEAVY_TAIL_TOP_SEEDS",
    "LEVELS",
    "ROBUST_AGENT_LEVELS",
    "analyze",
    "correlation_levels",
    "correlation_table",
    "heavy_tailed_agents",
    "robust_agent_points",
    "render_report",
    "too_few_for_verdict",
    "verdict",
]

# The first eight are the columns every consumer relies on; `level` says which
# points a row correlates (see LEVELS), `verdict` what the report calls it (verdict()).
CORRELATION_COLUMNS = (
    "metric", "pearson_log", "pearson_ci_low", "pearson_ci_high",
    "spearman", "spearman_ci_low", "spearman_ci_high", "n", "level", "verdict",
)  # fmt: skip
LEVELS = ("agent_seed", "agent", "agent_seed_relative", "agent_median_regret", "agent_log_regret")
# The agent levels with a statistic of the per-seed regrets other than the mean: the
# agent_level_points column each correlates (agent_log_regret takes exp of its column).
ROBUST_AGENT_LEVELS = {"agent_median_regret": "regret_median", "agent_log_regret": "regret_log_mean"}
# An agent's mean regret is "dominated by a few seeds" when its HEAVY_TAIL_TOP_SEEDS
# worst seeds hold more than HEAVY_TAIL_SHARE of its total regret; judged only with at
# least HEAVY_TAIL_MIN_SEEDS seeds (with 4 or fewer, equal seeds already give 2 of them
# 50% or more). Chosen before results were seen.
HEAVY_TAIL_TOP_SEEDS = 2
HEAVY_TAIL_SHARE = 0.5
HEAVY_TAIL_MIN_SEEDS = 5
LEVEL_DESCRIPTIONS = {
    "agent_seed": "points are (agent, seed) pairs: testbed d_KL of seed s averaged over problems, bandit final "
    "regret of seed s (paper 000 Sec. 5.2)",
    "agent": "points are agents: testbed d_KL averaged over all seeds and problems, final regret averaged over "
    "bandit seeds; the bootstrap resamples agents",
    "agent_seed_relative": "points are (agent, seed) pairs with shared seed effects divided out: d_KL / mean d_KL "
    "of all agents on that testbed seed, regret / mean regret of all agents on that bandit seed",
    "agent_median_regret": "points are agents, as at the agent level, with the agent's median final regret over "
    "bandit seeds in place of the mean (a robust row, reported beside the agent level)",
    "agent_log_regret": "points are agents, as at the agent level, with the agent's mean over bandit seeds of log "
    "final regret in place of the mean regret (a robust row, reported beside the agent level; agents with a "
    "seed of zero regret have no logarithm and are left out)",
}
# The three verdicts (paper 000's hypothesis is a positive correlation: higher
# d_KL, higher regret), decided by the 90% bootstrap interval of Pearson (log),
# and three ways of declining to decide (too_few_for_verdict's text is the third).
POSITIVE = "significantly positive"
NEGATIVE = "significantly negative (opposite to the papers)"
INSIGNIFICANT = "not significant"
UNDECIDED = "undecided (the bootstrap interval is undefined)"
SKEWED = "undecided (the bootstrap interval excludes the estimate: a skewed bootstrap)"
# Metrics the analysis cannot do without; dkl_10_kappa2 is optional (only the
# high-dimensional sweep measures it).
REQUIRED_METRICS = ("dkl_1", "dkl_10")


@dataclasses.dataclass(frozen=True)
class AnalysisResult:
    correlations: pd.DataFrame  # CORRELATION_COLUMNS, one row per (level, metric)
    joined: pd.DataFrame  # metric, agent, seed, kl, regret, seed_matched, kl_relative, regret_relative
    figures: tuple[Path, ...]
    report: Path
    agents: pd.DataFrame | None = None  # metric, agent, kl, regret, num_testbed_rows, num_bandit_seeds
    levels: dict | None = None  # {level: {metric: CorrelationResult}}
    robustness: RobustnessOutputs | None = None  # several families or bandit dimensions only
    figures_skipped: bool = False  # matplotlib (the `plot` extra) is not installed


def _correlate_level(
    points: pd.DataFrame,
    level: str,
    num_resamples: int,
    seed: int,
    required: Sequence[str] = (),
    unit: str = "(agent, seed) points",
) -> dict[str, CorrelationResult]:
    """Correlates kl with regret per metric over `points` (columns metric, kl, regret).

    Each metric gets its own Generator, derived from (seed, metric index) for the
    agent_seed level (as before levels existed) and (seed, metric index, level
    index) for the others, so adding or dropping a metric or a level does not change
    the other rows' intervals. Points with kl <= 0 or regret <= 0 have no logarithm;
    they are dropped with a warning. A metric in `required` with fewer than
    MIN_POINTS points raises ValueError; another is skipped with a warning.
    """
    results: dict[str, CorrelationResult] = {}
    level_index = LEVELS.index(level)
    for index, metric in enumerate(METRICS):
        rows = points[points["metric"] == metric]
        if rows.empty:
            continue
        kl, regret = positive_points(rows, f"{metric} ({level} level)", stacklevel=3)
        if len(kl) < MIN_POINTS:
            message = (
                f"too few {unit} to correlate {metric} with regret at the {level} level: {len(kl)} "
                f"(need >= {MIN_POINTS})"
            )
            if metric in required:
                raise ValueError(
                    f"{message}; check that testbed.csv and bandit.csv share agents "
                    f"and have tau={METRICS[metric][0]} rows"
                )
            warnings.warn(f"{message}; left out", RuntimeWarning, stacklevel=3)
            continue
        key = [seed, index] if level == "agent_seed" else [seed, index, level_index]
        results[metric] = correlate(kl, regret, num_resamples, np.random.default_rng(key))
    return results


def _table(levels: dict[str, dict[str, CorrelationResult]]) -> pd.DataFrame:
    records = [
        {"metric": metric, **result.as_dict(), "level": level, "verdict": verdict(result)}
        for level, results in levels.items()
        for metric, result in results.items()
    ]
    return pd.DataFrame(records, columns=list(CORRELATION_COLUMNS))


def correlation_table(
    joined: pd.DataFrame, num_resamples: int = 1000, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, CorrelationResult]]:
    """Correlates kl with regret per metric over the joined (agent, seed) points.

    The agent_seed level only (see correlation_levels for all three). Raises
    ValueError if a required metric has fewer than 3 points.
    """
    results = _correlate_level(joined, "agent_seed", num_resamples, seed, required=REQUIRED_METRICS)
    return _table({"agent_seed": results}), results


def correlation_levels(
    joined: pd.DataFrame,
    agents: pd.DataFrame,
    num_resamples: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, dict[str, CorrelationResult]]]:
    """All levels (LEVELS): the correlations table and {level: {metric: result}}.

    Args:
      joined: the (agent, seed) points from join_regret, with kl_relative and
        regret_relative from relative_points (without them the relative level is
        left out).
      agents: the (metric, agent) points from agent_level_points (without its
        regret_median and regret_log_mean columns the robust agent levels are left out).
      num_resamples, seed: the bootstrap.

    Raises ValueError if a required metric has fewer than 3 agent_seed points;
    the other levels leave out a metric with too few points, with a warning.
    """
    levels = {"agent_seed": _correlate_level(joined, "agent_seed", num_resamples, seed, REQUIRED_METRICS)}
    levels["agent"] = _correlate_level(agents, "agent", num_resamples, seed, unit="agents")
    if {"kl_relative", "regret_relative"} <= set(joined.columns):
        relative = joined[["metric", "kl_relative", "regret_relative"]].rename(
            columns={"kl_relative": "kl", "regret_relative": "regret"}
        )
        relative = relative[relative["kl"].notna() & relative["regret"].notna()]
        levels["agent_seed_relative"] = _correlate_level(relative, "agent_seed_relative", num_resamples, seed)
    for level, column in ROBUST_AGENT_LEVELS.items():
        if column in agents.columns:
            levels[level] = _correlate_level(robust_agent_points(agents, level), level, num_resamples, seed, unit="agents")
    return _table(levels), levels


def robust_agent_points(agents: pd.DataFrame, level: str) -> pd.DataFrame:
    """The (metric, kl, regret) points of a robust agent level (ROBUST_AGENT_LEVELS) from
    agent_level_points: regret is the agent's median regret, or exp of its mean log
    regret (so that the log-scale Pearson correlates the mean log regret itself)."""
    column = ROBUST_AGENT_LEVELS[level]
    regret = agents[column].to_numpy(np.float64)
    if level == "agent_log_regret":
        regret = np.exp(regret)
    return pd.DataFrame({"metric": agents["metric"].to_numpy(), "kl": agents["kl"].to_numpy(np.float64), "regret": regret})


def heavy_tailed_agents(agents: pd.DataFrame) -> pd.DataFrame:
    """The agents of agent_level_points whose mean regret is dominated by a few seeds.

    Returns one row per agent (columns agent, num_bandit_seeds, top2_share,
    dominated), dominated = top2_share > HEAVY_TAIL_SHARE with at least
    HEAVY_TAIL_MIN_SEEDS seeds (False with fewer: not judged), sorted by agent.
    """
    columns = ["agent", "num_bandit_seeds", "top2_share"]
    if agents is None or agents.empty or "top2_share" not in agents.columns:
        return pd.DataFrame(columns=columns + ["dominated"])
    # Regret does not depend on the metric: every metric's row of an agent carries the same seeds.
    per_agent = agents.drop_duplicates("agent")[columns].sort_values("agent", ignore_index=True)
    judged = per_agent["num_bandit_seeds"].to_numpy() >= HEAVY_TAIL_MIN_SEEDS
    dominated = judged & (per_agent["top2_share"].to_numpy(np.float64) > HEAVY_TAIL_SHARE)
    return per_agent.assign(dominated=dominated)


def heavy_tail_section(agents: pd.DataFrame | None) -> list[str]:
    """The report's lines naming the agents whose mean regret rests on a few seeds."""
    table = heavy_tailed_agents(agents)
    if table.empty:
        return []
    rule = (
        f"The rule (chosen before results were seen): an agent's mean regret is dominated by a few seeds when "
        f"its {HEAVY_TAIL_TOP_SEEDS} seeds with the most regret hold more than {HEAVY_TAIL_SHARE:.0%} of its "
        f"total regret over seeds; judged for agents with at least {HEAVY_TAIL_MIN_SEEDS} bandit seeds."
    )
    lines = ["## Agents whose mean regret rests on a few seeds", "", rule, ""]
    dominated = table[table["dominated"]]
    unjudged = table[table["num_bandit_seeds"] < HEAVY_TAIL_MIN_SEEDS]["agent"].tolist()
    if len(dominated):
        named = ", ".join(
            f"{row.agent} ({row.top2_share:.0%} of its regret on {HEAVY_TAIL_TOP_SEEDS} of {row.num_bandit_seeds} seeds)"
            for row in dominated.itertuples()
        )
        lines.append(f"Dominated by a few seeds: {named}. For these agents the median and mean-log rows are the "
                     "more telling ones.")
    elif len(unjudged) < len(table):
        lines.append("No judged agent's mean regret is dominated by a few seeds by this rule.")
    if unjudged:
        lines.append(f"Not judged (fewer than {HEAVY_TAIL_MIN_SEEDS} bandit seeds): {', '.join(unjudged)}.")
    lines.append("")
    return lines


def too_few_for_verdict(n: int) -> str:
    """The verdict of a correlation over fewer than MIN_VERDICT_POINTS points."""
    return f"too few points for a verdict (n = {int(n)} < {MIN_VERDICT_POINTS})"


def verdict(result: CorrelationResult) -> str:
    """POSITIVE, NEGATIVE, INSIGNIFICANT, UNDECIDED or SKEWED from the 90% interval of Pearson (log),
    or too_few_for_verdict(n) below MIN_VERDICT_POINTS points.

    The papers' hypothesis is a positive correlation (higher d_KL, higher regret).
    The rule: significant when the interval excludes 0 AND contains the point
    estimate. An interval that excludes its own estimate comes from a skewed
    bootstrap distribution (few or tied points); it says little about the sign, so
    it gives SKEWED (undecided), never a significance, whichever side 0 is on.
    An undefined interval (too few finite resamples) gives UNDECIDED. Fewer than
    MIN_VERDICT_POINTS points decide nothing whatever the interval: most resamples
    of 3 or 4 points hold at most two distinct ones, whose correlation is +-1
    (correlation module doc).
    """
    if result.n < MIN_VERDICT_POINTS:
        return too_few_for_verdict(result.n)
    low, high = result.pearson_ci_low, result.pearson_ci_high
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDED
    if excludes_estimate(result.pearson_log, low, high):
        return SKEWED
    if low > 0:
        return POSITIVE
    if high < 0:
        return NEGATIVE
    return INSIGNIFICANT


def _fmt(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:.3f}"


def _markdown_table(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        cells = [(_fmt(v) if isinstance(v, (float, np.floating)) else str(v)) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


METRIC_NAMES = {
    "dkl_1": "Marginal prediction quality (d_KL^1, tau = 1)",
    "dkl_10": "Joint prediction quality (d_KL^10, tau = 10, iid inputs)",
    "dkl_10_kappa2": "Joint prediction quality with dyadic inputs (d_KL^{10, kappa=2})",
}
SHORT_NAMES = {"dkl_1": "marginal d_KL^1", "dkl_10": "joint d_KL^10", "dkl_10_kappa2": "dyadic d_KL^{10,kappa=2}"}
LEVEL_TITLES = {
    "agent_seed": "(agent, seed) points",
    "agent": "agent points",
    "agent_seed_relative": "(agent, seed) points relative to each seed's mean",
    "agent_median_regret": "agent points, median regret over seeds",
    "agent_log_regret": "agent points, mean log regret over seeds",
}
AGENT_LEVELS = ("agent", *ROBUST_AGENT_LEVELS)  # levels whose points are agents


def _numbers(r: CorrelationResult) -> str:
    return (
        f"Pearson (log) {interval_text(r.pearson_log, r.pearson_ci_low, r.pearson_ci_high)}, "
        f"Spearman {interval_text(r.spearman, r.spearman_ci_low, r.spearman_ci_high)}, n = {r.n}"
    )


def _level_summary(level: str, results: dict[str, CorrelationResult]) -> str:
    """One sentence: each metric's verdict at one level, with the same words as the bullets."""
    n = max((r.n for r in results.values()), default=0)
    unit = "agents" if level in AGENT_LEVELS else "points"
    parts = [
        f"{SHORT_NAMES[m]} {verdict(r)} (Pearson log {_fmt(r.pearson_log)})" for m, r in results.items()
    ]
    sentence = f"{LEVEL_TITLES[level]} (n = {n} {unit}): " + "; ".join(parts) + "."
    if "dkl_10" in results and "dkl_1" in results:
        joint, marginal = verdict(results["dkl_10"]), verdict(results["dkl_1"])
        if results["dkl_10"].n < MIN_VERDICT_POINTS:
            pass  # no verdict, so nothing to compare with paper 000
        elif joint == POSITIVE and marginal != POSITIVE:
            sentence += " This agrees with paper 000 (Figs. 8 and 9: joint significant, marginal not)."
        elif joint != POSITIVE:
            sentence += " This does not reproduce paper 000's Fig. 9 (joint significantly positive)."
        else:
            sentence += " Joint and marginal are both significantly positive; paper 000 found only joint."
    return sentence


# The level whose points answer the papers' question (does an agent that predicts
# jointly better decide better?), most direct first; the headline uses the first present.
HEADLINE_LEVELS = ("agent", "agent_seed_relative", "agent_seed")


def headline(levels: dict[str, dict[str, CorrelationResult]]) -> str:
    """One plain paragraph: does d_KL^10 correlate significantly positively with regret
    while d_KL^1 does not, at the level that answers the papers' question."""
    level = next((lv for lv in HEADLINE_LEVELS if levels.get(lv)), None)
    if level is None:
        return "No correlation could be computed (too few points)."
    results = levels[level]
    joint, marginal = results.get("dkl_10"), results.get("dkl_1")
    if joint is None or marginal is None:
        return f"At the {LEVEL_TITLES[level]} level, d_KL^10 or d_KL^1 could not be correlated (too few points)."
    j, m = verdict(joint), verdict(marginal)
    reproduced = j == POSITIVE and m != POSITIVE
    text = (
        f"**Headline ({LEVEL_TITLES[level]}, n = {joint.n}).** Joint d_KL^10 vs regret: {j} "
        f"(Pearson log {interval_text(joint.pearson_log, joint.pearson_ci_low, joint.pearson_ci_high)}); "
        f"marginal d_KL^1 vs regret: {m} "
        f"(Pearson log {interval_text(marginal.pearson_log, marginal.pearson_ci_low, marginal.pearson_ci_high)}). "
    )
    if reproduced:
        return text + "This run reproduces the papers' headline: joint prediction quality predicts regret, marginal does not."
    if j == POSITIVE:
        return text + "Joint quality predicts regret, but so does marginal quality: only half of the papers' headline."
    if joint.n < MIN_VERDICT_POINTS:
        return text + (
            f"Too few points to say whether this run shows the papers' headline: a verdict needs at least "
            f"{MIN_VERDICT_POINTS} (a bootstrap of fewer is mostly resamples of one or two distinct points)."
        )
    return text + (
        "This run does NOT show the papers' headline (d_KL^10 significantly positively correlated with regret); "
        "see the per-agent table for which agents break the ordering."
    )


def testbed_sections(testbed: pd.DataFrame) -> list[str]:
    """The report's testbed-only sections: averages beside paper 000's Table 2 and
    d_KL normalised to mlp (Fig. 2). Markdown lines."""
    lines: list[str] = []
    table2 = table2_side_by_side(testbed)
    if not table2.empty:
        shown = ["agent", "settings"] + [
            c for m in (*TABLE2_METRICS, "dkl_10_kappa2") for c in (m, f"{m}_se", f"paper_{m}") if c in table2
        ]
        lines += [
            "## Testbed averages beside paper 000's Table 2",
            "",
            "Stratified means over this run's testbed settings (standard errors over seeds); paper 000's "
            "Table 2 averages its whole 2-D sweep (T in {1, ..., 1000}, all three temperatures), so the "
            "levels are comparable only when this run covers the same settings.",
            "",
            _markdown_table(table2[shown]),
            "",
        ]
    normalised = normalised_kl_table(testbed)
    if not normalised.empty:
        pivot = normalised.pivot_table(index="agent", columns="metric", values="normalised").reset_index()
        lines += ["## d_KL normalised to mlp (Fig. 2)", "", _markdown_table(pivot), ""]
    return lines


def render_report(
    results,
    joined: pd.DataFrame,
    testbed: pd.DataFrame,
    figures: list[Path],
    num_resamples: int,
    seed: int,
    notes: Sequence[str] = (),
    agents: pd.DataFrame | None = None,
    scope: str | None = None,
    sections: Sequence[str] = (),
) -> str:
    """The markdown report: verdicts in numbers per level, per-agent averages, data notes, figures.

    `results` is {level: {metric: CorrelationResult}} (from correlation_levels), or
    {metric: CorrelationResult} for the agent_seed level alone. `agents` is the
    agent-level table (agent_level_points); without it the per-agent table averages
    `joined`. `scope` names the slice the headline used when the results hold
    several families or bandit dimensions; `sections` are further markdown lines
    (the robustness section), placed before the data notes.
    """
    if results and all(isinstance(r, CorrelationResult) for r in results.values()):
        results = {"agent_seed": results}
    levels = {level: results[level] for level in LEVELS if results.get(level)}
    lines = ["# Does joint prediction quality predict regret?", "", headline(levels), ""]
    if scope:
        lines += [
            f"The results hold several generative families or bandit input dimensions; the headline and the "
            f"sections up to the robustness section use one slice: {scope}.",
            "",
        ]
    lines.append(
        "The papers' hypothesis is a positive correlation: agents with higher testbed d_KL (worse predictions) "
        "have higher bandit regret. A correlation is called significantly positive or significantly negative "
        f"when the 90% bootstrap interval of Pearson (log) excludes 0 (5th-95th percentiles of {num_resamples} "
        f"resamples of the points, seed {seed}) and contains the point estimate, and not significant otherwise; "
        f"with fewer than {MIN_VERDICT_POINTS} points it gets no verdict (most bootstrap resamples of 3 or 4 "
        "points hold at most two distinct ones, whose correlation is +-1 whatever the data). "
        f"An interval that excludes its own estimate is marked \"{SKEWED_NOTE}\": with few or tied points the "
        "bootstrap distribution is skewed, and such a row is undecided whichever side of 0 it lies. An interval "
        f"needs {min_resamples()} finite resamples (10 beyond each bound); with fewer it is nan and undecided. "
        "Pearson is computed on log d_KL and log regret; Spearman on ranks."
    )
    lines.append("")
    lines += [
        "**Which level answers the papers' question.** The papers ask whether agents that predict jointly better "
        "decide better, and their per-seed points average over many testbed and bandit problems, so environment "
        "effects shared by all agents average out. Here testbed seed s and bandit seed s are unrelated "
        "environments shared by every agent, so at small scale the agent_seed points can be dominated by "
        "which seeds happened to be hard or easy rather than by the agents; the agent level (one point per "
        "agent: few points, wide intervals) and the agent_seed_relative level "
        "(shared seed effects divided out) answer the papers' question, the agent_seed level is kept for "
        "comparison with paper 000's Figs. 8-9.",
        "",
    ]
    if any(level in levels for level in ROBUST_AGENT_LEVELS):
        lines += [
            "**Robust agent rows.** Per-seed regret is heavy-tailed, so an agent's mean over a few seeds can "
            "follow one seed. The agent points are also correlated with each agent's median regret "
            "(agent_median_regret) and with its mean log regret (agent_log_regret) over seeds. These rows were "
            "chosen before any results were seen and are reported beside the agent level; the headline keeps "
            "the agent level's mean regret.",
            "",
        ]
    for level, level_results in levels.items():
        description = LEVEL_DESCRIPTIONS[level]
        lines += [f"## Level `{level}`: {LEVEL_TITLES[level]}", "", description[0].upper() + description[1:] + ".", ""]
        for metric, r in level_results.items():
            lines.append(f"- **{METRIC_NAMES[metric]}**: {verdict(r)}: {_numbers(r)}.")
        lines.append("")
    if levels:
        lines += ["## In short", ""]
        lines += [f"- {_level_summary(level, level_results)}" for level, level_results in levels.items()]
        lines.append("")
    unmatched = joined[~joined["seed_matched"].astype(bool)]
    if len(unmatched):
        lines += [
            f"Note: {len(unmatched)} of {len(joined)} points had no testbed rows for their bandit seed "
            "and use the agent's testbed average over all seeds instead.",
            "",
        ]
    lines += ["## Per-agent averages", ""]
    if agents is not None and not agents.empty:
        lines.append(
            "The agent-level points: d_KL averaged over all testbed seeds and problems, final regret over "
            "bandit seeds."
        )
        lines.append("")
        wide = agents.pivot_table(index="agent", columns="metric", values="kl", aggfunc="mean")
        regret = agents.groupby("agent")["regret"].first()
        seeds = agents.groupby("agent")["num_bandit_seeds"].first()
        if "regret_median" in agents.columns:
            regret_median = agents.groupby("agent")["regret_median"].first()
    else:
        wide = joined.pivot_table(index="agent", columns="metric", values="kl", aggfunc="mean")
        regret = joined.groupby("agent")["regret"].mean()
        seeds = joined.groupby("agent")["seed"].nunique()
    summary_table = wide.assign(regret=regret, seeds=seeds)
    if agents is not None and "regret_median" in agents.columns:
        summary_table = summary_table.assign(median_regret=regret_median)
    summary_table = summary_table.reset_index()
    lines += [_markdown_table(summary_table), ""]
    lines += heavy_tail_section(agents)
    lines += testbed_sections(testbed)
    lines += list(sections)
    if notes:
        lines += ["## Data notes", ""] + [f"- {note}" for note in dict.fromkeys(notes)] + [""]
    if figures:
        lines += ["## Figures", ""]
        lines += [f"![{p.stem}]({p.name})" for p in figures if p.suffix == ".png"]
        lines.append("")
    return "\n".join(lines)


def _unverified_notes(directory: Path, names: Sequence[str]) -> list[str]:
    """A note per input without a checksum file: made by hand or by another tool,
    it was read as given (its structure and values checked, its completeness not)."""
    return [
        f"{name} has no checksum file ({checksum_path(directory / name).name}): read as an unverified "
        "file (made by hand or by another tool); a cut-short copy cannot be detected"
        for name in names
        if not checksum_path(directory / name).is_file()
    ]


def analyze(directory, num_resamples: int = 1000, seed: int = 0) -> AnalysisResult:
    """Reads DIR/testbed.csv and DIR/bandit.csv; writes correlations, figures, report.

    Args:
      directory: the results directory.
      num_resamples: bootstrap resamples per correlation, >= 200 (min_resamples():
        10 resamples beyond each bound of the 90% interval).
      seed: seed of the bootstrap Generators.

    Both files are checked in full before any output is written, and the
    outputs are moved into place together only when all are written (see the
    module doc), so an error leaves DIR's previous outputs unchanged. Figures
    need matplotlib (the `plot` extra): without it the tables and report.md are
    written, the report notes the skipped figures and the result's
    ``figures_skipped`` is True.

    Raises:
      FileNotFoundError naming a missing file; ValueError (one line) naming the
      file, row and column of a malformed or out-of-range input (see
      decision_bench.analysis.inputs), or saying that too few points exist to
      correlate or that DIR is not writable.
    """
    check_num_resamples(num_resamples)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"results directory not found: {directory}")
    # Every input is read and checked before the first output is written.
    testbed_rows = read_testbed(directory / "testbed.csv")
    if not (directory / "bandit.csv").exists() and (directory / "testbed.json").exists():
        # A `decision-bench testbed` run (its testbed.json beside it): no regret to correlate.
        check_output_dir(directory, flag="results directory")
        return _analyze_testbed_only(directory, testbed_rows, int(num_resamples), int(seed))
    bandit = read_bandit(directory / "bandit.csv")
    check_output_dir(directory, flag="results directory")
    # Without the `plot` extra the tables and the report are the whole analysis.
    draw = plotting_available()
    with staged_outputs(directory, last=("report.md",)) as stage:
        with recorded_warnings() as caught:
            all_testbed = drop_nonfinite_kl(testbed_rows)
            testbed, main_bandit, scope = all_testbed, bandit, None
            if needs_robustness(all_testbed, bandit):
                testbed, main_bandit, scope = main_slice(all_testbed, bandit)
            joined = relative_points(join_regret(testbed, main_bandit))
            agents = agent_level_points(testbed, joined)
            table, levels = correlation_levels(joined, agents, num_resamples, int(seed))
            tables = {
                "correlations.csv": table,
                "joined.csv": joined,
                "joined_agents.csv": agents,
                "table2.csv": table2_side_by_side(testbed),
            }
            for name, frame in tables.items():
                write_results_csv(stage / name, frame)
            staged = []
            if draw:
                staged = all_figures(
                    testbed, main_bandit, joined, levels["agent_seed"], stage, agents, levels["agent"]
                )
            robust = None
            if scope is not None:
                robust = robustness_outputs(
                    all_testbed, bandit, stage, int(num_resamples), int(seed), draw_figures=draw
                )
                staged += list(robust.figures)
            # testbed --reference: distance to the reference posterior (analysis/fidelity.py);
            # writes nothing and adds no section without the fidelity columns.
            fidelity = fidelity_outputs(testbed, stage, int(num_resamples), int(seed), draw_figures=draw)
            staged += list(fidelity.figures)
        notes = [str(r.message) for r in caught if issubclass(r.category, RuntimeWarning)]
        notes += list(robust.notes) if robust is not None else []
        notes += _unverified_notes(directory, ("testbed.csv", "bandit.csv"))
        notes += [] if draw else [FIGURES_SKIPPED]
        figures = [directory / path.name for path in staged]  # where they are once moved
        sections = render_robustness(robust) if robust is not None else ()
        text = render_report(
            levels, joined, testbed, figures, int(num_resamples), int(seed), notes, agents, scope, sections
        )
        text += ("\n" + fidelity.report) if fidelity.report else ""
        atomic_write_text(stage / "report.md", text)
    return AnalysisResult(
        correlations=table,
        joined=joined,
        figures=tuple(figures),
        report=directory / "report.md",
        agents=agents,
        levels=levels,
        robustness=robust,
        figures_skipped=not draw,
    )


@contextlib.contextmanager
def recorded_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Records every warning of the block (RuntimeWarnings always, even repeated: the data
    notes of the report, e.g. dropped rows, unmatched agents, skipped figures) and
    re-issues them to the caller when it ends, also when an error follows: the warnings
    often explain it. Yields the list of records."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            yield caught
    finally:
        for record in caught:
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)


def _analyze_testbed_only(directory: Path, testbed_rows: pd.DataFrame, num_resamples: int, seed: int) -> AnalysisResult:
    """The analysis of a testbed run without bandit results: table2.csv, Figs. 2 and 5,
    the distance to a reference (``testbed --reference``) and a report; no correlation
    with regret. Outputs are staged and moved into place together, as in ``analyze``."""
    draw = plotting_available()  # as in analyze: no figures without the `plot` extra
    with staged_outputs(directory, last=("report.md",)) as stage:
        with recorded_warnings() as caught:
            testbed = drop_nonfinite_kl(testbed_rows)
            write_results_csv(stage / "table2.csv", table2_side_by_side(testbed))
            staged = []
            if draw:
                staged = plot_normalised_kl(testbed, stage) + plot_prior_functions(testbed, stage)
            fidelity = fidelity_outputs(testbed, stage, num_resamples, seed, draw_figures=draw)
            staged += list(fidelity.figures)
        notes = [str(r.message) for r in caught if issubclass(r.category, RuntimeWarning)]
        notes += _unverified_notes(directory, ("testbed.csv",))
        notes += [] if draw else [FIGURES_SKIPPED]
        figures = [directory / path.name for path in staged]
        lines = [
            "# Testbed results",
            "",
            "This directory holds testbed results only (no bandit.csv): the correlation of prediction "
            "quality with regret needs `decision-bench reproduce` or a bandit run beside them.",
            "",
            *testbed_sections(testbed),
        ]
        if fidelity.report:
            lines += [fidelity.report, ""]
        if notes:
            lines += ["## Data notes", ""] + [f"- {note}" for note in dict.fromkeys(notes)] + [""]
        if figures:
            lines += ["## Figures", ""] + [f"- {path.name}" for path in figures] + [""]
        atomic_write_text(stage / "report.md", "\n".join(lines))
    return AnalysisResult(
        correlations=pd.DataFrame(columns=list(CORRELATION_COLUMNS)),
        joined=pd.DataFrame(),
        figures=tuple(figures),
        report=directory / "report.md",
        figures_skipped=not draw,
    )
