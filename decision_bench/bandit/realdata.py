"""Thompson sampling on real classification data: ClassificationBandit-v0 over the
paper's four bundled data sets (paper 001, Sec. 5)."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from decision_bench.bandit.run import run_bandit
from decision_bench.data import PAPER_DATASETS
from decision_bench.envs.classification import ClassificationBandit


def realdata_bandit_sweep(datasets: Sequence[str] = PAPER_DATASETS) -> dict[str, Any]:
    """{"ClassificationBandit-v0/<dataset>": functional core} for each data set (built on call)."""
    return {f"ClassificationBandit-v0/{d}": ClassificationBandit(dataset=d) for d in datasets}


def run_realdata_bandit(
    agent_names: str | Sequence[str],
    datasets: Sequence[str] = PAPER_DATASETS,
    num_steps: int = 1000,
    seeds: int | Sequence[int] = 5,
    **bandit_kwargs: Any,
) -> pd.DataFrame:
    """``run_bandit`` of every agent on ClassificationBandit-v0 over every data set;
    the rows of run_bandit with a ``dataset`` column. bandit_kwargs go to run_bandit."""
    listed = [a.strip() for a in (agent_names.split(",") if isinstance(agent_names, str) else agent_names)]
    frames = []
    for env_name, core in realdata_bandit_sweep(datasets).items():
        for agent in listed:
            frame = run_bandit(agent, core, num_steps, seeds, **bandit_kwargs)
            frame["env"] = "ClassificationBandit-v0"
            frame.insert(frame.columns.get_loc("env") + 1, "dataset", core.name)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)
