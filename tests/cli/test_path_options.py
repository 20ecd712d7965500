"""An empty value of an option that names a file or folder is refused in one line
naming the option, by every command, before any work: it must not stand for a
default (--baselines '' -> standard) or for the current folder (--out '')."""

from __future__ import annotations

import pytest

from decision_bench import cli

BANDIT = ["bandit", "--env", "BernoulliBandit-v0", "--num-actions", "3", "--steps", "20",
          "--seeds", "1", "--batch-size", "4", "--log-every", "10", "--no-progress"]
TESTBED = ["testbed", "--agents", "mlp", "--num-train", "2", "--temperature", "0.5", "--tau", "1",
           "--seeds", "1", "--num-test", "5", "--num-models", "5", "--no-progress"]


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["leaderboard", "--agents", "mlp", "--baselines", "", "--out", "x"], "--baselines"),
        (["leaderboard", "--agents", "mlp", "--out", ""], "--out"),
        ([*BANDIT, "--out", ""], "--out"),
        ([*BANDIT, "--out", "x", "--tensorboard", ""], "--tensorboard"),
        ([*TESTBED, "--out", "x", "--tensorboard", " "], "--tensorboard"),
        ([*TESTBED, "--out", "x", "--agent-file", ""], "--agent-file"),
        (["reproduce", "--config", "", "--out", "x"], "--config"),
        (["tune", "mlp", "--out", ""], "--out"),
        (["analyze", ""], "DIR"),
        (["store-baselines", "", "lab", "--command", "c"], "RUN_DIR"),
        (["store-baselines", "run", "lab", "--command", "c", "--folder", " "], "--folder"),
    ],
)
def test_an_empty_path_option_is_one_line_naming_it_and_nothing_is_written(tmp_path, monkeypatch, capsys, argv, flag):
    monkeypatch.chdir(tmp_path)  # '' would mean this folder
    assert cli.main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"decision-bench: error: {flag} must name "), lines
    assert list(tmp_path.iterdir()) == []
