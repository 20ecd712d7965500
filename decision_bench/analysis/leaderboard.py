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


def _pairs(frame: pd.DataFrame, agents, baselines, keys, what: str):
    """(agent, baseline, both) for every agent and baseline in turn: the two agents'
    rows of ``frame`` joined on keys (columns suffixed _agent and _baseline); ValueError
    naming the first problem only one side has: a comparison on partly different
    problems would not be paired."""
    for agent in agents:
        mine = frame[frame["agent"] == agent].drop(columns="agent")
        for baseline in baselines:
            theirs = frame[frame["agent"] == baseline].drop(columns="agent")
            both = mine.merge(theirs, on=keys, how="outer", suffixes=("_agent", "_baseline"), indicator=True)
            unmatched = both[both["_merge"] != "both"]
            if len(unmatched):
                first = unmatched.iloc[0]
                where = ", ".join(f"{k}={first[k]}" for k in keys)
                side = agent if first["_merge"] == "left_only" else baseline
                raise ValueError(f"{agent} and {baseline} were not {what}: only {side} has ({where})")
            yield agent, baseline, both


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
    for agent, baseline, both in _pairs(values, agents, baselines, keys, "scored on the same problems"):
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


# The decision side: each run's final regret (one bandit problem, one seed) of the
# agents run on a stored set's bandit cells (``experiments.baselines``).
_BANDIT_PROBLEM = ["env", "input_dim", "num_actions", "temperature", "activation", "hidden_sizes"]
MIN_TREND_POINTS = 5  # baseline points a fitted trend of regret on d_KL^10 needs
MEDIAN_RESAMPLES = 2000  # bootstrap resamples of the median's standard error


def final_regrets(bandit: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, bandit problem, seed): its final_regret (bandit.csv's rows
    carry it on every logged step of the seed; taken from the last)."""
    keys = ["agent", *[c for c in _BANDIT_PROBLEM if c in bandit.columns], "seed"]
    last = bandit.sort_values("step").groupby(keys, sort=False, dropna=False).tail(1)
    return last[keys + ["final_regret"]].reset_index(drop=True)


def bandit_scores(bandit: pd.DataFrame, agents=None) -> pd.DataFrame:
    """One row per agent (``agents``' order, else order of appearance): over its runs
    (every stored bandit problem and seed; a run whose agent failed, final_regret NaN,
    left out and counted in ``failed``): the mean final regret and its standard error
    (sd / sqrt(n)), the median with a bootstrap standard error (``MEDIAN_RESAMPLES``
    resamples of a fixed generator), and the mean of log final regret with its standard
    error (NaN when a final regret is 0: its log is not finite; ``zero_regret_runs``
    counts such runs, so a table can say why)."""
    finals = final_regrets(bandit)
    order = list(dict.fromkeys(finals["agent"])) if agents is None else list(agents)
    rows = []
    for agent in order:
        values = finals.loc[finals["agent"] == agent, "final_regret"].to_numpy(float)
        ok = values[np.isfinite(values)]
        n = len(ok)
        sd = float(ok.std(ddof=1)) if n > 1 else np.nan
        rng = np.random.default_rng(0)
        medians = np.median(ok[rng.integers(0, n, (MEDIAN_RESAMPLES, n))], axis=1) if n > 1 else np.array([np.nan])
        logs = np.log(ok) if n and (ok > 0).all() else np.full(n, np.nan)
        rows.append({
            "agent": agent,
            "runs": n,
            "failed": int(len(values) - n),
            "final_regret_mean": float(ok.mean()) if n else np.nan,
            "final_regret_mean_se": sd / np.sqrt(n) if n else np.nan,
            "final_regret_median": float(np.median(ok)) if n else np.nan,
            "final_regret_median_se": float(medians.std(ddof=1)) if n > 1 else np.nan,
            "log_final_regret_mean": float(logs.mean()) if n else np.nan,
            "log_final_regret_mean_se": float(logs.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            "zero_regret_runs": int((ok <= 0).sum()),
        })
    return pd.DataFrame(rows)


def bandit_paired_differences(bandit: pd.DataFrame, agents, baselines) -> pd.DataFrame:
    """Rows (agent, baseline, metric "final_regret", difference, difference_se, problems,
    z, beyond_2se, beyond_bonferroni): per run (bandit problem, seed), agent's final
    regret minus the baseline's on the same problem and seed; the mean over runs and its
    standard error (sd of the differences / sqrt(n)). Runs where either side failed (NaN)
    are left out; a run only one side has is a ValueError naming it (not paired)."""
    finals = final_regrets(bandit)
    keys = [c for c in finals.columns if c not in ("agent", "final_regret")]
    rows = []
    for agent, baseline, both in _pairs(finals, agents, baselines, keys, "run on the same bandit problems"):
        difference = (both["final_regret_agent"] - both["final_regret_baseline"]).to_numpy(float)
        difference = difference[np.isfinite(difference)]
        n = len(difference)
        rows.append({
            "agent": agent,
            "baseline": baseline,
            "metric": "final_regret",
            "difference": float(difference.mean()) if n else np.nan,
            "difference_se": float(difference.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            "problems": n,
        })
    columns = ["agent", "baseline", "metric", "difference", "difference_se", "problems"]
    return with_significance(pd.DataFrame(rows, columns=columns))


def regret_trend(points: pd.DataFrame, agent: str, baselines) -> tuple[str, dict | None]:
    """Where ``agent`` falls against the baselines' trend of regret on d_KL^10: (one
    sentence, the fit {slope, intercept, residual_sd, points, residual, z} or None).

    points: one row per agent with ``dkl_10`` and ``regret`` (mean final regret). The
    trend is the least-squares line of log regret on log d_KL^10 over the baselines'
    points (both positive and finite); its residual standard deviation is
    sqrt(sum of squared residuals / (n - 2)). With fewer than ``MIN_TREND_POINTS``
    baseline points no trend is fitted and the sentence says so."""
    table = points.set_index("agent")
    usable = [
        b for b in baselines
        if b in table.index and np.isfinite(table.at[b, "dkl_10"]) and np.isfinite(table.at[b, "regret"])
        and table.at[b, "dkl_10"] > 0 and table.at[b, "regret"] > 0
    ]
    if len(usable) < MIN_TREND_POINTS:
        return (
            f"No trend of regret on d_KL^10 fitted: the baselines give {len(usable)} points with both "
            f"(positive d_KL^10 and mean final regret), and a trend needs at least {MIN_TREND_POINTS}.",
            None,
        )
    x = np.log(table.loc[usable, "dkl_10"].to_numpy(float))
    y = np.log(table.loc[usable, "regret"].to_numpy(float))
    slope, intercept = np.polyfit(x, y, 1)
    residual_sd = float(np.sqrt(np.sum((y - (intercept + slope * x)) ** 2) / (len(x) - 2)))
    fit = {"slope": float(slope), "intercept": float(intercept), "residual_sd": residual_sd, "points": len(x)}
    mine = table.loc[agent] if agent in table.index else None
    if mine is None or not (mine["dkl_10"] > 0 and mine["regret"] > 0):
        return f"{agent} has no positive d_KL^10 and mean final regret to place against the baselines' trend.", fit
    residual = float(np.log(mine["regret"]) - (intercept + slope * np.log(mine["dkl_10"])))
    z = residual / residual_sd if residual_sd > 0 else np.inf * np.sign(residual)
    fit.update(residual=residual, z=float(z))
    side = "above" if residual > 0 else "below"
    more = "more" if residual > 0 else "less"
    sentence = (
        f"{agent} lies {side} the baselines' trend (least squares of log regret on log d_KL^10 over "
        f"{len(x)} baselines) by {abs(z):.1f} of the baselines' residual standard deviations: "
        f"{np.exp(residual):.3g} times the regret the trend predicts at its d_KL^10 ({more} regret than "
        "baselines of its d_KL^10 have)."
    )
    low, high = float(np.exp(x.min())), float(np.exp(x.max()))
    fit.update(extrapolated=not low <= float(mine["dkl_10"]) <= high)
    if fit["extrapolated"]:
        # A line fitted over a narrow band of d_KL^10 says little far outside it: the
        # distance is then the line's extrapolation, and the reader must be told so.
        sentence += (
            f" Its d_KL^10 ({float(mine['dkl_10']):.3g}) lies outside the baselines' range "
            f"[{low:.3g}, {high:.3g}]: the trend is extrapolated there, so read the distance as a lead only."
        )
    return sentence, fit


def bandit_markdown(scores_table: pd.DataFrame, paired: pd.DataFrame, notes: list[str], sentences: list[str]) -> str:
    """The decision side of leaderboard.md: notes, final regret per agent (mean, median,
    mean log, each +- standard error), the paired differences (agent - baseline on the
    same bandit problems and seeds; lower regret is better) and the trend sentences."""
    lines = ["", "## Decision side: Thompson sampling on the stored bandit problems", ""]
    lines += [f"- {note}" for note in notes]
    lines += ["", "### Final regret per agent (over its bandit runs, +- standard error)", ""]
    lines.append("| agent | runs | mean | median | mean log |")
    lines.append("|---|---|---|---|---|")
    for _, row in scores_table.iterrows():
        zeros = int(row.get("zero_regret_runs", 0) or 0)
        # A run with no regret at all (its first action optimal and never left) has no
        # logarithm: the mean log is undefined, and the cell says why instead of "nan".
        mean_log = (
            f"undefined ({zeros} run{'s' if zeros > 1 else ''} with regret 0)" if zeros
            else f"{row['log_final_regret_mean']:.3f} +- {row['log_final_regret_mean_se']:.3f}"
        )
        lines.append(
            f"| {row['agent']} | {row['runs']} | {row['final_regret_mean']:.2f} +- {row['final_regret_mean_se']:.2f} "
            f"| {row['final_regret_median']:.2f} +- {row['final_regret_median_se']:.2f} | {mean_log} |"
        )
    lines += ["", "### Paired differences of final regret (agent - baseline on the same problems and seeds)", ""]
    if paired.empty:
        lines.append("(no baseline to compare with)")
    else:
        lines.append("| agent | baseline | difference | runs |")
        lines.append("|---|---|---|---|")
        for _, row in paired.iterrows():
            mark = "**" if row["beyond_bonferroni"] else ("*" if row["beyond_2se"] else "")
            lines.append(
                f"| {row['agent']} | {row['baseline']} | {row['difference']:+.2f} +- {row['difference_se']:.2f}{mark} "
                f"| {row['problems']} |"
            )
    lines += ["", "### Regret against d_KL^10", ""]
    lines += sentences
    return "\n".join(lines) + "\n"
