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


def design_name(tau, kappa) -> str:
    """'d_KL^10' for tau = 10 iid test inputs, 'd_KL^10,kappa=2' for dyadic ones."""
    return f"d_KL^{int(tau)}" + ("" if pd.isna(kappa) else f",kappa={int(kappa)}")


def design_summary(testbed: pd.DataFrame, baseline: str = "mlp") -> pd.DataFrame:
    """Absolute d_KL per agent and test design, with standard errors.

    Index (agent, design), agents in order of appearance, designs by (tau, kappa).
    Columns: mean (the stratified mean over settings, as testbed_table: the mean over
    settings of each setting's mean over seeds), stderr (its standard error: NaN with
    one seed), settings, seeds (distinct seeds averaged), and, only when `baseline`
    ran beside other agents, ``vs_<baseline>``: mean / the baseline's mean for the
    same design (a run of the baseline alone would show only 1s). Rows whose kl is
    not finite are left out of the means (the runner's notes count them); an
    (agent, design) with none finite keeps its row with NaN.
    """
    frame = testbed.reset_index(drop=True)
    kappa = frame["kappa"] if "kappa" in frame else pd.Series(np.nan, index=frame.index)
    kl = pd.to_numeric(frame["kl"], errors="coerce")
    frame = frame.assign(kl=kl.where(np.isfinite(kl)), _kappa=kappa.astype(float), _tau=frame["tau"].astype(int))
    records = []
    agents = list(dict.fromkeys(frame["agent"].astype(str)))
    for (tau, kap), design_rows in frame.groupby(["_tau", "_kappa"], dropna=False, sort=True):
        for agent in agents:
            rows = design_rows[design_rows["agent"].astype(str) == agent]
            if rows.empty:
                continue
            finite = rows[rows["kl"].notna()]
            mean, se, settings = _stratified(finite, "kl") if len(finite) else (np.nan, np.nan, 0)
            records.append(
                {"agent": agent, "design": design_name(tau, kap), "mean": mean, "stderr": se,
                 "settings": settings, "seeds": int(finite["seed"].nunique()) if "seed" in finite else len(finite)}
            )  # fmt: skip
    columns = ["agent", "design", "mean", "stderr", "settings", "seeds"]
    table = pd.DataFrame(records, columns=columns)
    order = {agent: i for i, agent in enumerate(agents)}
    table = table.sort_values("agent", key=lambda a: a.map(order), kind="stable").set_index(["agent", "design"])
    if baseline in order and len(order) > 1:
        reference = table.xs(baseline, level="agent")["mean"]
        designs = table.index.get_level_values("design")
        table[f"vs_{baseline}"] = table["mean"].to_numpy() / reference.reindex(designs).to_numpy()
    return table


def table2_side_by_side(testbed: pd.DataFrame) -> pd.DataFrame:
    """``testbed_table`` with paper 000's Table 2 value of each metric beside ours
    (columns ``paper_<metric>``; NaN for agents the table does not list)."""
    table = testbed_table(testbed)
    if table.empty:
        return table
    for i, metric in enumerate(TABLE2_METRICS):
        table[f"paper_{metric}"] = [PAPER000_TABLE2.get(a, (np.nan,) * 4)[i] for a in table["agent"]]
    return table


def _design_column(frame: pd.DataFrame, prefix: str) -> pd.Series:
    """"<prefix>1", "<prefix>10,kappa=2": each row's test design as a label."""
    return frame["tau"].astype(str).radd(prefix) + frame["kappa"].map(
        lambda k: "" if pd.isna(k) else f",kappa={int(k)}"
    )


def realdata_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean NLL per agent (rows) and design (columns), over data sets, sizes and seeds."""
    design = _design_column(frame, "NLL^")
    return frame.assign(design=design).groupby(["agent", "design"], sort=False)["nll"].mean().unstack("design")


def fidelity_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean agreement, tv, tv_joint and kl_to_reference per agent (rows) and design."""
    design = _design_column(frame, "tau=")
    columns = ["agreement", "tv", "tv_joint", "kl_to_reference"]
    return frame.assign(design=design).groupby(["agent", "design"], sort=False)[columns].mean()


def seed_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per agent: mean, standard error and count of the per-SEED final regrets
    (the final_regret column, one value per seed), not of the logged rows."""
    last = df.groupby(["agent", "seed"], sort=False).final_regret.first()
    return last.groupby(level="agent", sort=False).agg(["mean", "sem", "count"])


def failed_seed_lines(df: pd.DataFrame, csv_name: str = "bandit.csv") -> list[str]:
    """One line per agent and seed whose rows carry an error (a seed stopped by
    non-finite parameters, ...), with the reason from the error column: the summary
    leaves such a seed out of its mean and count, and would otherwise show only NaN or
    a smaller count, the reason in the CSV (``csv_name``) alone."""
    if "error" not in df.columns:
        return []
    errors = df["error"].fillna("").astype(str)
    failed = df[errors != ""].groupby(["agent", "seed"], sort=False)["error"].first()
    return [
        f"note: {agent} seed {seed} failed: {error} (left out of the summary; see the error column of {csv_name})"
        for (agent, seed), error in failed.items()
    ]
