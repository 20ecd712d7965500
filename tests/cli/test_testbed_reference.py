"""`decision-bench testbed --reference`: the fidelity columns, the run's metadata, the
reference's fit shared by the agents' cells and one-line argument errors, at tiny sizes
(moved from tests/evaluation/test_fidelity_wiring.py, which tests run_testbed's wiring)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.envs.testbed import make_testbed_problem
from decision_bench.evaluation import runner
from decision_bench.evaluation.runner import COLUMNS, FIDELITY_COLUMNS

CHEAP = ("uniform", "logistic")
GRID = ["--num-train", "10", "--temperature", "0.1", "--tau", "1,10", "--num-test", "12",
        "--num-models", "6", "--seeds", "2"]
TINY_HMC = dict(num_chains=2, num_warmup=10, num_samples=4, thinning=1, num_integration_steps=3)


def _argv(out, agents, *extra):
    return ["testbed", "--agents", ",".join(agents), *GRID, *extra, "--out", str(out), "--no-progress"]


@pytest.fixture(scope="module")
def cheap_run(tmp_path_factory):
    """uniform scored against a logistic reference (no HMC: fast)."""
    out = tmp_path_factory.mktemp("fidelity") / "run"
    assert cli.main(_argv(out, ("uniform",), "--reference", "logistic")) == 0
    return out


@pytest.mark.slow  # ~30 s on 2 shared cores: compiling the fit, evaluation and fidelity programs
def test_reference_option_writes_the_fidelity_columns_and_records_the_reference(cheap_run):
    """The command's rows are run_testbed's with a reference (their values:
    tests/evaluation/test_fidelity_wiring.py); its metadata names the reference."""
    frame = pd.read_csv(cheap_run / "testbed.csv")
    assert list(frame.columns) == list(COLUMNS) + list(FIDELITY_COLUMNS)
    assert len(frame) == 2 * 2  # designs x seeds
    assert (frame["reference"] == "logistic").all()
    assert frame["tv_joint"].between(0.0, 1.0).all()
    meta = json.loads((cheap_run / "testbed.json").read_text())
    assert meta["reference"] == {"agent": "logistic", "options": {}}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--reference", "hcm"], "--reference must be one of"),
        (["--reference-option", "num_chains=2"], "--reference-option needs --reference"),
        (["--reference", "hmc", "--reference-option", "num_chains"], "--reference-option must be NAME=VALUE, got 'num_chains'"),
        (["--reference", "hmc", "--reference-option", "chains=2"], r"--reference-option: unknown hyperparameter\(s\) \['chains'\]"),
        (["--reference", "hmc", "--reference-option", "num_chains=0"], "--reference-option: num_chains must be"),
    ],
)
def test_bad_reference_arguments_fail_with_one_line(tmp_path, capsys, extra, message):
    assert cli.main(_argv(tmp_path / "out", CHEAP, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(message, err), err
    assert not (tmp_path / "out" / "testbed.csv").exists()


# ---------------------------------------------------------------- hmc reference


@pytest.mark.slow
def test_hmc_reference_sees_the_agents_data(tmp_path, monkeypatch):
    pytest.importorskip("blackjax")
    kept = {}
    original_put = runner.ReferenceFits.put

    def recording_put(self, key, value):
        kept[key] = value
        original_put(self, key, value)

    monkeypatch.setattr(runner.ReferenceFits, "put", recording_put)
    out = tmp_path / "run"
    options = [item for k, v in TINY_HMC.items() for item in ("--reference-option", f"{k}={v}")]
    assert cli.main(_argv(out, ("uniform", "hmc"), "--reference", "hmc", *options)) == 0
    frame = pd.read_csv(out / "testbed.csv")
    assert list(frame.columns) == list(COLUMNS) + list(FIDELITY_COLUMNS)
    assert frame["reference_converged"].isin([True, False]).all()  # hmc has diagnostics
    assert frame["tv_joint"].between(0.0, 1.0).all()
    # the reference's training buffer is exactly each seed's training set
    fits = [v for k, v in kept.items() if k[0] == "hmc" and k[2].num_train == 10]
    assert len(fits) == 1  # one fit of the setting, shared by both agents' cells
    _, states, converged, _ = fits[-1]
    assert converged.shape == (2,)
    for seed in (0, 1):
        data = make_testbed_problem(num_train=10, temperature=0.1, seed=seed).train_data
        assert bool(np.all(np.asarray(states.data.seen[seed])))
        np.testing.assert_array_equal(np.asarray(states.data.x[seed]), np.asarray(data.x))
        np.testing.assert_array_equal(np.asarray(states.data.y[seed]), np.asarray(data.y))
    # the hmc agent (not the reference: its own fit key) against the reference: small
    # but not zero distance, smaller than uniform's at tau = 10
    tau10 = frame[frame["tau"] == 10].groupby("agent")["tv_joint"].mean()
    assert 0.0 < tau10["hmc"] < tau10["uniform"]
