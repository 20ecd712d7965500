"""Does the synthetic testbed predict real data? (paper 001, Fig. 7 and App. D, Fig. 11)

``correlate_with_realdata(testbed, realdata)`` takes the rows of ``run_testbed``
(column ``kl``) and of ``run_realdata`` (column ``nll``), reduces each to one
point per agent and test design (tau, kappa): the mean over all problems,
seeds and data sets of that design, and correlates the two across agents
(Pearson on the log scale and Spearman, with percentile-bootstrap intervals,
as ``analysis.correlation.correlate``). Rows whose kl or nll is NaN (a failed
estimate) are left out and counted, never averaged in.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from decision_bench.analysis.correlation import MIN_POINTS, correlate, spearman

POINT_COLUMNS = ("agent", "tau", "kappa", "testbed_kl", "realdata_nll", "testbed_rows", "realdata_rows")
TABLE_COLUMNS = (
    "tau",
    "kappa",
    "num_agents",
    "pearson_log",
    "pearson_ci_low",
    "pearson_ci_high",
    "spearman",
    "spearman_ci_low",
    "spearman_ci_high",
)


class RealDataCorrelation(NamedTuple):
    table: pd.DataFrame  # one row per design shared by both frames: TABLE_COLUMNS
    points: pd.DataFrame  # one row per (agent, design): POINT_COLUMNS


def _agent_means(frame: pd.DataFrame, value: str, name: str) -> pd.DataFrame:
    missing = sorted({"agent", "tau", "kappa", value} - set(frame.columns))
    if missing:
        raise ValueError(f"{name} lacks columns {missing}; it has {list(frame.columns)}")
    rows = frame[["agent", "tau", "kappa", value]].copy()
    # A missing kappa means iid; -1 keeps it as a groupby key (NaN keys would be dropped).
    rows["kappa"] = rows["kappa"].astype("Float64").fillna(-1).astype(int)
    rows = rows[np.isfinite(rows[value].astype(float))]
    return rows.groupby(["agent", "tau", "kappa"], sort=False)[value].agg(["mean", "count"]).reset_index()


def correlate_with_realdata(
    testbed: pd.DataFrame,
    realdata: pd.DataFrame,
    num_resamples: int = 1000,
    seed: int = 0,
) -> RealDataCorrelation:
    """Per-agent testbed d_KL against real-data NLL, per design (tau, kappa).

    testbed: rows with agent, tau, kappa, kl; realdata: rows with agent, tau,
    kappa, nll. Only agents and designs present in both count; a design with
    fewer than 3 agents gets NaN correlations. Pearson is on the log scale, so
    it is NaN when a mean is <= 0 (Spearman still applies).
    """
    kl = _agent_means(testbed, "kl", "testbed").rename(columns={"mean": "testbed_kl", "count": "testbed_rows"})
    nll = _agent_means(realdata, "nll", "realdata").rename(
        columns={"mean": "realdata_nll", "count": "realdata_rows"}
    )
    points = kl.merge(nll, on=["agent", "tau", "kappa"], how="inner")
    table_rows = []
    for (tau, kappa), group in points.groupby(["tau", "kappa"], sort=True):
        x, y = group["testbed_kl"].to_numpy(float), group["realdata_nll"].to_numpy(float)
        row = {"tau": tau, "kappa": kappa, "num_agents": len(group)}
        row.update({c: float("nan") for c in TABLE_COLUMNS[3:]})
        if len(group) >= MIN_POINTS:
            if np.all(x > 0) and np.all(y > 0):
                row.update(correlate(x, y, num_resamples, seed).as_dict())
                row.pop("n")
            else:
                row["spearman"] = spearman(x, y)
        table_rows.append(row)
    table = pd.DataFrame(table_rows, columns=list(TABLE_COLUMNS))
    for frame in (table, points):
        frame["kappa"] = frame["kappa"].astype("Int64").mask(frame["kappa"] == -1)
    return RealDataCorrelation(table=table, points=points[list(POINT_COLUMNS)])
