"""scripts/sgmcmc_beside_bayes.py: agents compared on the problems all of them have, the
differences paired per problem (checked by hand on a tiny table)."""

from __future__ import annotations

import math

import pandas as pd
import pytest


def _rows(values: dict[str, dict[int, float]], num_train: int = 10) -> pd.DataFrame:
    return pd.DataFrame([
        {"agent": agent, "num_train": num_train, "temperature": 0.1, "tau": 10, "seed": seed, "kl": kl}
        for agent, per_seed in values.items() for seed, kl in per_seed.items()
    ])


def test_only_problems_every_agent_has_count_and_differences_are_paired(load_script):
    script = load_script("sgmcmc_beside_bayes")
    rows = _rows({
        "sgmcmc": {0: 1.0, 1: 3.0, 2: 5.0, 3: 100.0},  # seed 3: no hmc row, so left out
        "hmc": {0: 0.5, 1: 2.0, 2: 4.5},
    })
    table = script.paired_table(rows, "sgmcmc", ["hmc"])
    line = table.loc[(10, 0.1, 10)]
    assert line.n == 3
    assert line.sgmcmc == pytest.approx(3.0) and line.hmc == pytest.approx(7.0 / 3)
    # per-problem differences 0.5, 1.0, 0.5: mean 2/3, se = std(ddof 1) / sqrt(3)
    assert line.minus_hmc == pytest.approx(2.0 / 3)
    assert line.minus_hmc_se == pytest.approx(math.sqrt(1.0 / 12) / math.sqrt(3))
    # unpaired standard errors would be far larger than the paired one here
    assert line.sgmcmc_se > 3 * line.minus_hmc_se


def test_a_chain_length_without_rows_is_refused(load_script, tmp_path):
    script = load_script("sgmcmc_beside_bayes")
    path = tmp_path / "sgmcmc.csv"
    rows = _rows({"sgmcmc": {0: 1.0}}).assign(kappa=float("nan"), num_steps=5000)
    rows.to_csv(path, index=False)
    assert len(script.sgmcmc_rows(path, 5000)) == 1
    with pytest.raises(ValueError, match="num_steps = 500000"):
        script.sgmcmc_rows(path, 500_000)
