"""``decision-bench testbed``: a named sweep's CSV and summary; with a custom grid: custom_sweep,
the list flags and their errors."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.analysis.tables import design_summary
from decision_bench.cli import testbed as command
from decision_bench.cli import testbed_flags
from decision_bench.evaluation import custom_sweep, get_sweep
from decision_bench.evaluation.runner import COLUMNS
from decision_bench.evaluation.sweeps import TestbedSetting, TestDesign


def test_custom_sweep_is_the_product_of_settings_and_the_documented_designs():
    sweep = custom_sweep([2], [3, 30, 300], [0.01, 0.1, 0.5], [1, 10], kappa=2, num_seeds=4)
    assert sweep.name == "custom" and sweep.num_seeds == 4
    assert sweep.settings[:2] == (TestbedSetting(2, 3, 0.01), TestbedSetting(2, 3, 0.1))
    assert {(s.input_dim, s.num_train, s.temperature) for s in sweep.settings} == {
        (2, t, b) for t in (3, 30, 300) for b in (0.01, 0.1, 0.5)
    }
    # tau iid for every tau, then (tau, kappa) for tau > 1 only
    assert sweep.designs == (TestDesign(1), TestDesign(10), TestDesign(10, 2))
    assert sweep.num_problems == 9 * 3 * 4


def test_custom_sweep_without_kappa_and_with_single_values():
    sweep = custom_sweep(10, 100, 0.1)
    assert sweep.settings == (TestbedSetting(10, 100, 0.1),)
    assert sweep.designs == (TestDesign(1), TestDesign(10))
    assert custom_sweep(2, 0, 1.0, taus=[1, 5, 10], kappa=3).designs == (
        TestDesign(1), TestDesign(5), TestDesign(10), TestDesign(5, 3), TestDesign(10, 3)
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(input_dims=[], num_trains=[3], temperatures=[0.1]), "input_dims must list at least one value"),
        (dict(input_dims=[2], num_trains=[3, 3], temperatures=[0.1]), "num_trains must not repeat values"),
        (dict(input_dims=[2], num_trains=[-1], temperatures=[0.1]), r"num_trains\[0\] must be an integer >= 0, got -1"),
        (dict(input_dims=[2], num_trains=[3], temperatures=[0.0]), r"temperatures\[0\] must be a finite number > 0"),
        (dict(input_dims=[2], num_trains=[3], temperatures=[0.1], taus=[1], kappa=2), "kappa needs some tau > 1"),
        (dict(input_dims=[2], num_trains=[3], temperatures=[0.1], num_seeds=0), "num_seeds must be an integer >= 1"),
    ],
)
def test_custom_sweep_rejects_bad_grids(kwargs, message):
    with pytest.raises(ValueError, match=message):
        custom_sweep(**kwargs)


def test_list_parsers():
    assert testbed_flags.parse_int_list("--num-train", " 3, 30 ,300", 0) == (3, 30, 300)
    assert testbed_flags.parse_number_list("--temperature", "0.01,0.1,5e-1") == (0.01, 0.1, 0.5)
    with pytest.raises(ValueError) as error:
        testbed_flags.parse_int_list("--num-train", "3,x", 0)
    assert str(error.value) == "--num-train must be a comma-separated list of integers >= 0, got '3,x'"
    with pytest.raises(ValueError) as error:
        testbed_flags.parse_number_list("--temperature", "0.1,-1")
    assert str(error.value) == "--temperature must be a comma-separated list of numbers > 0, got '0.1,-1'"
    for bad in ("", "1,", "1.5", "0"):
        with pytest.raises(ValueError, match="--tau must be a comma-separated list of integers >= 1"):
            testbed_flags.parse_int_list("--tau", bad, 1)
    with pytest.raises(ValueError, match="--tau must not repeat a value, got '1,10,1'"):
        testbed_flags.parse_int_list("--tau", "1,10,1", 1)


def _args(argv):
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["testbed", *argv])


def test_named_sweeps_are_unchanged_without_grid_flags():
    args = _args(["--out", "x"])
    assert args.sweep is None and testbed_flags.grid_sweep(args) is None  # main runs DEFAULT_SWEEP
    assert command.DEFAULT_SWEEP == "quick"
    assert testbed_flags.grid_sweep(_args(["--sweep", "paper2d", "--out", "x"])) is None


def test_grid_flags_default_input_dim_2_and_tau_1_10():
    sweep = testbed_flags.grid_sweep(_args(["--num-train", "3,30", "--temperature", "0.1", "--out", "x"]))
    assert {s.input_dim for s in sweep.settings} == {2}
    assert sweep.designs == (TestDesign(1), TestDesign(10))
    assert sweep.num_seeds == 5


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--num-train", "3,x", "--temperature", "0.1"],
         "--num-train must be a comma-separated list of integers >= 0, got '3,x'"),
        (["--num-train", "3", "--temperature", "hot"],
         "--temperature must be a comma-separated list of numbers > 0, got 'hot'"),
        (["--num-train", "3", "--temperature", "0.1", "--input-dim", "0"],
         "--input-dim must be a comma-separated list of integers >= 1, got '0'"),
        (["--num-train", "3", "--temperature", "0.1", "--kappa", "2.5"],
         "--kappa must be one integer >= 1, got '2.5'"),
        (["--num-train", "3", "--temperature", "0.1", "--tau", "1", "--kappa", "2"],
         "--kappa needs a --tau > 1"),
        (["--sweep", "quick", "--num-train", "3", "--temperature", "0.1"],
         "--sweep and the custom-grid flags (--num-train, --temperature) are mutually exclusive"),
        (["--tau", "1,10"], "a custom grid needs --num-train and --temperature"),
        (["--num-train", "3"], "a custom grid needs --temperature"),
    ],
)
def test_bad_grid_is_a_one_line_error_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert cli.main(["testbed", "--agents", "uniform", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("decision-bench: error: ") and message in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_custom_grid_command_writes_the_grid(tmp_path, capsys):
    argv = ["testbed", "--agents", "uniform", "--num-train", "3,30", "--temperature", "0.1",
            "--tau", "1,10", "--kappa", "2", "--seeds", "2", "--num-test", "20", "--num-models", "4",
            "--out", str(tmp_path), "--no-progress"]
    assert cli.main(argv) == 0
    frame = pd.read_csv(tmp_path / "testbed.csv")
    expected = ["agent", "input_dim", "num_train", "temperature", "tau", "kappa", "seed", "kl", "kl_stderr"]
    assert set(expected) <= set(frame.columns)
    assert len(frame) == 2 * 3 * 2  # settings x designs x seeds
    got = set(frame[["input_dim", "num_train", "temperature", "tau", "seed"]].itertuples(index=False, name=None))
    assert got == {(2, t, 0.1, tau, s) for t in (3, 30) for tau in (1, 10) for s in (0, 1)}
    assert sorted(frame["kappa"].fillna(0).astype(int).unique()) == [0, 2]
    assert (frame.loc[frame["kappa"] == 2, "tau"] == 10).all()
    assert frame["kl"].notna().all() and (frame["agent"] == "uniform").all()
    meta = json.loads((tmp_path / "testbed.json").read_text())
    assert meta["sweep"] == "custom"
    assert meta["grid"] == {"input_dims": [2], "num_trains": [3, 30], "temperatures": [0.1],
                            "designs": [[1, None], [10, None], [10, 2]]}
    assert "sweep custom" in capsys.readouterr().out


def test_testbed_command_writes_csv_and_prints_summary(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["testbed", "--agents", "uniform", "--sweep", "quick", "--seeds", "1", "--num-test", "50",
         "--num-models", "5", "--out", str(tmp_path), "--no-progress"]
    )
    assert args.func(args) == 0
    written = pd.read_csv(tmp_path / "testbed.csv")
    assert tuple(written.columns) == COLUMNS
    assert len(written) == len(get_sweep("quick").settings) * len(get_sweep("quick").designs)
    assert (tmp_path / "testbed.json").exists()
    printed = capsys.readouterr().out
    assert "d_KL^10,kappa=2" in printed and "uniform" in printed


def test_summary_is_absolute_with_the_ratio_to_mlp_beside():
    rows = pd.DataFrame(
        {"agent": ["mlp", "mlp", "x", "x"], "tau": [1, 10, 1, 10], "kappa": [None, None, None, None],
         "seed": [0, 0, 0, 0], "kl": [0.2, 2.0, 0.1, 3.0]}
    )
    table = design_summary(rows)
    np.testing.assert_allclose(table.xs("x", level="agent")["mean"].to_numpy(), [0.1, 3.0])
    np.testing.assert_allclose(table.xs("x", level="agent")["vs_mlp"].to_numpy(), [0.5, 1.5])
    np.testing.assert_allclose(table.xs("mlp", level="agent")["vs_mlp"].to_numpy(), [1.0, 1.0])


def test_robustness_sweeps_are_named_by_the_sweep_flag():
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["testbed", "--sweep", "robustness_quick", "--out", "x"])
    assert args.sweep == "robustness_quick" and testbed_flags.grid_sweep(args) is None


def test_a_data_set_named_twice_is_one_line_naming_it(tmp_path, capsys):
    # R3-120: `--datasets iris,iris` ended in "cells contain duplicates: [cell ids]"
    out = tmp_path / "rd"
    assert cli.main(["testbed", "--sweep", "realdata", "--datasets", "iris, wine,iris", "--seeds", "1",
                     "--num-test", "4", "--num-models", "2", "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["decision-bench: error: --datasets names ['iris'] twice, got 'iris, wine,iris'; give each data "
                   "set once"]
    assert not (out / "cells").exists()
