"""Figures of paper 000, drawn with matplotlib's object API (no pyplot).

Using `matplotlib.figure.Figure` with the Agg canvas directly renders off-screen
without selecting a global backend, so importing or calling this module never
changes the caller's pyplot state. Each function saves `<stem>.png` and
`<stem>.pdf` in `directory` and returns the two paths, or returns [] (and says
why in a warning) when the tables lack what the figure needs.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import textwrap
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write
from decision_bench.agents.registry import ENTRIES
from decision_bench.analysis.correlation import CorrelationResult, interval_text
from decision_bench.analysis.inputs import failed_rows
from decision_bench.analysis.join import METRIC_LABELS, PROBLEM_COLUMNS, finite_kl_rows, metric_rows, present

__all__ = [
    "AGENT_COLOURS",
    "agent_colour",
    "place_point_labels",
    "plot_agent_regret_vs_kl",
    "plot_normalised_kl",
    "plot_prior_functions",
    "plot_regret",
    "plot_regret_curves",
    "plot_regret_vs_kl",
    "readable_log_ticks",
]

FORMATS = ("png", "pdf")
FLOOR_AGENT = "hmc"  # whose d_KL^10 Fig. 2 draws as a floor when present

# One colour per registered agent, the same in every figure and every run: each
# family's ``colour``, declared beside it (agents/entry.py), never the order in which a
# run's agents are plotted, so mlp is the same blue in a run without ensemble as in one
# with it. The seven core agents of paper 000 and the samplers have matplotlib's tab10
# colours; baselines and extras the paler tab20 ones. tests/analysis check that no two
# share a colour.
AGENT_COLOURS = {entry.name: entry.colour for entry in ENTRIES}


def agent_colour(name: str) -> str:
    """The colour of agent `name` as '#rrggbb': the fixed one of a registered agent;
    for any other name (an --agent-file agent) one derived from the SHA-256 of the
    name, so it depends on the name alone, not on the run, the process (Python's
    own hash() is salted per process) or the other agents."""
    name = str(name)
    if name in AGENT_COLOURS:
        return AGENT_COLOURS[name]
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    hue = int.from_bytes(digest[:4], "big") / 2**32
    # Darker and less saturated than tab10, so a custom agent is told from a registered one.
    lightness = 0.35 + 0.15 * digest[4] / 255
    red, green, blue = colorsys.hls_to_rgb(hue, lightness, 0.55)
    return "#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in (red, green, blue)))


def figure_caption(fig, text: str, width_inches: float) -> None:
    """A footnote under the axes saying what the marks and error bars are. Drawn as
    the figure's supxlabel, so constrained layout keeps room for it."""
    chars = max(40, int(width_inches * 16))  # about 16 characters of 7-point text per inch
    fig.supxlabel("\n".join(textwrap.wrap(text, chars)), fontsize=7, color="0.25")


def new_figure(width: float, height: float, ncols: int = 1):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:  # matplotlib is the `plot` extra
        raise ImportError("figures need matplotlib: pip install 'decision-bench[plot]'") from err
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def save_figure(fig, directory: Path, stem: str) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        # Atomically: an interrupted savefig leaves the previous figure, not half a file.
        path = atomic_write(
            Path(directory) / f"{stem}.{fmt}",
            lambda handle, fmt=fmt: fig.savefig(handle, format=fmt, dpi=150 if fmt == "png" else None),
        )
        paths.append(path)
    return paths


def skip_figure(stem: str, reason: str) -> list[Path]:
    warnings.warn(f"figure {stem} skipped: {reason}", RuntimeWarning, stacklevel=3)
    return []


def agent_order(agents) -> list[str]:
    """mlp first (the reference), the rest alphabetically."""
    agents = sorted(set(map(str, agents)))
    return (["mlp"] if "mlp" in agents else []) + [a for a in agents if a != "mlp"]


# What makes two testbed rows the same problem (the columns a table has of these, and seed).
_PROBLEM_KEYS = ("prior", "activation", "hidden_sizes", *PROBLEM_COLUMNS)


def normalised_kl_table(testbed: pd.DataFrame) -> pd.DataFrame:
    """Per-agent mean d_KL divided by mlp's, for tau = 1 and tau = 10 (iid).

    Returns columns metric, agent, mean, stderr, normalised, normalised_stderr,
    n, paired. mean and stderr: the agent's own mean over its rows and its standard
    error. normalised: mean(agent) / mean(mlp) over the problems (setting and seed)
    both were scored on, with a paired standard error (the delta method, keeping the
    covariance of agent and mlp on one problem: sd(agent - ratio * mlp) / sqrt(n) /
    mean(mlp)); n: those shared problems; paired True. An agent that shares no problem
    with mlp gets the ratio of the two means over their own rows, its standard error
    from both unpaired errors, and paired False. A metric is left out when mlp has no
    rows for it or its mean is not > 0 (noisy estimates of a d_KL near 0 can average
    below 0, and a ratio to such a mean means nothing).
    """
    columns = ["metric", "agent", "mean", "stderr", "normalised", "normalised_stderr", "n", "paired"]
    out = []
    for metric in ("dkl_1", "dkl_10"):
        rows = finite_kl_rows(metric_rows(testbed, metric), metric)
        if rows.empty:
            continue
        rows = rows.assign(agent=rows["agent"].astype(str))
        stats = rows.groupby("agent")["kl"].agg(["mean", "std", "size"])
        if "mlp" not in stats.index or not stats.loc["mlp", "mean"] > 0:
            continue
        stderr = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
        keys = present(rows, _PROBLEM_KEYS) + ["seed"]
        per_problem = rows.assign(**{k: rows[k].astype(str) for k in keys}).groupby(["agent", *keys])["kl"].mean()
        mlp = per_problem.loc["mlp"]
        for agent in stats.index:
            shared = pd.concat([per_problem.loc[agent].rename("a"), mlp.rename("m")], axis=1, join="inner")
            if len(shared) and shared["m"].mean() > 0:
                ratio = shared["a"].mean() / shared["m"].mean()
                spread = (shared["a"] - ratio * shared["m"]).std(ddof=1) if len(shared) > 1 else 0.0
                ratio_se, n, paired = spread / np.sqrt(len(shared)) / shared["m"].mean(), len(shared), True
            else:
                ref = stats.loc["mlp", "mean"]
                ratio = stats.loc[agent, "mean"] / ref
                ratio_se = math.hypot(stderr[agent], ratio * stderr["mlp"]) / ref
                n, paired = int(stats.loc[agent, "size"]), False
            out.append({"metric": metric, "agent": agent, "mean": stats.loc[agent, "mean"],
                        "stderr": stderr[agent], "normalised": ratio, "normalised_stderr": ratio_se,
                        "n": n, "paired": paired})
    return pd.DataFrame(out, columns=columns)


def plot_normalised_kl(testbed: pd.DataFrame, directory: Path, stem: str = "fig2_normalised_kl") -> list[Path]:
    """Fig. 2: per-agent d_KL^1 and d_KL^10 normalised so that mlp = 1, +-1 stderr."""
    table = normalised_kl_table(testbed)
    if table.empty:
        return skip_figure(stem, "needs testbed rows for agent 'mlp' with tau 1 or 10 and a mean d_KL > 0")
    agents = agent_order(table["agent"])
    metrics = [m for m in ("dkl_1", "dkl_10") if m in set(table["metric"])]
    width_inches = max(5.0, 0.8 * len(agents) + 2)
    fig, (ax,) = new_figure(width_inches, 3.8)
    width = 0.8 / len(metrics)
    x = np.arange(len(agents))
    colours = [agent_colour(a) for a in agents]
    # The agent's colour on both of its bars; the metric is told by the fill (hatched: marginal).
    styles = {"dkl_1": {"alpha": 0.45, "hatch": "///"}, "dkl_10": {"alpha": 1.0, "hatch": None}}
    for i, metric in enumerate(metrics):
        sub = table[table["metric"] == metric].set_index("agent").reindex(agents)
        ax.bar(
            x + (i - (len(metrics) - 1) / 2) * width,
            sub["normalised"],
            width,
            yerr=sub["normalised_stderr"],
            capsize=2,
            color=colours,
            edgecolor="0.2",
            linewidth=0.5,
            **styles[metric],
        )
        ax.bar([np.nan], [np.nan], color="0.6", edgecolor="0.2", linewidth=0.5, label=METRIC_LABELS[metric],
               **styles[metric])  # a grey legend entry per metric
    sizes = table.groupby("agent")["n"].max()
    unpaired = sorted(set(table.loc[~table["paired"].astype(bool), "agent"]))
    unpaired_note = (f"; {', '.join(unpaired)} shares no problem with mlp: its ratio is of the two means, "
                     "its error from both unpaired errors") if unpaired else ""
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    # The HMC floor: exact inference on the generative model (analysis/fidelity.py), when hmc ran.
    floor = table[(table["agent"] == FLOOR_AGENT) & (table["metric"] == "dkl_10")]["normalised"]
    if len(floor) and np.isfinite(floor.iloc[0]):
        ax.axhline(float(floor.iloc[0]), color="gray", linewidth=0.9, linestyle=":",
                   label=f"{FLOOR_AGENT} floor ({METRIC_LABELS['dkl_10']})")
    ax.set_xticks(x, agents, rotation=30, ha="right")
    ax.set_ylabel("d_KL / d_KL(mlp)")
    ax.set_title("Marginal (tau=1) and joint (tau=10) d_KL, mlp = 1", fontsize=10)
    ax.legend()
    figure_caption(
        fig,
        "Bars: each agent's mean d_KL over the testbed problems (setting and seed) it shares with mlp "
        f"({_count_range(sizes)} per agent and metric), divided by mlp's mean on them. Error bars: \u00b11 "
        "standard error of that ratio, paired over the shared problems (delta method: sd of agent - ratio x mlp "
        "/ sqrt(problems) / mlp's mean)" + unpaired_note + ".",
        width_inches,
    )
    return save_figure(fig, directory, stem)


def plot_regret_vs_kl(
    joined: pd.DataFrame,
    metric: str,
    result: CorrelationResult,
    directory: Path,
    stem: str,
) -> list[Path]:
    """Figs. 8/9: final regret against testbed d_KL per (agent, seed), log-log axes.

    The line is the least-squares fit of log regret on log d_KL (the scale the
    Pearson coefficient is computed on); the title gives both coefficients with
    their bootstrap intervals.
    """
    rows = joined[joined["metric"] == metric]
    rows = rows[(rows["kl"] > 0) & (rows["regret"] > 0)]
    if len(rows) < 2:
        return skip_figure(stem, f"fewer than 2 positive points for {metric}")
    fig, (ax,) = new_figure(5.0, 4.4)
    for agent in agent_order(rows["agent"]):
        sub = rows[rows["agent"] == agent]
        ax.scatter(sub["kl"], sub["regret"], label=agent, s=18, color=agent_colour(agent))
    lx, ly = np.log(rows["kl"].to_numpy(float)), np.log(rows["regret"].to_numpy(float))
    if np.ptp(lx) > 0:
        slope, intercept = np.polyfit(lx, ly, 1)
        grid = np.linspace(lx.min(), lx.max(), 50)
        ax.plot(np.exp(grid), np.exp(intercept + slope * grid), color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"testbed {METRIC_LABELS[metric]}")
    ax.set_ylabel("bandit regret")
    ax.set_title(
        f"Pearson (log) {interval_text(result.pearson_log, result.pearson_ci_low, result.pearson_ci_high, 2)}\n"
        f"Spearman {interval_text(result.spearman, result.spearman_ci_low, result.spearman_ci_high, 2)}, "
        f"n={result.n}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    figure_caption(
        fig,
        "Each point: one (agent, seed): the bandit run's final regret against the testbed d_KL of that seed; "
        "no error bars. Line: least-squares fit of log regret on log d_KL. Brackets: 90% percentile-bootstrap "
        "intervals over the points.",
        5.0,
    )
    readable_log_ticks(ax)
    return save_figure(fig, directory, stem)


def plot_prior_functions(
    testbed: pd.DataFrame, directory: Path, stem: str = "fig5_prior_functions", temperature: float = 0.1
) -> list[Path]:
    """Fig. 5: d_KL^1 and d_KL^10 against T for ensemble and ensemble+.

    Uses the paper's medium-SNR problems (temperature 0.1) when the table has
    them, otherwise all temperatures; means over the remaining problems and seeds
    with +-1 stderr. Needs the num_train column (T, the x axis). A run with one T
    has no curve to draw: then each panel compares the agents side by side at that T.
    """
    agents = [a for a in ("ensemble", "ensemble+") if a in set(testbed["agent"].astype(str))]
    if not agents:
        return skip_figure(stem, "needs testbed rows for 'ensemble' or 'ensemble+'")
    if "num_train" not in testbed.columns:
        return skip_figure(stem, "needs the testbed column num_train")
    temps = pd.to_numeric(testbed.get("temperature", pd.Series(np.nan, index=testbed.index)), errors="coerce")
    subset = testbed[np.isclose(temps, temperature)]
    note = f"temperature {temperature:g}"
    if subset.empty:
        subset, note = testbed, "all temperatures"
    metrics = [m for m in ("dkl_1", "dkl_10") if not metric_rows(subset, m).empty]
    if not metrics:
        return skip_figure(stem, "needs testbed rows with tau 1 or 10")
    sizes = pd.to_numeric(subset["num_train"], errors="coerce").dropna().unique()
    single = len(sizes) == 1
    width_inches = (3.2 if single else 4.0) * len(metrics)
    fig, axes = new_figure(width_inches, 3.9, ncols=len(metrics))
    counts = []
    for ax, metric in zip(axes, metrics):
        rows = finite_kl_rows(metric_rows(subset, metric), metric)
        for position, agent in enumerate(agents):
            sub = rows[rows["agent"].astype(str) == agent]
            if sub.empty:
                continue
            stats = sub.groupby("num_train")["kl"].agg(["mean", "std", "size"]).sort_index()
            counts += list(stats["size"])
            err = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
            x = [position] * len(stats) if single else stats.index
            ax.errorbar(x, stats["mean"], yerr=err, marker="o", capsize=3, label=agent, color=agent_colour(agent))
        ax.set_ylabel(METRIC_LABELS[metric])
        if single:
            # One T: no curve over T; the agents side by side at that T, on a readable scale.
            ax.set_xticks(range(len(agents)), agents)
            ax.set_xlim(-0.6, len(agents) - 0.4)
            ax.set_title(f"{METRIC_LABELS[metric]} at T = {sizes[0]:g} ({note})", fontsize=9)
        else:
            ax.set_xscale("log")
            ax.set_xlabel("number of training points T")
            ax.set_title(f"{METRIC_LABELS[metric]} ({note})", fontsize=9)
            ax.legend(fontsize=8)
    text = (
        "Points: mean d_KL over the testbed problems and seeds at each T "
        f"({_count_range(counts)} rows per point); error bars: \u00b11 standard error of the mean."
    )
    if single:
        text += f" This run has one training-set size (T = {sizes[0]:g}): the paper's figure plots d_KL against T."
    figure_caption(fig, text, width_inches)
    readable_log_ticks(*axes)
    return save_figure(fig, directory, stem)


_SETTING_SYMBOLS = {"env": "", "input_dim": "d=", "num_actions": "N=", "temperature": "beta="}


def setting_title(setting: Mapping[str, object]) -> str:
    """A panel title that describes the data: for a classification data set its name,
    its real feature dimension and classes (not the arm-feature size (d + 1) * C the
    agents see, nor the temperature 1.0 that data has no use for); for a neural
    bandit d, N and beta."""
    dataset = setting.get("dataset")
    if dataset is not None and not (isinstance(dataset, float) and np.isnan(dataset)):
        text = f"{setting['env']}: {dataset}" if setting.get("env") else str(dataset)
        arm_dim, classes = setting.get("input_dim"), setting.get("num_actions")
        try:
            features = int(arm_dim) // int(classes) - 1
            text += f" ({features} features, {int(classes)} classes)"
        except (TypeError, ValueError, ZeroDivisionError):
            pass
        return text
    parts = [f"{_SETTING_SYMBOLS[c]}{v}" for c, v in setting.items() if c in _SETTING_SYMBOLS]
    return ", ".join(parts) or "all runs"


def plot_regret_curves(bandit: pd.DataFrame, directory: Path, stem: str = "fig7_regret_curves") -> list[Path]:
    """Fig. 7: mean cumulative regret against time per agent, +-1 stderr over seeds.

    One panel per bandit setting (those of env, dataset, input_dim, num_actions,
    temperature the table has; one panel without them). Failed runs (non-empty
    `error`) are left out.
    """
    rows = bandit[~failed_rows(bandit)]
    if rows.empty:
        return skip_figure(stem, "no successful bandit runs")
    settings_cols = present(rows, ["env", "dataset", "input_dim", "num_actions", "temperature"])
    panels = list(rows.groupby(settings_cols, dropna=False, sort=True)) if settings_cols else [((), rows)]
    width_inches = 4.5 * len(panels)
    fig, axes = new_figure(width_inches, 3.9, ncols=len(panels))
    seeds = []
    for ax, (values, sub) in zip(axes, panels):
        setting = dict(zip(settings_cols, values if isinstance(values, tuple) else (values,)))
        for agent in agent_order(sub["agent"]):
            runs = sub[sub["agent"].astype(str) == agent]
            seeds.append(runs["seed"].nunique())
            stats = runs.groupby("step")["cumulative_regret"].agg(["mean", "std", "size"]).sort_index()
            err = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
            colour = agent_colour(agent)
            ax.plot(stats.index, stats["mean"], label=agent, color=colour)
            ax.fill_between(stats.index, stats["mean"] - err, stats["mean"] + err, alpha=0.2, color=colour)
        ax.set_xlabel("time step t")
        ax.set_ylabel("cumulative regret")
        ax.set_title(setting_title(setting), fontsize=9)
        ax.legend(fontsize=7)
    figure_caption(
        fig,
        f"Lines: mean cumulative regret over {_count_range(seeds)} seeds per agent; bands: \u00b11 standard error "
        "of that mean over seeds.",
        width_inches,
    )
    return save_figure(fig, directory, stem)


def plot_regret(df: pd.DataFrame, path: Path) -> None:
    """The bandit command's figure: mean cumulative regret against step per agent, +- one
    standard error over seeds, in each agent's fixed colour, titled with the data (a data
    set's name and real feature dimension) and captioned with what the bands are."""
    fig, (ax,) = new_figure(6.0, 4.4)
    for agent, rows in df.groupby("agent", sort=False):
        curve = rows.groupby("step").cumulative_regret.agg(["mean", "sem"]).fillna(0.0)
        colour = agent_colour(agent)
        ax.plot(curve.index, curve["mean"], label=agent, color=colour)
        ax.fill_between(curve.index, curve["mean"] - curve["sem"], curve["mean"] + curve["sem"], color=colour, alpha=0.2)
    first = df.iloc[0]
    seeds = df.seed.nunique()
    if "delta" in df.columns:  # the Showdown's wheel: no temperature, its delta matters
        title = f"{first.env}: delta={first.delta:g}, {first.num_actions} actions"
    elif "context_dim" in df.columns:  # the Showdown's (sparse) linear bandits
        title = f"{first.env}: context d={first.context_dim}, {first.num_actions} actions"
    else:
        title = setting_title(
            {c: first[c] for c in ("env", "dataset", "input_dim", "num_actions", "temperature") if c in df.columns}
        )
    ax.set_title(f"{title}, {seeds} seeds", fontsize=10)
    ax.set_xlabel("step t")
    ax.set_ylabel("cumulative regret")
    ax.legend()
    figure_caption(fig, f"Lines: mean cumulative regret over {seeds} seeds; bands: \u00b11 standard error of that mean "
             "over seeds.", 6.0)
    atomic_write(path, lambda handle: fig.savefig(handle, format="png", dpi=120))


def plot_agent_regret_vs_kl(
    agents: pd.DataFrame,
    results: Mapping[str, CorrelationResult],
    directory: Path,
    stem: str = "fig10_agent_regret_vs_kl",
) -> list[Path]:
    """Agent level: mean final regret against mean testbed d_KL, one labelled point per agent.

    One panel per metric in `results` (d_KL^10 first, then d_KL^1, then the dyadic
    metric), log-log axes, with the least-squares line of log regret on log d_KL
    and the agent-level coefficients in the title.
    """
    order = [m for m in ("dkl_10", "dkl_1", "dkl_10_kappa2") if m in results]
    if not order or agents.empty:
        return skip_figure(stem, "no agent-level correlations")
    fig, axes = new_figure(4.2 * len(order), 4.2, ncols=len(order))
    labelled = []
    for ax, metric in zip(axes, order):
        rows = agents[(agents["metric"] == metric) & (agents["kl"] > 0) & (agents["regret"] > 0)]
        for agent in agent_order(rows["agent"]):
            sub = rows[rows["agent"] == agent]
            ax.scatter(sub["kl"], sub["regret"], s=24, color=agent_colour(agent), zorder=3)
        labelled.append((ax, rows))
        lx, ly = np.log(rows["kl"].to_numpy(float)), np.log(rows["regret"].to_numpy(float))
        if len(lx) >= 2 and np.ptp(lx) > 0:
            slope, intercept = np.polyfit(lx, ly, 1)
            grid = np.linspace(lx.min(), lx.max(), 50)
            ax.plot(np.exp(grid), np.exp(intercept + slope * grid), color="black", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.margins(0.12)  # room for the labels of the outermost points
        ax.set_xlabel(f"agent mean testbed {METRIC_LABELS[metric]}")
        ax.set_ylabel("agent mean bandit regret")
        r = results[metric]
        ax.set_title(
            f"Pearson (log) {interval_text(r.pearson_log, r.pearson_ci_low, r.pearson_ci_high, 2)}\n"
            f"Spearman {interval_text(r.spearman, r.spearman_ci_low, r.spearman_ci_high, 2)}, n={r.n} agents",
            fontsize=8,
        )
    figure_caption(
        fig,
        "Each point: one agent: its mean testbed d_KL over all testbed problems and seeds against its mean "
        "final bandit regret over bandit seeds; no error bars. Line: least-squares fit of log regret on log "
        "d_KL. Brackets: 90% percentile-bootstrap intervals over the agents.",
        4.2 * len(order),
    )
    readable_log_ticks(*axes)
    for i, (ax, rows) in enumerate(labelled):
        place_point_labels(ax, rows["kl"].to_numpy(float), rows["regret"].to_numpy(float), rows["agent"].astype(str),
                           draw=i == 0)  # fmt: skip
    return save_figure(fig, directory, stem)


def plot_leaderboard_regret_vs_dkl10(
    points: pd.DataFrame,
    yours,
    fit: Mapping[str, float] | None,
    directory: Path,
    stem: str = "leaderboard_regret_vs_dkl10",
) -> list[Path]:
    """The leaderboard's Fig. 9: mean final regret (log) against d_KL^10 (log), one point
    per agent, the baselines' in their colours and the user's agents (``yours``) drawn
    large with a black edge; with ``fit`` (``analysis.leaderboard.regret_trend``) the
    baselines' least-squares line of log regret on log d_KL^10, and a band of one
    residual standard deviation either side. Points without positive values are left out."""
    yours = set(map(str, yours))
    rows = points[(points["dkl_10"] > 0) & (points["regret"] > 0)]
    if rows.empty:
        return skip_figure(stem, "no agent has a positive d_KL^10 and mean final regret")
    fig, (ax,) = new_figure(5.2, 4.4)
    for _, row in rows.iterrows():
        mine = row["agent"] in yours
        ax.scatter(row["dkl_10"], row["regret"], s=90 if mine else 28, marker="*" if mine else "o",
                   color=agent_colour(row["agent"]), edgecolors="black" if mine else "none", zorder=4 if mine else 3)
    if fit:
        lx = np.log(rows["dkl_10"].to_numpy(float))
        grid = np.linspace(lx.min(), lx.max(), 50)
        line = fit["intercept"] + fit["slope"] * grid
        ax.plot(np.exp(grid), np.exp(line), color="black", linewidth=1)
        ax.fill_between(np.exp(grid), np.exp(line - fit["residual_sd"]), np.exp(line + fit["residual_sd"]),
                        color="0.85", zorder=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(0.12)
    ax.set_xlabel("agent mean testbed d_KL^10 (stored problems)")
    ax.set_ylabel("agent mean final bandit regret")
    figure_caption(
        fig,
        "Each point: one agent, its stratified mean d_KL^10 over the stored testbed problems against its mean "
        "final regret over the stored bandit runs. Stars with a black edge: your agents. "
        + ("Line: least squares of log regret on log d_KL^10 over the baselines; band: +- one residual "
           "standard deviation." if fit else "No trend line: too few baseline points."),
        5.2,
    )
    readable_log_ticks(ax)
    place_point_labels(ax, rows["dkl_10"].to_numpy(float), rows["regret"].to_numpy(float), rows["agent"].astype(str))
    return save_figure(fig, directory, stem)


def all_figures(
    testbed: pd.DataFrame,
    bandit: pd.DataFrame,
    joined: pd.DataFrame,
    results: Mapping[str, CorrelationResult],
    directory: Path,
    agents: pd.DataFrame | None = None,
    agent_results: Mapping[str, CorrelationResult] | None = None,
) -> list[Path]:
    """Every figure the tables allow; returns the written paths.

    `results` are the agent_seed correlations (Figs. 8, 9); `agents` and
    `agent_results` the agent level (fig10), drawn when both are given.
    """
    stems = {"dkl_1": "fig8_regret_vs_dkl1", "dkl_10": "fig9_regret_vs_dkl10", "dkl_10_kappa2": "fig9b_regret_vs_dkl10_kappa2"}
    paths = plot_normalised_kl(testbed, directory)
    paths += plot_prior_functions(testbed, directory)
    paths += plot_regret_curves(bandit, directory)
    for metric, result in results.items():
        paths += plot_regret_vs_kl(joined, metric, result, directory, stems[metric])
    if agents is not None and agent_results:
        paths += plot_agent_regret_vs_kl(agents, agent_results, directory)
    return paths


def _count_range(counts) -> str:
    """'15' when all counts are equal, else '10-15'."""
    counts = [int(c) for c in counts]
    low, high = min(counts), max(counts)
    return f"{low}" if low == high else f"{low}-{high}"


def _tick_text(value: float) -> str:
    """A log-axis tick label: plain decimals between 0.001 and 10^4 (0.002, 0.05, 300),
    mathtext powers of ten outside (the exponent is what a reader needs there)."""
    if value <= 0 or not math.isfinite(value):
        return ""
    if 1e-3 <= value < 1e4:  # three significant digits, never in e-notation: 2000, 0.05, 0.0123
        return np.format_float_positional(value, precision=3, unique=True, fractional=False, trim="-")
    exponent = math.floor(math.log10(value) + 1e-9)
    mantissa = value / 10.0**exponent
    if abs(mantissa - 1.0) < 1e-6:
        return f"$10^{{{exponent}}}$"
    return f"${mantissa:.2g}\\times10^{{{exponent}}}$"


def _label_boxes(axis, renderer) -> list:
    """Window extents of the tick labels `axis` draws now (ticks inside the view limits
    that have a text), in display units."""
    boxes = []
    for tick in axis._update_ticks():  # the ticks the next draw shows, labels updated
        for label in (tick.label1, tick.label2):
            if label.get_visible() and label.get_text():
                boxes.append(label.get_window_extent(renderer))
    return boxes


def labels_overlap(boxes, pad: float = 0.0) -> bool:
    """Whether any two of the display-unit boxes (matplotlib Bbox) intersect, after
    growing each by `pad` pixels on every side."""
    grown = [box.padded(pad) for box in boxes]
    return any(a.overlaps(b) for i, a in enumerate(grown) for b in grown[i + 1:])


def readable_log_ticks(*axes) -> None:
    """Tick labels on the log axes of `axes` (of one figure) that can be read: never two overlapping.

    Matplotlib labels the minor ticks of a log axis that spans about a decade or less
    (3x10^-3 4x10^-3 6x10^-3 ...), and the labels overprint. Here minor ticks keep
    their marks but lose their labels, and the major ticks are the densest of a
    list of candidates whose rendered labels do not touch: within a decade, 5, 4, 3
    or 2 evenly spaced values or 1-2-3-5, 1-2-5, 1-3 ones; otherwise 1-2-5, 1-3 or 1 per decade, then every
    second or third decade. Labels are plain decimals (or powers of ten outside
    [0.001, 10^4]). Call after plotting and setting the limits and titles.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    if not any("log" in (ax.get_xscale(), ax.get_yscale()) for ax in axes):
        return  # nothing to do: spare the draw
    fig = axes[0].figure
    fig.canvas.draw()  # lays the figure out once; candidates are measured in that layout
    renderer = fig.canvas.get_renderer()
    formatter = FuncFormatter(lambda value, _: _tick_text(value))
    pairs = [(ax.xaxis, ax.get_xlim()) for ax in axes] + [(ax.yaxis, ax.get_ylim()) for ax in axes]
    for axis, (low, high) in pairs:
        if axis.get_scale() != "log" or not (0 < low < high):
            continue
        decades = math.log10(high / low)
        evenly = [MaxNLocator(nbins, steps=[1, 2, 2.5, 5, 10]) for nbins in (5, 4, 3, 2)]
        if decades < 1.0:
            # Evenly spaced values crowd at the top of a log axis; 1-2-3-5 and 1-2-5 ones spread
            # out, so each is tried before the evenly spaced choice with one label fewer.
            spread = [LogLocator(subs=subs) for subs in ((1.0, 2.0, 3.0, 5.0), (1.0, 2.0, 5.0), (1.0, 3.0))]
            candidates = [evenly[0], spread[0], evenly[1], spread[1], evenly[2], spread[2], evenly[3]]
        else:
            candidates = [LogLocator(subs=subs) for subs in ((1.0, 2.0, 5.0), (1.0, 3.0), (1.0,))]
            candidates += [LogLocator(numticks=max(2, math.ceil(decades / step)) + 1) for step in (2, 3, 5)]
            if decades < 2.0:  # one decade tick or none may lie inside: evenly spaced ones then
                candidates += evenly[1:]
        axis.set_minor_locator(LogLocator(subs="auto"))
        axis.set_minor_formatter(NullFormatter())
        axis.set_major_formatter(formatter)
        chosen = None
        for locator in candidates:
            axis.set_major_locator(locator)
            boxes = _label_boxes(axis, renderer)
            # 3 pixels of air between neighbours: the final draw may shift labels by a pixel.
            if not labels_overlap(boxes, pad=1.5):
                if len(boxes) >= 2:
                    chosen = locator
                    break
                chosen = chosen or locator  # one readable label beats several overprinted ones
        axis.set_major_locator(chosen or candidates[-1])


def place_point_labels(ax, xs, ys, texts, fontsize: float = 7, draw: bool = True) -> list:
    """Labels points (data coordinates) so that no two labels overlap and no label
    covers a point or leaves the axes, wherever such a place exists.

    Each label tries offsets of growing distance in eight directions around its
    point and takes the first free one (display-unit boxes, after a draw); when none
    is free it takes the one that overlaps least, tied to its point by a thin line.
    Labels are placed in order of x, so the result depends on the points alone.
    Call after the limits, scales and tick labels are final; draw=False skips the
    draw that fixes the layout when nothing in it changed since the last one (the
    labels themselves take no part in the layout). Returns the annotations.
    """
    from matplotlib.transforms import Bbox

    fig = ax.figure
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    xs, ys, texts = np.asarray(xs, float), np.asarray(ys, float), [str(t) for t in texts]
    points = ax.transData.transform(np.column_stack([xs, ys]))
    radius = 3.0 * fig.dpi / 72.0  # a 24-point^2 scatter marker is about 5 points wide
    taken = [Bbox.from_extents(x - radius, y - radius, x + radius, y + radius) for x, y in points]
    directions = [(1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    horizontal = {1: "left", -1: "right", 0: "center"}
    vertical = {1: "bottom", -1: "top", 0: "center"}

    def candidate(index, dx, dy, distance, **extra):
        return ax.annotate(
            str(texts[index]), (xs[index], ys[index]), xytext=(dx * distance, dy * distance),
            textcoords="offset points", fontsize=fontsize, ha=horizontal[dx], va=vertical[dy], **extra,
        )

    annotations = []
    for index in sorted(range(len(texts)), key=lambda i: (points[i][0], points[i][1], str(texts[i]))):
        best = None  # (overlap, dx, dy, distance, box)
        for distance in (3, 6, 10, 15, 22, 30):
            for dx, dy in directions:
                note = candidate(index, dx, dy, distance)
                box = note.get_window_extent(renderer)
                note.remove()
                inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
                overlap = sum(_area(box, other) for other in taken) + (0.0 if inside else 1e9)
                if best is None or overlap < best[0]:
                    best = (overlap, dx, dy, distance, box)
                if overlap == 0.0:
                    break
            if best[0] == 0.0:
                break
        overlap, dx, dy, distance, box = best
        # No free place: the least crowded one, tied to its point.
        extra = {"arrowprops": {"arrowstyle": "-", "color": "0.5", "linewidth": 0.5}} if overlap > 0 else {}
        note = candidate(index, dx, dy, distance, **extra)
        note.set_in_layout(False)  # inside the axes: must not move them
        taken.append(box)
        annotations.append(note)
    return annotations


def _area(a, b) -> float:
    """Area of the intersection of two Bboxes (0 when they are disjoint)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0
