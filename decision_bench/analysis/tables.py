"""Testbed averages per agent beside paper 000's Table 2.

``testbed_table(testbed)`` averages each metric per agent over the testbed's
settings as a stratified mean: a setting is one (input_dim, num_train,
temperature; those the table has, all rows being one setting without them); its
mean and standard error are over seeds, the agent's figure is
the mean over settings and its standard error sqrt(sum of the settings' se^2) /
number of settings (settings have independent environments). Accuracy and ECE
come from the tau = 1 rows (they are computed once per fitted agent).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# Paper 000, Table 2 (2-D testbed, the paper2d sweep): accuracy, ECE, d_KL^1, d_KL^10.
PAPER000_TABLE2 = {
    "mlp": (0.793, 0.078, 0.129, 1.367),
    "ensemble": (0.792, 0.079, 0.128, 1.356),
    "dropout": (0.793, 0.080, 0.128, 1.347),
    "bbb": (0.792, 0.079, 0.129, 1.375),
    "hypermodel": (0.793, 0.081, 0.130, 1.107),
    "ensemble+": (0.790, 0.085, 0.129, 1.015),
    "sgmcmc": (0.796, 0.082, 0.122, 0.947),
}
TABLE2_METRICS = ("accuracy", "ece", "dkl_1", "dkl_10")
_SETTING = ["input_dim", "num_train", "temperature"]


def _stratified(rows: pd.DataFrame, column: str) -> tuple[float, float, int]:
    """(mean over settings of per-setting means, its standard error, settings)."""
    keys = [c for c in _SETTING if c in rows.columns]
    # groupby needs a key: without setting columns every row is in one setting.
    per = rows.groupby(keys if keys else np.zeros(len(rows)))[column].agg(["mean", "std", "count"])
    se = per["std"] / np.sqrt(per["count"])
    return float(per["mean"].mean()), float(np.sqrt((se**2).sum()) / len(per)), len(per)


def testbed_table(testbed: pd.DataFrame) -> pd.DataFrame:
    """One row per agent: mean and se of accuracy, ECE, d_KL^1, d_KL^10 (iid) and, where
    measured, d_KL^{10, kappa=2}, plus the number of settings averaged."""
    testbed = testbed.reset_index(drop=True)  # masks below align on a unique index
    kappa = testbed["kappa"] if "kappa" in testbed else pd.Series(np.nan, index=testbed.index)
    iid = kappa.isna()
    selections = {
        "accuracy": (testbed["tau"] == 1) & iid,
        "ece": (testbed["tau"] == 1) & iid,
        "dkl_1": (testbed["tau"] == 1) & iid,
        "dkl_10": (testbed["tau"] == 10) & iid,
        "dkl_10_kappa2": (testbed["tau"] == 10) & (kappa == 2),
    }
    source = {"accuracy": "accuracy", "ece": "ece", "dkl_1": "kl", "dkl_10": "kl", "dkl_10_kappa2": "kl"}
    rows = []
    for agent, frame in testbed.groupby("agent", sort=False):
        row: dict = {"agent": agent}
        for metric, mask in selections.items():
            chosen = frame[mask.loc[frame.index].to_numpy()]
            if chosen.empty or source[metric] not in chosen:
                continue
            mean, se, settings = _stratified(chosen, source[metric])
            row[metric], row[f"{metric}_se"] = mean, se
            row["settings"] = max(row.get("settings", 0), settings)
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["agent"])


def table2_side_by_side(testbed: pd.DataFrame) -> pd.DataFrame:
    """``testbed_table`` with paper 000's Table 2 value of each metric beside ours
    (columns ``paper_<metric>``; NaN for agents the table does not list)."""
    table = testbed_table(testbed)
    if table.empty:
        return table
    for i, metric in enumerate(TABLE2_METRICS):
        table[f"paper_{metric}"] = [PAPER000_TABLE2.get(a, (np.nan,) * 4)[i] for a in table["agent"]]
    return table
