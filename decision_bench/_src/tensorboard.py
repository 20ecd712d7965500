"""Optional TensorBoard logging of a run as it goes (``--tensorboard DIR``).

Event files are written by tensorboardX (``pip install 'decision-bench[tensorboard]'``),
which needs no TensorFlow; ``tensorboard --logdir DIR`` shows them. Scalars:

- ``regret/<bandit setting>/<agent>/seed<s>`` ("+" in a name is written "_plus"): cumulative regret against the step,
  from the rows of bandit.csv as they are logged (each chunk or cell);
- ``dkl/<design>/<agent>/d<d>_beta<beta>``: the mean d_KL over seeds against the
  training-set size T (the step axis), per testbed setting, as its cell finishes.

A value is written once per (tag, step): results files rewritten as a run grows
add only their new rows.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

INSTALL_HINT = "pip install 'decision-bench[tensorboard]'"


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bandit_setting(row) -> str:
    """env_d2_A40_beta0.1 (with _tanh_10-10 for another family), from the row's setting columns."""
    parts = [str(row.get("env", "bandit"))]
    for column, prefix in (("input_dim", "d"), ("num_actions", "A"), ("temperature", "beta")):
        if column in row and not pd.isna(row[column]):
            parts.append(f"{prefix}{_number(row[column])}")
    for column in ("dataset", "activation", "hidden_sizes"):
        if column in row and not pd.isna(row[column]) and str(row[column]):
            parts.append(str(row[column]))
    return "_".join(parts)


def _name(agent) -> str:
    """An agent name as a tag part: TensorBoard keeps [A-Za-z0-9_./-] and would turn
    "ensemble+" into "ensemble_", so "+" becomes "_plus"."""
    return str(agent).replace("+", "_plus")


def _design(tau, kappa) -> str:
    return f"tau{int(tau)}" + ("" if pd.isna(kappa) else f"_kappa{int(kappa)}")


class TensorBoardLog:
    """Scalars of a run into event files under ``directory``; ``close()`` when done."""

    def __init__(self, directory: str | Path):
        try:
            from tensorboardX import SummaryWriter  # noqa: PLC0415 - optional dependency
        except ImportError:
            raise ValueError(f"--tensorboard needs tensorboardX, which is not installed: {INSTALL_HINT}") from None
        self.directory = Path(directory)
        self.writer = SummaryWriter(logdir=str(self.directory))
        self.written: set[tuple[str, int]] = set()

    def _add(self, tag: str, value: float, step: int) -> None:
        if (tag, step) in self.written or not math.isfinite(value):
            return
        self.written.add((tag, step))
        self.writer.add_scalar(tag, value, global_step=step)

    def bandit_rows(self, rows: pd.DataFrame) -> None:
        """Regret curves from bandit.csv rows (agent, seed, step, cumulative_regret, setting columns)."""
        for row in rows.to_dict("records"):
            tag = f"regret/{_bandit_setting(row)}/{_name(row['agent'])}/seed{int(row['seed'])}"
            self._add(tag, float(row["cumulative_regret"]), int(row["step"]))
        self.writer.flush()

    def testbed_rows(self, rows: pd.DataFrame) -> None:
        """Mean d_KL over seeds per agent, design and (d, beta), at step T, from testbed.csv rows."""
        if not {"kl", "tau", "num_train"} <= set(rows.columns):
            return
        frame = rows.assign(
            design=[_design(t, k) for t, k in zip(rows["tau"], rows.get("kappa", pd.Series(float("nan"), rows.index)))]
        )
        keys = ["agent", "design", "input_dim", "temperature", "num_train"]
        for (agent, design, d, beta, num_train), kl in frame.groupby(keys, dropna=False)["kl"]:
            self._add(f"dkl/{design}/{_name(agent)}/d{_number(d)}_beta{_number(beta)}", float(kl.mean()),
                      int(num_train))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
