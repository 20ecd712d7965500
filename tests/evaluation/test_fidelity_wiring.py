"""Fidelity to a reference, wired through run_testbed and `analyze` (analysis/fidelity.py),
at tiny sizes; `decision-bench testbed --reference` in tests/cli/test_testbed_reference.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from decision_bench.analysis.fidelity import (
    fidelity_outputs,
    fidelity_table,
    hmc_floor,
    rank_correlations,
)
from decision_bench.evaluation import Reference, custom_sweep, run_testbed
from decision_bench.evaluation.runner import COLUMNS, FIDELITY_COLUMNS
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting
from decision_bench.experiments.testbed_cell import sweep_cells


@pytest.fixture(scope="module")
def logistic_reference_rows():
    """uniform scored against a logistic reference (no HMC: fast), on 2 seeds of one
    tiny setting at tau 1 and 10."""
    sweep = custom_sweep([2], [10], [0.1], taus=[1, 10])
    return run_testbed(["uniform"], sweep, 2, num_test=12, num_models=6, reference="logistic", progress=False)


@pytest.mark.slow  # ~30 s on 2 shared cores: compiling the fit, evaluation and fidelity programs
def test_reference_adds_the_fidelity_columns_with_valid_values(logistic_reference_rows):
    frame = logistic_reference_rows
    assert list(frame.columns) == list(COLUMNS) + list(FIDELITY_COLUMNS)
    assert len(frame) == 2 * 2  # designs x seeds
    assert (frame["reference"] == "logistic").all()
    for column in ("agreement", "tv", "tv_joint"):
        assert frame[column].between(0.0, 1.0).all(), column
    assert (frame["kl_to_reference"] > -1e-5).all() and np.isfinite(frame["kl_to_reference"]).all()
    assert frame["reference_converged"].isna().all()  # logistic has no convergence checks
    # the marginal values are one per (agent, seed), repeated on every design's row
    assert (frame.groupby(["agent", "seed"])[["agreement", "tv"]].nunique() == 1).all().all()
    # uniform predicts 1/2: its distance to a fitted reference is positive and grows with tau
    uniform = frame[frame["agent"] == "uniform"]
    tv1 = uniform[uniform["tau"] == 1]["tv_joint"].mean()
    tv10 = uniform[uniform["tau"] == 10]["tv_joint"].mean()
    assert 0.0 < tv1 < tv10


def test_reference_is_part_of_the_cell_id_and_absent_reference_keeps_old_ids():
    sweep = custom_sweep([2], [10], [0.1])
    size = dict(num_test=10, num_models=10)
    plain = sweep_cells(["mlp"], sweep, (0,), **size)
    again = sweep_cells(["mlp"], sweep, (0,), **size, reference=None, reference_options=None)
    with_ref = sweep_cells(["mlp"], sweep, (0,), **size, reference="hmc", reference_options={})
    tiny = sweep_cells(["mlp"], sweep, (0,), **size, reference="hmc", reference_options={"num_chains": 2})
    assert plain[0].id == again[0].id
    assert len({plain[0].id, with_ref[0].id, tiny[0].id}) == 3
    assert "reference" not in dict(plain[0].problem)


def test_run_testbed_reference_errors():
    sweep = custom_sweep([2], [10], [0.1], taus=[1])
    with pytest.raises(ValueError, match="reference must be one of"):
        run_testbed(["uniform"], sweep, 1, reference="nope", progress=False)
    with pytest.raises(ValueError, match="reference_overrides needs a reference"):
        run_testbed(["uniform"], sweep, 1, reference_overrides={"num_chains": 2}, progress=False)
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['chains'\] for agent 'hmc'"):
        run_testbed(["uniform"], sweep, 1, reference="hmc", reference_overrides={"chains": 2}, progress=False)
    with pytest.raises(ValueError, match="reference_overrides and reference_fits go into the Reference"):
        run_testbed(["uniform"], sweep, 1, reference=Reference("hmc"), reference_overrides={"num_chains": 2})
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['chains'\] for agent 'hmc'"):
        run_testbed(["uniform"], sweep, 1, reference=Reference("hmc", {"chains": 2}), progress=False)
    coins = Sweep("coins", (TestbedSetting(2, 10, 0.1, prior="coins"),), sweep.designs, num_seeds=1)
    with pytest.raises(ValueError, match=r"reference 'hmc' cannot model the setting \(prior='coins'"):
        run_testbed(["uniform"], coins, 1, reference="hmc", num_test=4, num_models=2, progress=False)


# ---------------------------------------------------------------- analysis


def _synthetic(order):
    """Four agents whose d_KL^10 rises in `order` and whose distances rise with their index."""
    rows = []
    for i, agent in enumerate(["a", "b", "c", "hmc"]):
        for seed in range(3):
            for tau in (1, 10):
                rows.append(dict(agent=agent, tau=tau, kappa=np.nan, seed=seed, kl=0.1 * order[i] + 0.01 * seed,
                                 reference="hmc", agreement=1.0 - 0.1 * i, tv=0.05 * i, tv_joint=0.1 * (i + 1),
                                 kl_to_reference=0.2 * (i + 1), reference_converged=seed != 0))
    return pd.DataFrame(rows)


def test_fidelity_table_floor_and_rank_correlations():
    frame = _synthetic([1, 2, 3, 4])
    table = fidelity_table(frame)
    assert list(table["agent"]) == ["a", "b", "c", "hmc"]
    row = table.set_index("agent").loc["b"]
    assert row["dkl_10"] == pytest.approx(0.21) and row["tv_joint"] == pytest.approx(0.2)
    assert row["dkl_10_stderr"] == pytest.approx(0.01 / np.sqrt(3))
    assert row["reference_converged"] == pytest.approx(2 / 3) and row["n"] == 3
    assert hmc_floor(frame) == pytest.approx(0.41)
    assert hmc_floor(frame[frame["agent"] != "hmc"]) is None
    same = rank_correlations(table, 400, 0).set_index("distance")
    assert same.loc["tv_joint", "spearman"] == pytest.approx(1.0) and same.loc["tv_joint", "n"] == 4
    assert same.loc["tv_joint", "spearman_ci_low"] <= 1.0 <= same.loc["tv_joint", "spearman_ci_high"] + 1e-12
    reversed_ = rank_correlations(fidelity_table(_synthetic([4, 3, 2, 1])), 400, 0).set_index("distance")
    assert reversed_.loc["kl_to_reference", "spearman"] == pytest.approx(-1.0)
    mixed = rank_correlations(fidelity_table(_synthetic([2, 1, 4, 3])), 500, 0).set_index("distance")
    assert mixed.loc["tv_joint", "spearman"] == pytest.approx(0.6)  # 1 - 6 * 4 / (4 * 15)
    assert mixed.loc["tv_joint", "spearman_ci_low"] < 0.6 < mixed.loc["tv_joint", "spearman_ci_high"]


def test_fidelity_outputs_write_tables_figure_and_section(tmp_path):
    out = fidelity_outputs(_synthetic([1, 2, 3, 4]), tmp_path, 400, 0)
    assert {p.name for p in out.paths} == {"fidelity.csv", "fidelity_correlations.csv"}
    assert {p.suffix for p in out.figures} == {".png", ".pdf"} and all(p.exists() for p in out.figures)
    assert "## Distance to the reference posterior (hmc)" in out.report
    assert "HMC floor: the hmc agent's own mean d_KL^10 is 0.410" in out.report
    assert "Spearman rank correlation across agents of joint TV" in out.report
    plain = _synthetic([1, 2, 3, 4]).drop(columns=["tv_joint", "kl_to_reference"])
    empty = fidelity_outputs(plain, tmp_path / "none", 400, 0)
    assert empty.paths == () and empty.report == ""
