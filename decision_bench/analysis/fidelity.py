"""Fidelity to a reference posterior beside d_KL to the environment.

When ``testbed.csv`` was made with ``--reference`` (e.g. hmc), each row also has
the agent's distance to the reference's predictive on the same problem
(evaluation/fidelity.py): ``tv_joint`` and ``kl_to_reference`` of the row's
design, and the marginal ``agreement`` and ``tv``. This module puts each agent's
d_KL^10 against the environment next to its distance from the reference at
tau = 10 (iid inputs):

- ``fidelity_table``: one row per agent: mean d_KL^10 (with its standard error
  over rows), mean tv_joint and kl_to_reference on the same rows, agreement,
  marginal tv, and the share of rows whose reference passed its convergence
  checks (``reference_converged``; empty when the reference has none).
- ``hmc_floor``: the hmc agent's own mean d_KL^10 when it is among the agents:
  what exact inference on the generative model scores, so the level below which
  no agent should be (up to estimation noise and HMC's own error).
- ``rank_correlations``: across agents, Spearman's rank correlation between the
  distance to the reference and d_KL^10, with a percentile-bootstrap interval
  (agents resampled with replacement; 5th-95th percentiles, as the rest of the
  analysis).
- ``plot_fidelity``: d_KL^10 against each distance, one labelled point per
  agent, the HMC floor as a dashed line.
- ``fidelity_outputs``: writes fidelity.csv, fidelity_correlations.csv and the
  figure into a directory and returns the report's section; the pipeline calls it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from decision_bench._src.files import write_results_csv
from decision_bench.analysis.correlation import (
    MIN_POINTS,
    pearson_rows,
    check_num_resamples,
    interval_text,
    percentile_interval,
)
from decision_bench.analysis.figures import (
    agent_order,
    figure_caption,
    new_figure,
    save_figure,
    skip_figure,
    agent_colour,
    place_point_labels,
    readable_log_ticks,
)
from decision_bench.analysis.join import METRIC_LABELS, metric_rows

__all__ = [
    "DISTANCES",
    "FLOOR_AGENT",
    "FidelityOutputs",
    "fidelity_outputs",
    "fidelity_table",
    "has_fidelity",
    "hmc_floor",
    "plot_fidelity",
    "rank_correlations",
    "report_section",
]

DISTANCES = ("tv_joint", "kl_to_reference")
DISTANCE_LABELS = {"tv_joint": "joint TV to the reference (tau=10)", "kl_to_reference": "d_KL^10 to the reference"}
FLOOR_AGENT = "hmc"
TABLE_COLUMNS = (
    "agent", "reference", "dkl_10", "dkl_10_stderr", "tv_joint", "kl_to_reference",
    "agreement", "tv", "reference_converged", "n",
)  # fmt: skip
CORRELATION_COLUMNS = ("distance", "spearman", "spearman_ci_low", "spearman_ci_high", "n")


def has_fidelity(testbed: pd.DataFrame) -> bool:
    """True when the table has fidelity columns with at least one finite value."""
    if not set(DISTANCES) <= set(testbed.columns):
        return False
    values = testbed[list(DISTANCES)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    return bool(np.isfinite(values).any())


def _numeric(rows: pd.DataFrame, column: str) -> pd.Series:
    if column not in rows.columns:
        return pd.Series(np.nan, index=rows.index)
    return pd.to_numeric(rows[column], errors="coerce")


def fidelity_table(testbed: pd.DataFrame) -> pd.DataFrame:
    """One row per agent on the d_KL^10 rows (tau 10, iid): TABLE_COLUMNS, sorted by dkl_10.

    Rows whose kl or distances are not finite are left out of the respective
    means (never averaged in). Empty when the table has no fidelity columns or
    no d_KL^10 rows.
    """
    if not has_fidelity(testbed):
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    rows = metric_rows(testbed, "dkl_10")
    if rows.empty:
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    records = []
    for agent, group in rows.groupby(rows["agent"].astype(str), sort=False):
        kl = _numeric(group, "kl").to_numpy(float)
        kl = kl[np.isfinite(kl)]
        converged = group["reference_converged"] if "reference_converged" in group else pd.Series(dtype=object)
        converged = converged.dropna().map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))
        references = group["reference"].dropna().astype(str).unique() if "reference" in group else []
        records.append(
            {
                "agent": agent,
                "reference": ",".join(sorted(references)) or None,
                "dkl_10": float(kl.mean()) if kl.size else np.nan,
                "dkl_10_stderr": float(kl.std(ddof=1) / np.sqrt(kl.size)) if kl.size > 1 else np.nan,
                **{
                    column: float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
                    for column in ("tv_joint", "kl_to_reference", "agreement", "tv")
                    for values in [_numeric(group, column).to_numpy(float)]
                },
                "reference_converged": float(converged.mean()) if len(converged) else np.nan,
                "n": int(len(group)),
            }
        )
    table = pd.DataFrame(records, columns=list(TABLE_COLUMNS))
    return table.sort_values("dkl_10", kind="stable").reset_index(drop=True)


def hmc_floor(testbed: pd.DataFrame, agent: str = FLOOR_AGENT) -> float | None:
    """The mean d_KL^10 (tau 10, iid) of ``agent`` (hmc) over its finite rows, or None."""
    rows = metric_rows(testbed, "dkl_10")
    kl = _numeric(rows[rows["agent"].astype(str) == agent], "kl").to_numpy(float)
    kl = kl[np.isfinite(kl)]
    return float(kl.mean()) if kl.size else None


def _spearman_bootstrap(
    x: np.ndarray, y: np.ndarray, num_resamples: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """Spearman rho of (x, y) and the 5th/95th percentiles over bootstrap resamples
    (degenerate resamples, with constant x or y, left out)."""
    rho = float(pearson_rows(stats.rankdata(x), stats.rankdata(y)))
    idx = rng.integers(0, len(x), size=(num_resamples, len(x)))
    draws = pearson_rows(stats.rankdata(x[idx], axis=-1), stats.rankdata(y[idx], axis=-1))
    low, high = percentile_interval(draws)  # NaN when too few draws are defined
    return rho, low, high


def rank_correlations(table: pd.DataFrame, num_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Spearman between each distance (DISTANCES) and dkl_10 across the agents of
    ``fidelity_table``, with a bootstrap interval; CORRELATION_COLUMNS.

    A distance with fewer than MIN_POINTS agents with finite values gets NaN
    statistics (and its n). Each distance has its own Generator from (seed, its index).
    num_resamples must be >= 200 (correlation.min_resamples for the 90% interval).
    """
    check_num_resamples(num_resamples)
    records = []
    for index, distance in enumerate(DISTANCES):
        x = pd.to_numeric(table.get(distance, pd.Series(dtype=float)), errors="coerce").to_numpy(float)
        y = pd.to_numeric(table.get("dkl_10", pd.Series(dtype=float)), errors="coerce").to_numpy(float)
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if len(x) < MIN_POINTS:
            rho = low = high = float("nan")
        else:
            rng = np.random.default_rng([int(seed), 17, index])
            rho, low, high = _spearman_bootstrap(x, y, int(num_resamples), rng)
        records.append(
            {"distance": distance, "spearman": rho, "spearman_ci_low": low, "spearman_ci_high": high, "n": len(x)}
        )
    return pd.DataFrame(records, columns=list(CORRELATION_COLUMNS))


def plot_fidelity(
    table: pd.DataFrame, floor: float | None, directory: Path, stem: str = "fig_fidelity_vs_dkl10"
) -> list[Path]:
    """d_KL^10 to the environment (y) against each distance to the reference (x),
    one labelled point per agent, +-1 stderr in y; the HMC floor dashed."""
    distances = [d for d in DISTANCES if d in table and pd.to_numeric(table[d], errors="coerce").notna().any()]
    if table.empty or not distances:
        return skip_figure(stem, "needs testbed rows with tau 10 and the fidelity columns (testbed --reference)")
    fig, axes = new_figure(4.2 * len(distances), 3.8, ncols=len(distances))
    labelled = []
    for ax, distance in zip(axes, distances):
        shown = []
        for agent in agent_order(table["agent"]):
            row = table[table["agent"] == agent].iloc[0]
            if not (np.isfinite(row[distance]) and np.isfinite(row["dkl_10"])):
                continue
            ax.errorbar(row[distance], row["dkl_10"], yerr=row["dkl_10_stderr"], fmt="o", capsize=2, markersize=4,
                        color=agent_colour(agent))
            shown.append((row[distance], row["dkl_10"], agent))
        labelled.append((ax, shown))
        if floor is not None:
            ax.axhline(floor, color="black", linewidth=0.8, linestyle="--", label=f"{FLOOR_AGENT} floor")
            ax.legend(fontsize=7)
        ax.set_xlabel(DISTANCE_LABELS[distance])
        ax.set_ylabel(f"{METRIC_LABELS['dkl_10']} to the environment")
    figure_caption(
        fig,
        "Each point: one agent's means over its testbed problems and seeds; error bars: \u00b11 standard error of "
        "its mean d_KL^10 (sample standard deviation over those rows / sqrt(rows)).",
        4.2 * len(distances),
    )
    readable_log_ticks(*axes)
    drawn = False
    for ax, shown in labelled:
        if shown:
            x, y, names = zip(*shown)
            place_point_labels(ax, x, y, names, draw=not drawn)
            drawn = True
    return save_figure(fig, directory, stem)


def _fmt(value) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "nan" if not np.isfinite(value) else f"{value:.3f}"


def report_section(table: pd.DataFrame, correlations: pd.DataFrame, floor: float | None) -> str:
    """The report's markdown section on fidelity to the reference."""
    reference = next((r for r in table.get("reference", pd.Series(dtype=object)).dropna()), "the reference")
    lines = [
        f"## Distance to the reference posterior ({reference})",
        "",
        "Each agent's d_KL^10 to the environment beside its distance to the reference agent's predictive "
        "on the same problems (paper 004, Sec. 1.2, extended to joint predictions): joint total variation "
        "and d_KL^10 with the reference in place of the environment (tau = 10, iid inputs), and the "
        "marginal agreement and TV.",
        "",
    ]
    if floor is not None:
        lines += [
            f"HMC floor: the {FLOOR_AGENT} agent's own mean d_KL^10 is {_fmt(floor)} (drawn in the fidelity figure and "
            "in Fig. 2 when mlp ran): exact inference on the generative model, up to HMC's and the estimate's errors.",
            "",
        ]
    cols = list(TABLE_COLUMNS)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) if c not in ("agent", "reference", "n") else str(row[c]) for c in cols) + " |")
    lines.append("")
    for _, row in correlations.iterrows():
        if np.isfinite(row["spearman"]):
            lines.append(
                f"- Spearman rank correlation across agents of {DISTANCE_LABELS[row['distance']]} with d_KL^10 "
                f"to the environment: {interval_text(row['spearman'], row['spearman_ci_low'], row['spearman_ci_high'])} "
                f"(90% bootstrap interval over agents), n = {int(row['n'])} agents."
            )
        else:
            lines.append(
                f"- {DISTANCE_LABELS[row['distance']]}: too few agents with finite values to rank "
                f"(n = {int(row['n'])}, need >= {MIN_POINTS})."
            )
    if "reference_converged" in table and (pd.to_numeric(table["reference_converged"], errors="coerce") < 1).any():
        lines.append(
            "- Some reference fits did not pass their convergence checks (column reference_converged: the share "
            "of rows that did); distances to them are less trustworthy."
        )
    lines.append("")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class FidelityOutputs:
    """What ``fidelity_outputs`` wrote: file paths (tables and figures) and the report section."""

    paths: tuple[Path, ...]
    figures: tuple[Path, ...]
    report: str


def fidelity_outputs(
    testbed: pd.DataFrame, directory: Path, num_resamples: int = 1000, seed: int = 0, draw_figures: bool = True
) -> FidelityOutputs:
    """Writes fidelity.csv, fidelity_correlations.csv and (with ``draw_figures``, which
    needs matplotlib) the figure to ``directory``; nothing (and an empty report) when
    the table has no fidelity columns."""
    table = fidelity_table(testbed)
    if table.empty:
        return FidelityOutputs((), (), "")
    directory = Path(directory)
    correlations = rank_correlations(table, num_resamples, seed)
    floor = hmc_floor(testbed)
    paths = []
    for name, frame in (("fidelity.csv", table), ("fidelity_correlations.csv", correlations)):
        write_results_csv(directory / name, frame)
        paths.append(directory / name)
    figures = tuple(plot_fidelity(table, floor, directory)) if draw_figures else ()
    return FidelityOutputs(tuple(paths), figures, report_section(table, correlations, floor))
