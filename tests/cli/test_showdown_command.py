"""`decision-bench bandit` on the Showdown's Gaussian-reward bandits."""

from __future__ import annotations

import pandas as pd
import pytest

from decision_bench import cli

WHEEL = ["bandit", "--env", "WheelBandit-v0", "--delta", "0.7", "--steps", "20", "--seeds", "1",
         "--replay-capacity", "32", "--log-every", "10", "--no-progress"]


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_wheel_runs_with_linear_gaussian_and_records_its_settings(tmp_path):
    out = tmp_path / "wheel"
    assert cli.main(WHEEL + ["--agents", "linear_gaussian", "--out", str(out)]) == 0
    rows = pd.read_csv(out / "bandit.csv")
    assert (rows.env == "WheelBandit-v0").all() and (rows.delta == 0.7).all()
    assert (rows.large_mean == 50).all() and (rows.num_actions == 5).all()
    assert (out / "bandit_regret.png").is_file()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--agents", "mlp"], "'mlp' predicts 0/1 rewards"),
        (["--agents", "linear_gaussian", "--delta", "1.5"], "delta must be a number in [0, 1]"),
        (["--agents", "linear_gaussian", "--num-actions", "3"], "unknown keyword argument(s) ['num_actions']"),
    ],
)
def test_bad_agent_or_setting_is_one_line_before_any_work(tmp_path, capsys, extra, message):
    out = tmp_path / "o"
    assert cli.main(WHEEL + extra + ["--out", str(out)]) == 2
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error:") and message in line
    assert not out.exists()


def test_sparse_linear_rows_record_context_dim_and_sparse_dim(tmp_path):
    out = tmp_path / "sparse"
    command = ["bandit", "--env", "SparseLinearBandit-v0", "--context-dim", "4", "--num-actions", "3",
               "--sparse-dim", "2", "--agents", "linear_gaussian", "--steps", "10", "--seeds", "1",
               "--replay-capacity", "16", "--no-progress", "--out", str(out)]
    assert cli.main(command) == 0
    rows = pd.read_csv(out / "bandit.csv")
    assert (rows.context_dim == 4).all() and (rows.sparse_dim == 2).all() and (rows.num_actions == 3).all()
    assert (rows.input_dim == (4 + 1) * 3).all()


def test_sparse_dim_above_the_context_dim_is_refused(tmp_path, capsys):
    command = ["bandit", "--env", "SparseLinearBandit-v0", "--context-dim", "4", "--sparse-dim", "5",
               "--agents", "linear_gaussian", "--out", str(tmp_path / "o")]
    assert cli.main(command) == 2
    assert "sparse_dim must be an integer in [1, context_dim = 4], got 5" in _error_lines(capsys)[0]
