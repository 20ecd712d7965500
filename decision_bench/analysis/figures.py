"""Figures of paper 000, drawn with matplotlib's object API (no pyplot).

Using `matplotlib.figure.Figure` with the Agg canvas directly renders off-screen
without selecting a global backend, so importing or calling this module never
changes the caller's pyplot state. Each function saves `<stem>.png` and
`<stem>.pdf` in `directory` and returns the two paths, or returns [] (and says
why in a warning) when the tables lack what the figure needs.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write
from decision_bench.analysis.correlation import CorrelationResult, interval_text
from decision_bench.analysis.inputs import failed_rows
from decision_bench.analysis.join import METRIC_LABELS, _finite_kl, metric_rows, present

__all__ = [
    "plot_agent_regret_vs_kl",
    "plot_normalised_kl",
    "plot_prior_functions",
    "plot_regret_curves",
    "plot_regret_vs_kl",
]

FORMATS = ("png", "pdf")
FLOOR_AGENT = "hmc"  # whose d_KL^10 Fig. 2 draws as a floor when present


def _new_figure(width: float, height: float, ncols: int = 1):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:  # matplotlib is the `plot` extra
        raise ImportError("figures need matplotlib: pip install 'decision-bench[plot]'") from err
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _save(fig, directory: Path, stem: str) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        # Atomically: an interrupted savefig leaves the previous figure, not half a file.
        path = atomic_write(
            Path(directory) / f"{stem}.{fmt}",
            lambda handle, fmt=fmt: fig.savefig(handle, format=fmt, dpi=150 if fmt == "png" else None),
        )
        paths.append(path)
    return paths


def _skip(stem: str, reason: str) -> list[Path]:
    warnings.warn(f"figure {stem} skipped: {reason}", RuntimeWarning, stacklevel=3)
    return []


def _agent_order(agents) -> list[str]:
    """mlp first (the reference), the rest alphabetically."""
    agents = sorted(set(map(str, agents)))
    return (["mlp"] if "mlp" in agents else []) + [a for a in agents if a != "mlp"]


def normalised_kl_table(testbed: pd.DataFrame) -> pd.DataFrame:
    """Per-agent mean d_KL divided by mlp's, for tau = 1 and tau = 10 (iid).

    Returns columns metric, agent, mean, stderr, normalised, normalised_stderr,
    n (rows averaged: problems x seeds). A metric is left out when mlp has no
    rows for it or its mean is not > 0 (noisy estimates of a d_KL near 0 can
    average below 0, and a ratio to such a mean means nothing).
    """
    out = []
    for metric in ("dkl_1", "dkl_10"):
        rows = _finite_kl(metric_rows(testbed, metric), metric)
        if rows.empty:
            continue
        stats = rows.groupby(rows["agent"].astype(str))["kl"].agg(["mean", "std", "size"])
        if "mlp" not in stats.index or not stats.loc["mlp", "mean"] > 0:
            continue
        ref = stats.loc["mlp", "mean"]
        stderr = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
        out.append(
            pd.DataFrame(
                {
                    "metric": metric,
                    "agent": stats.index,
                    "mean": stats["mean"].to_numpy(),
                    "stderr": stderr.to_numpy(),
                    "normalised": (stats["mean"] / ref).to_numpy(),
                    "normalised_stderr": (stderr / ref).to_numpy(),
                    "n": stats["size"].to_numpy(),
                }
            )
        )
    if not out:
        return pd.DataFrame(columns=["metric", "agent", "mean", "stderr", "normalised", "normalised_stderr", "n"])
    return pd.concat(out, ignore_index=True)


def plot_normalised_kl(testbed: pd.DataFrame, directory: Path, stem: str = "fig2_normalised_kl") -> list[Path]:
    """Fig. 2: per-agent d_KL^1 and d_KL^10 normalised so that mlp = 1, +-1 stderr."""
    table = normalised_kl_table(testbed)
    if table.empty:
        return _skip(stem, "needs testbed rows for agent 'mlp' with tau 1 or 10 and a mean d_KL > 0")
    agents = _agent_order(table["agent"])
    metrics = [m for m in ("dkl_1", "dkl_10") if m in set(table["metric"])]
    fig, (ax,) = _new_figure(max(5.0, 0.8 * len(agents) + 2), 3.5)
    width = 0.8 / len(metrics)
    x = np.arange(len(agents))
    for i, metric in enumerate(metrics):
        sub = table[table["metric"] == metric].set_index("agent").reindex(agents)
        ax.bar(
            x + (i - (len(metrics) - 1) / 2) * width,
            sub["normalised"],
            width,
            yerr=sub["normalised_stderr"],
            capsize=2,
            label=METRIC_LABELS[metric],
        )
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
    return _save(fig, directory, stem)


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
        return _skip(stem, f"fewer than 2 positive points for {metric}")
    fig, (ax,) = _new_figure(5.0, 4.0)
    for agent in _agent_order(rows["agent"]):
        sub = rows[rows["agent"] == agent]
        ax.scatter(sub["kl"], sub["regret"], label=agent, s=18)
    lx, ly = np.log(rows["kl"].to_numpy(float)), np.log(rows["regret"].to_numpy(float))
    if np.ptp(lx) > 0:
        slope, intercept = np.polyfit(lx, ly, 1)
        grid = np.linspace(lx.min(), lx.max(), 50)
        ax.plot(np.exp(grid), np.exp(intercept + slope * grid), color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax)
    ax.set_xlabel(f"testbed {METRIC_LABELS[metric]}")
    ax.set_ylabel("bandit regret")
    ax.set_title(
        f"Pearson (log) {interval_text(result.pearson_log, result.pearson_ci_low, result.pearson_ci_high, 2)}\n"
        f"Spearman {interval_text(result.spearman, result.spearman_ci_low, result.spearman_ci_high, 2)}, "
        f"n={result.n}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    return _save(fig, directory, stem)


def plot_prior_functions(
    testbed: pd.DataFrame, directory: Path, stem: str = "fig5_prior_functions", temperature: float = 0.1
) -> list[Path]:
    """Fig. 5: d_KL^1 and d_KL^10 against T for ensemble and ensemble+.

    Uses the paper's medium-SNR problems (temperature 0.1) when the table has
    them, otherwise all temperatures; means over the remaining problems and seeds
    with +-1 stderr. Needs the num_train column (T, the x axis).
    """
    agents = [a for a in ("ensemble", "ensemble+") if a in set(testbed["agent"].astype(str))]
    if not agents:
        return _skip(stem, "needs testbed rows for 'ensemble' or 'ensemble+'")
    if "num_train" not in testbed.columns:
        return _skip(stem, "needs the testbed column num_train")
    temps = pd.to_numeric(testbed.get("temperature", pd.Series(np.nan, index=testbed.index)), errors="coerce")
    subset = testbed[np.isclose(temps, temperature)]
    note = f"temperature {temperature:g}"
    if subset.empty:
        subset, note = testbed, "all temperatures"
    metrics = [m for m in ("dkl_1", "dkl_10") if not metric_rows(subset, m).empty]
    if not metrics:
        return _skip(stem, "needs testbed rows with tau 1 or 10")
    fig, axes = _new_figure(4.0 * len(metrics), 3.5, ncols=len(metrics))
    for ax, metric in zip(axes, metrics):
        rows = _finite_kl(metric_rows(subset, metric), metric)
        for agent in agents:
            sub = rows[rows["agent"].astype(str) == agent]
            if sub.empty:
                continue
            stats = sub.groupby("num_train")["kl"].agg(["mean", "std", "size"]).sort_index()
            err = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
            ax.errorbar(stats.index, stats["mean"], yerr=err, marker="o", capsize=2, label=agent)
        ax.set_xscale("log")
        ax.set_xlabel("number of training points T")
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.set_title(f"{METRIC_LABELS[metric]} ({note})", fontsize=9)
        ax.legend(fontsize=8)
    return _save(fig, directory, stem)


def plot_regret_curves(bandit: pd.DataFrame, directory: Path, stem: str = "fig7_regret_curves") -> list[Path]:
    """Fig. 7: mean cumulative regret against time per agent, +-1 stderr over seeds.

    One panel per bandit setting (those of env, input_dim, num_actions,
    temperature the table has; one panel without them). Failed runs (non-empty
    `error`) are left out.
    """
    rows = bandit[~failed_rows(bandit)]
    if rows.empty:
        return _skip(stem, "no successful bandit runs")
    settings_cols = present(rows, ["env", "input_dim", "num_actions", "temperature"])
    panels = list(rows.groupby(settings_cols, dropna=False, sort=True)) if settings_cols else [((), rows)]
    symbols = {"env": "", "input_dim": "d=", "num_actions": "N=", "temperature": "beta="}
    fig, axes = _new_figure(4.5 * len(panels), 3.5, ncols=len(panels))
    for ax, (values, sub) in zip(axes, panels):
        setting = dict(zip(settings_cols, values if isinstance(values, tuple) else (values,)))
        for agent in _agent_order(sub["agent"]):
            curve = sub[sub["agent"].astype(str) == agent].groupby("step")["cumulative_regret"]
            stats = curve.agg(["mean", "std", "size"]).sort_index()
            err = stats["std"].fillna(0.0) / np.sqrt(stats["size"])
            (line,) = ax.plot(stats.index, stats["mean"], label=agent)
            ax.fill_between(stats.index, stats["mean"] - err, stats["mean"] + err, alpha=0.2, color=line.get_color())
        ax.set_xlabel("time step t")
        ax.set_ylabel("cumulative regret")
        ax.set_title(", ".join(f"{symbols[c]}{v}" for c, v in setting.items()) or "all runs", fontsize=9)
        ax.legend(fontsize=7)
    return _save(fig, directory, stem)


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
        return _skip(stem, "no agent-level correlations")
    fig, axes = _new_figure(4.2 * len(order), 3.8, ncols=len(order))
    for ax, metric in zip(axes, order):
        rows = agents[(agents["metric"] == metric) & (agents["kl"] > 0) & (agents["regret"] > 0)]
        for agent in _agent_order(rows["agent"]):
            sub = rows[rows["agent"] == agent]
            ax.scatter(sub["kl"], sub["regret"], s=24)
            for kl, regret in zip(sub["kl"], sub["regret"]):
                ax.annotate(agent, (kl, regret), xytext=(3, 3), textcoords="offset points", fontsize=7)
        lx, ly = np.log(rows["kl"].to_numpy(float)), np.log(rows["regret"].to_numpy(float))
        if len(lx) >= 2 and np.ptp(lx) > 0:
            slope, intercept = np.polyfit(lx, ly, 1)
            grid = np.linspace(lx.min(), lx.max(), 50)
            ax.plot(np.exp(grid), np.exp(intercept + slope * grid), color="black", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax)
        ax.set_xlabel(f"agent mean testbed {METRIC_LABELS[metric]}")
        ax.set_ylabel("agent mean bandit regret")
        r = results[metric]
        ax.set_title(
            f"Pearson (log) {interval_text(r.pearson_log, r.pearson_ci_low, r.pearson_ci_high, 2)}\n"
            f"Spearman {interval_text(r.spearman, r.spearman_ci_low, r.spearman_ci_high, 2)}, n={r.n} agents",
            fontsize=8,
        )
    return _save(fig, directory, stem)


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


def _plain_log_ticks(ax) -> None:
    """d_KL often spans less than a decade, where matplotlib labels every minor
    tick of a log axis in scientific notation and the labels collide: there,
    use a few evenly spaced ticks with plain labels. Call after plotting."""
    import math

    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if low > 0 and math.log10(high / low) < 1.0:
            axis.set_major_locator(MaxNLocator(4))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
            axis.set_minor_formatter(NullFormatter())
