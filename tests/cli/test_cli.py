"""What every subcommand shows a person: one-line errors checked before any work,
help with defaults, plain warnings, files with the user's permissions."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from decision_bench import cli
from decision_bench._src import console
from decision_bench.bandit import run_bandit

TINY_BANDIT = ["bandit", "--env", "BernoulliBandit-v0", "--num-actions", "3", "--steps", "20",
               "--seeds", "1", "--batch-size", "4", "--log-every", "10", "--no-progress"]


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_beta_bernoulli_is_refused_on_continuous_features():
    with pytest.raises(ValueError, match="one-hot arm features .* NeuralBandit-v0 has continuous"):
        run_bandit("beta_bernoulli", "NeuralBandit-v0", 10, 1, progress=False)


@pytest.mark.parametrize(
    "command",
    [["testbed", "--num-train", "3", "--temperature", "0.1"],
     ["testbed", "--sweep", "realdata", "--datasets", "iris"],
     ["bandit", "--env", "ContextualNeuralBandit-v0"],
     ["reproduce"]],
)
def test_beta_bernoulli_is_refused_before_any_work_where_inputs_are_continuous(
    tmp_path, capsys, command
):
    out = tmp_path / "o"
    assert cli.main(command + ["--agents", "beta_bernoulli", "--out", str(out)]) == 2
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error:") and "one-hot arm features" in line
    assert not out.exists()


def test_beta_bernoulli_still_runs_on_the_bernoulli_bandit():
    rows = run_bandit("beta_bernoulli", "BernoulliBandit-v0", 20, 1, log_every=10, progress=False)
    assert list(rows.step) == [10, 20] and (rows.error == "").all()


def test_every_agent_name_is_checked_before_any_runs(tmp_path, capsys):
    status = cli.main(TINY_BANDIT + ["--agents", "mlp,foo", "--out", str(tmp_path / "o")])
    assert status == 2
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error:") and "'foo'" in line
    assert not (tmp_path / "o").exists()  # mlp did not run first


@pytest.mark.parametrize(
    "command",
    [TINY_BANDIT + ["--agents", "mlp"], ["reproduce"],
     ["testbed", "--num-train", "3", "--temperature", "0.1", "--no-progress"]],
)
def test_out_that_is_a_file_is_one_line_before_any_work(tmp_path, capsys, command):
    a_file = tmp_path / "results.txt"
    a_file.write_text("keep me")
    for out, expected in [(a_file, "is a file, not a folder"),
                          (a_file / "sub", "is a file, not a folder")]:
        assert cli.main(command + ["--out", str(out)]) == 2
        (line,) = _error_lines(capsys)
        assert line.startswith("decision-bench: error: --out") and expected in line
    assert a_file.read_text() == "keep me"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_out_that_is_not_writable_is_one_line(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert cli.main(TINY_BANDIT + ["--agents", "mlp", "--out", str(locked)]) == 2
    (line,) = _error_lines(capsys)
    assert "is not writable" in line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_out_that_cannot_be_created_is_one_line(capsys):
    # Not even root can make a folder in /proc.
    assert cli.main(TINY_BANDIT + ["--agents", "mlp", "--out", "/proc/decision-bench-x/y"]) == 2
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error: --out '/proc/decision-bench-x/y' cannot be created")


def test_results_follow_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        assert cli.main(TINY_BANDIT + ["--agents", "uniform", "--out", str(tmp_path)]) == 0
    finally:
        os.umask(previous)
    for path in [tmp_path / "bandit.csv", tmp_path / "bandit_regret.png"]:
        assert path.stat().st_mode & 0o777 == 0o640, path


def test_warnings_are_plain_lines_shown_once(capsys):
    with warnings.catch_warnings():
        console.install_warning_printer()
        for _ in range(3):
            warnings.warn("the sky is falling", RuntimeWarning)
        warnings.warn("another matter", UserWarning)
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "decision-bench: warning: the sky is falling",
        "decision-bench: warning: another matter",
    ]


@pytest.mark.parametrize("subcommand", ["bandit", "testbed", "reproduce", "analyze"])
def test_help_shows_the_defaults(subcommand):
    shown = subprocess.run([sys.executable, "-m", "decision_bench.cli", subcommand, "--help"],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0
    assert "(default:" in shown.stdout


def test_bandit_help_names_its_defaults():
    parser = cli.build_parser()
    bandit = parser._subparsers._group_actions[0].choices["bandit"]
    text = bandit.format_help()
    for default in ["(default: 10000)", "(default: thompson)", "(default: 1000)"]:
        assert default in text


def test_reproduce_accepts_no_progress():
    args = cli.build_parser().parse_args(["reproduce", "--no-progress"])
    assert args.no_progress is True


def test_analyze_on_a_file_is_one_line(tmp_path, capsys):
    a_file = tmp_path / "testbed.csv"
    a_file.write_text("agent,kl\n")
    assert cli.main(["analyze", str(a_file)]) == 2
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error:") and str(a_file) in line


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--workers", "0"], "workers must be a count >= 1 or 'auto', got '0'"),
        (["--workers", "two"], "workers must be a count >= 1 or 'auto', got 'two'"),
        (["--workers", "2", "--executor", "ray"], "workers is only used with --executor local"),
    ],
)
def test_reproduce_workers_are_checked_in_one_line_before_any_work(tmp_path, capsys, flags, message):
    out = tmp_path / "never"
    assert cli.main(["reproduce", "--no-progress", "--out", str(out), *flags]) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1 and message in lines[0]
    assert not out.exists()


def test_reproduce_workers_default_to_auto():
    args = cli.build_parser().parse_args(["demo"])
    assert args.workers == "auto"
