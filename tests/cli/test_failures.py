"""Failures during a run end in one line and exit status 1 (2 for a bad input
file), never a traceback: a full disk, a folder or file standing where the run
keeps its state, an agent file that fails."""

from __future__ import annotations

import errno
import os
import sys
import subprocess

import pytest

from decision_bench.cli import main

TINY_TESTBED = ["testbed", "--agents", "mlp", "--num-train", "3", "--temperature", "0.1", "--tau", "1",
                "--num-test", "20", "--num-models", "20", "--seeds", "1", "--no-progress"]
TINY_BANDIT = ["bandit", "--agents", "mlp", "--env", "BernoulliBandit-v0", "--num-actions", "4",
               "--batch-size", "8", "--steps", "100", "--chunk-size", "50", "--seeds", "1", "--no-progress"]


def _error_lines(capsys) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("decision-bench: error:")]


def _full_under(folder):
    """An fsync that fails with ENOSPC for files written below `folder` (the run's own
    lock and manifest, written first, still succeed: the disk fills during the run)."""
    real_fsync = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    return fsync


def test_a_full_disk_during_a_cell_write_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "fsync", _full_under(tmp_path / "cells"))  # every atomic write flushes with fsync
    status = main(TINY_TESTBED + ["--out", str(tmp_path)])
    assert status == 1
    (line,) = _error_lines(capsys)
    assert "no space left on the device writing" in line
    assert str(tmp_path / "cells") in line and line.endswith("run the same command again to resume")
    assert not list((tmp_path / "cells").glob("*.json"))


def test_a_full_disk_during_a_bandit_checkpoint_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "fsync", _full_under(tmp_path / "checkpoints"))
    assert main(TINY_BANDIT + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert "no space left on the device writing" in line and str(tmp_path / "checkpoints" / "mlp") in line


def test_a_folder_where_a_cell_file_belongs_is_named(tmp_path, capsys):
    assert main(TINY_TESTBED + ["--out", str(tmp_path)]) == 0
    (cell,) = (tmp_path / "cells").glob("*.json")
    cell.unlink()
    cell.mkdir()
    capsys.readouterr()
    assert main(TINY_TESTBED + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert line == (f"decision-bench: error: {cell} is a folder where a file belongs: move or remove it, "
                    "then run the same command again to resume")


def test_a_file_where_the_cells_folder_belongs_is_named(tmp_path, capsys):
    (tmp_path / "cells").write_text("")
    assert main(TINY_TESTBED + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert line.startswith(f"decision-bench: error: {tmp_path / 'cells'} is a file where a folder belongs")


@pytest.mark.parametrize("blocking", ["checkpoints", "checkpoints/mlp"])
def test_a_file_where_a_checkpoint_folder_belongs_is_named(tmp_path, capsys, blocking):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / blocking).rmdir() if blocking == "checkpoints" else None
    (tmp_path / blocking).write_text("")
    assert main(TINY_BANDIT + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert line.startswith(f"decision-bench: error: {tmp_path / blocking} is a file where a folder belongs")


def test_a_folder_where_bandit_csv_belongs_is_named(tmp_path, capsys):
    (tmp_path / "bandit.csv").mkdir()
    assert main(TINY_BANDIT + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert line.startswith(f"decision-bench: error: {tmp_path / 'bandit.csv'} is a folder where a file belongs")


def test_an_agent_file_that_fails_to_import_is_one_line_naming_file_and_line(tmp_path, capsys):
    from decision_bench.experiments.reproduce import load_agent_file

    broken = tmp_path / "broken.py"
    broken.write_text("import math\n\nVALUE = undefined_name + 1\n")
    with pytest.raises(ValueError) as raised:
        load_agent_file(broken)
    assert str(raised.value) == (f"agent_file {str(broken)!r} line 3 (importing it): "
                                 "NameError: name 'undefined_name' is not defined")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def make_agent(spec):\n    return (\n")
    with pytest.raises(ValueError, match=r"syntax.py' line 2 \(importing it\): SyntaxError"):
        load_agent_file(syntax)
    status = main(["reproduce", "--preset", "demo", "--agent-file", str(broken), "--no-progress",
                   "--out", str(tmp_path / "run")])
    assert status == 2
    (line,) = _error_lines(capsys)
    assert "broken.py' line 3 (importing it): NameError" in line


def test_an_agent_file_whose_make_agent_raises_names_file_and_line(tmp_path):
    from decision_bench.experiments.reproduce import load_agent_file

    raising = tmp_path / "raising.py"
    raising.write_text("def _helper(spec):\n    return 1 / 0\n\n\ndef make_agent(spec):\n    return _helper(spec)\n")
    name, make_agent = load_agent_file(raising)
    assert name == "raising"
    with pytest.raises(ValueError) as raised:
        make_agent(None)
    assert str(raised.value) == (f"agent_file {str(raising)!r} line 2 (in make_agent): "
                                 "ZeroDivisionError: division by zero")


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 8 GB")])
def test_running_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch, error):
    from decision_bench.cli import testbed

    def exhausted(*args, **kwargs):
        raise error

    monkeypatch.setattr(testbed, "run_cells", exhausted)
    assert main(TINY_TESTBED + ["--out", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys)
    assert line.startswith("decision-bench: error: out of memory: make the run smaller")


def test_another_runtime_error_is_not_reported_as_out_of_memory(tmp_path, monkeypatch):
    from decision_bench.cli import testbed

    def failing(*args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(testbed, "run_cells", failing)
    with pytest.raises(RuntimeError, match="something else"):
        main(TINY_TESTBED + ["--out", str(tmp_path)])
