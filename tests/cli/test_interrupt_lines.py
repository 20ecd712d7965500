"""What an interrupted command says it saved is true of that command (issue 34, I07)."""

from decision_bench import cli
from decision_bench._src import console
from decision_bench.cli import analyze as analyze_command


def _interrupted(*args, **kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_during_analyze_promises_no_resumable_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(analyze_command, "analyze", _interrupted)
    monkeypatch.setattr(console, "_interrupt_line", [console.INTERRUPTED])  # the process-wide line, restored after
    (tmp_path / "testbed.csv").write_text("agent\n")
    assert cli.main(["analyze", str(tmp_path)]) == 130
    line = capsys.readouterr().err.strip()
    assert line == console.INTERRUPTED_ANALYSIS
    assert "resume" not in line and "cells, bandit chunks" not in line


def test_a_run_command_after_analyze_in_one_process_keeps_the_resume_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(analyze_command, "analyze", _interrupted)
    (tmp_path / "testbed.csv").write_text("agent\n")
    assert cli.main(["analyze", str(tmp_path)]) == 130
    capsys.readouterr()
    assert cli.main(["reproduce", "--preset", "demo", "--estimate"]) == 0
    assert console.interrupt_line() == console.INTERRUPTED
    assert "run the same command again to resume" in console.INTERRUPTED
