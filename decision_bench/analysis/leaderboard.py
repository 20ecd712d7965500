"""The leaderboard's two tables: each agent's testbed scores, and paired differences.

A problem is one (setting, seed): the same environment, training data and test
inputs for every agent scored on it (``experiments.baselines``). Both tables use the
stratified mean of ``analysis.tables``: a setting's figure is the mean over its seeds
with the standard error over seeds; an agent's figure is the mean over settings, its
standard error sqrt(sum of the settings' se^2) / number of settings (settings have
independent environments).

``scores(testbed)``: one row per agent, the metrics of ``tables.testbed_table``
(d_KL^1, d_KL^10, d_KL^{10,kappa=2} where measured, accuracy, ECE), each with ``_se``.

``paired_differences(testbed, agents, baselines)``: for every (agent, baseline,
metric), the mean over problems of agent minus baseline, with its stratified standard
error computed from the per-problem differences. Environment luck is common to both
sides of a difference and cancels: for agents that respond alike to each problem these
errors are much smaller than those of the scores (a difference of 0.01 can be significant
where the scores' intervals overlap); for very different agents they are about the same.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from decision_bench.analysis.tables import testbed_table

_SETTING = ["input_dim", "num_train", "temperature"]
_FAMILY = ["prior", "activation", "hidden_sizes"]
# metric -> (tau, kappa (None: iid), column)
METRICS = {
    "dkl_1": (1, None, "kl"),
    "dkl_10": (10, None, "kl"),
    "dkl_10_kappa2": (10, 2, "kl"),
    "accuracy": (1, None, "accuracy"),
    "ece": (1, None, "ece"),
}


def scores(testbed: pd.DataFrame) -> pd.DataFrame:
    """One row per agent (in order of appearance): each metric's stratified mean and
    ``<metric>_se``, and the number of settings (``tables.testbed_table``)."""
    return testbed_table(testbed)


def metric_values(testbed: pd.DataFrame) -> pd.DataFrame:
    """Long form: one row per (agent, setting, seed, metric) with its ``value``."""
    testbed = testbed.reset_index(drop=True)
    kappa = testbed["kappa"] if "kappa" in testbed else pd.Series(np.nan, index=testbed.index)
    keys = [c for c in _FAMILY + _SETTING if c in testbed.columns]
    parts = []
    for metric, (tau, k, column) in METRICS.items():
        if column not in testbed:
            continue
        mask = (testbed["tau"] == tau) & (kappa.isna() if k is None else kappa == k)
        chosen = testbed.loc[mask, ["agent", *keys, "seed", column]].rename(columns={column: "value"})
        parts.append(chosen.assign(metric=metric))
    return pd.concat(parts, ignore_index=True)


def paired_differences(testbed: pd.DataFrame, agents, baselines) -> pd.DataFrame:
    """Rows (agent, baseline, metric, difference, difference_se, settings, problems).

    difference: the stratified mean over problems of agent - baseline; every problem
    of the baseline must have been scored for the agent (and vice versa), else
    ValueError naming the first unmatched problem: a paired comparison on partly
    different problems would not be paired. difference_se is NaN where a setting has a
    single seed (no spread to estimate it from).
    """
    values = metric_values(testbed)
    keys = [c for c in _FAMILY + _SETTING if c in values.columns] + ["seed", "metric"]
    rows = []
    for agent in agents:
        mine = values[values["agent"] == agent].drop(columns="agent")
        for baseline in baselines:
            theirs = values[values["agent"] == baseline].drop(columns="agent")
            both = mine.merge(theirs, on=keys, how="outer", suffixes=("_agent", "_baseline"), indicator=True)
            unmatched = both[both["_merge"] != "both"]
            if len(unmatched):
                first = unmatched.iloc[0]
                where = ", ".join(f"{k}={first[k]}" for k in keys)
                side = agent if first["_merge"] == "left_only" else baseline
                raise ValueError(
                    f"{agent} and {baseline} were not scored on the same problems: only {side} has ({where})"
                )
            both = both.assign(difference=both["value_agent"] - both["value_baseline"])
            for metric, group in both.groupby("metric", sort=False):
                per = group.groupby([c for c in keys if c not in ("seed", "metric")])["difference"].agg(
                    ["mean", "std", "count"]
                )
                se = per["std"] / np.sqrt(per["count"])
                rows.append({
                    "agent": agent,
                    "baseline": baseline,
                    "metric": metric,
                    "difference": float(per["mean"].mean()),
                    "difference_se": float(np.sqrt((se**2).sum()) / len(per)),
                    "settings": len(per),
                    "problems": int(per["count"].sum()),
                })
    table = pd.DataFrame(rows, columns=["agent", "baseline", "metric", "difference", "difference_se", "settings", "problems"])
    return with_significance(table)


def with_significance(paired: pd.DataFrame, level: float = 0.05) -> pd.DataFrame:
    """``paired`` with z (difference / its standard error), beyond_2se (|z| > 2: about
    one comparison in twenty is marked by chance alone when there is no difference) and
    beyond_bonferroni (|z| beyond the two-sided ``level`` threshold divided among all the
    table's comparisons, z_{1 - level / (2 K)}: a table of K = 40 differences marks none by
    chance at level 0.05 in 19 tables of 20). NaN standard errors give neither mark."""
    from scipy.stats import norm  # noqa: PLC0415 - scipy's import is slow; only the leaderboard needs it

    z = paired["difference"] / paired["difference_se"]
    count = max(int(z.notna().sum()), 1)
    threshold = float(norm.ppf(1 - level / (2 * count)))
    return paired.assign(
        z=z,
        beyond_2se=z.abs() > 2,
        beyond_bonferroni=z.abs() > threshold,
    )


def markdown(score_table: pd.DataFrame, paired: pd.DataFrame, notes: list[str]) -> str:
    """The leaderboard as Markdown: the scores (mean +- se), then the paired
    differences (agent - baseline, +- se; lower d_KL and ECE, higher accuracy, is better)."""
    metrics = [m for m in METRICS if m in score_table.columns]
    lines = ["# Leaderboard", ""]
    lines += [f"- {note}" for note in notes]
    lines += ["", "## Scores (stratified mean over settings +- standard error)", ""]
    lines.append("| agent | " + " | ".join(metrics) + " |")
    lines.append("|---" * (len(metrics) + 1) + "|")
    for _, row in score_table.iterrows():
        cells = [f"{row[m]:.4f} +- {row[m + '_se']:.4f}" for m in metrics]
        lines.append(f"| {row['agent']} | " + " | ".join(cells) + " |")
    lines += ["", "## Paired differences (agent - baseline on the same problems, +- standard error)", ""]
    if paired.empty:
        lines.append("(no baseline to compare with)")
    else:
        marked = paired if "beyond_2se" in paired.columns else with_significance(paired)
        marks = ["**" if b else ("*" if t else "") for t, b in zip(marked["beyond_2se"], marked["beyond_bonferroni"])]
        wide = paired.assign(
            text=[f"{d:+.4f} +- {s:.4f}{m}" for d, s, m in zip(paired["difference"], paired["difference_se"], marks)]
        ).pivot_table(index=["agent", "baseline"], columns="metric", values="text", aggfunc="first", sort=False)
        shown = [m for m in METRICS if m in wide.columns]
        lines.append("| agent | baseline | " + " | ".join(shown) + " |")
        lines.append("|---" * (len(shown) + 2) + "|")
        for (agent, baseline), row in wide.iterrows():
            lines.append(f"| {agent} | {baseline} | " + " | ".join(str(row[m]) for m in shown) + " |")
        count = int(marked["z"].notna().sum())
        lines += ["", f"\\* beyond 2 standard errors; \\*\\* also beyond the Bonferroni threshold for all {count} "
                  "differences of this table (two-sided 5%). With many comparisons, about 1 in 20 differences "
                  "is beyond 2 standard errors by chance alone: read single stars as leads, not findings."]
    return "\n".join(lines) + "\n"
