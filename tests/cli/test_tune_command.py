"""``decision-bench tune``: rows and summary written and read back, malformed or refused
grids in one line with nothing written (tune itself: tests/evaluation/test_tune.py)."""

from __future__ import annotations

import pytest

from decision_bench import cli


def test_command_writes_rows_and_summary(tmp_path, capsys):
    status = cli.main(["tune", "mlp", "--grid", "l2=0.1,1", "--sweep", "quick", "--seeds", "1",
                       "--num-test", "10", "--num-models", "4", "--out", str(tmp_path)])
    assert status == 0
    assert "tune mlp" in capsys.readouterr().err  # the progress bar over settings
    from decision_bench.evaluation.tune import read_tune

    rows, summary = read_tune(tmp_path)  # checksums and the pair verified
    assert list(summary.l2) == [0.1, 1.0] and summary.best.sum() == 1
    assert len(rows) == 2 * 2 * 2  # points x settings x tau


def test_command_refuses_a_malformed_grid(tmp_path, capsys):
    assert cli.main(["tune", "mlp", "--grid", "l2", "--out", str(tmp_path)]) == 2
    assert "--grid must look like NAME=V1,V2" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tune", "mlp", "--grid", "l2=-1"], "l2 must be a finite number >= 0"),
        (["tune", "mlp", "--grid", "l2=nan"], "grid l2 values must be finite numbers"),
        (["tune", "mlp", "--grid", "l2=inf"], "grid l2 values must be finite numbers"),
        (["tune", "mlp", "--grid", "l2=1,1"], "grid l2 gives the value 1.0 twice"),
        (["tune", "mlp", "--grid", "l2=1", "--grid", "l2=2"], "--grid names 'l2' twice"),
        (["tune", "foo"], "unknown agent 'foo' (known: "),
        (["tune", "foo", "--grid", "l2=1"], "unknown agent 'foo' (known: "),
        # The counts named by their flags, and a grid too large for memory, before any work.
        (["tune", "mlp", "--grid", "l2=1", "--seeds", "0"], "--seeds must be an integer in [1, "),
        (["tune", "mlp", "--grid", "l2=1", "--num-test", "0"], "--num-test must be an integer in [1, "),
        (["tune", "mlp", "--grid", "l2=1", "--num-models", "-2"], "--num-models must be an integer in [1, "),
        (["tune", "mlp", "--grid", "l2=1,2", "--seeds", "2000000000"], "this tune run needs at least"),
    ],
)
def test_command_refuses_bad_grids_in_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()
