"""A run directory belongs to one run: the manifest refuses another run's arguments or
command, the lock refuses a second process (and dies with its holder), orphaned
temporary files are removed when a run claims the folder."""

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from decision_bench import cli
from decision_bench._src import rundir
from decision_bench._src.rundir import MANIFEST_FILE, claim_run_dir

TINY_BANDIT = ["bandit", "--env", "BernoulliBandit-v0", "--num-actions", "3", "--steps", "20",
               "--seeds", "1", "--batch-size", "4", "--log-every", "10", "--no-progress", "--agents", "uniform"]
TINY_TESTBED = ["testbed", "--agents", "uniform", "--num-train", "3", "--temperature", "0.1", "--tau", "1",
                "--seeds", "1", "--num-test", "5", "--num-models", "5", "--no-progress"]


def _error_line(capsys) -> str:
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert line.startswith("decision-bench: error:")
    return line


def test_same_arguments_resume_and_other_arguments_are_refused_naming_the_differences(tmp_path):
    with claim_run_dir(tmp_path, "bandit", {"--steps": 3000, "--agents": ["mlp"]}):
        pass
    with claim_run_dir(tmp_path, "bandit", {"--agents": ("mlp",), "--steps": 3000}):
        pass  # the same arguments (a tuple reads back as a list): resumed
    with pytest.raises(ValueError, match=r"holds a `bandit` run with other arguments \(--steps: saved 3000, now 4000\); "
                       r"give the same arguments to resume it, start over with --restart or give another --out$"):
        with claim_run_dir(tmp_path, "bandit", {"--steps": 4000, "--agents": ["mlp"]}, restart_flag="--restart"):
            pass
    with claim_run_dir(tmp_path, "bandit", {"--steps": 4000, "--agents": ["mlp"]}, restart=True):
        pass  # --restart: the folder now holds the 4000-step run
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert manifest["command"] == "bandit" and manifest["arguments"] == {"--steps": 4000, "--agents": ["mlp"]}


def test_another_command_on_a_reproduce_folder_is_refused_before_any_work(tmp_path, capsys):
    with claim_run_dir(tmp_path, "reproduce", {"--preset": "demo"}):
        (tmp_path / "testbed.csv").write_text("reproduce's rows\n")
    for argv in (TINY_TESTBED, TINY_BANDIT):
        assert cli.main(argv + ["--out", str(tmp_path)]) == 2
        line = _error_line(capsys)
        assert f"--out '{tmp_path}' holds a `reproduce` run; `{argv[0]}` would overwrite its results: give another --out" in line
    assert (tmp_path / "testbed.csv").read_text() == "reproduce's rows\n"
    assert not (tmp_path / "bandit.csv").exists()


def test_a_0_2_0_folder_is_adopted_when_its_stored_config_agrees(tmp_path, capsys):
    # A bandit folder as 0.2.0 left it: checkpoints of one agent, no manifest.
    (tmp_path / "checkpoints" / "uniform").mkdir(parents=True)
    assert cli.main(TINY_TESTBED + ["--out", str(tmp_path)]) == 2
    assert "holds a `bandit` run; `testbed` would overwrite" in _error_line(capsys)
    assert cli.main(TINY_BANDIT[:-1] + ["mlp", "--out", str(tmp_path)]) == 2
    assert "(from before run manifests) with other arguments (saved agents ['uniform'], now ['mlp'])" in _error_line(capsys)
    assert cli.main(TINY_BANDIT + ["--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / MANIFEST_FILE).read_text())["command"] == "bandit"


def test_a_0_2_0_reproduce_folder_is_compared_by_its_run_json(tmp_path):
    from decision_bench.experiments.reproduce import claim_preset_dir

    (tmp_path / "run.json").write_text(json.dumps({"preset": {"name": "demo"}, "agents": ["mlp"], "agent_files": []}))
    with pytest.raises(ValueError, match=r"other arguments \(--preset: saved 'demo', now 'quick'; agents: saved \['mlp'\]"):
        with claim_preset_dir("quick", tmp_path, ("mlp", "uniform")):
            pass
    with claim_preset_dir("demo", tmp_path, ("mlp",)):
        pass
    assert json.loads((tmp_path / MANIFEST_FILE).read_text())["arguments"]["--preset"] == "demo"


# The holder takes Ctrl-C as a program at a terminal does: a test run started in the
# background (nohup, CI) hands its children SIGINT ignored, and an ignored SIGINT would
# leave the holder asleep holding the lock.
_HOLDER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from decision_bench._src.rundir import claim_run_dir
with claim_run_dir(sys.argv[1], "bandit", {"--steps": 3000}):
    print("claimed", flush=True)
    time.sleep(60)
"""


def _start_holder(out):
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "claimed"
    return holder


def _second_bandit(out, steps="20"):
    argv = [sys.executable, "-m", "decision_bench.cli", *TINY_BANDIT, "--steps", steps, "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("end", [signal.SIGKILL, signal.SIGINT])
def test_a_second_process_is_refused_naming_the_holder_and_the_lock_dies_with_it(tmp_path, end):
    out = tmp_path / "run"
    holder = _start_holder(out)
    try:
        refused = _second_bandit(out)
        assert refused.returncode == 2
        lines = [line for line in refused.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, refused.stderr
        assert f"is in use by another run (pid {holder.pid} on " in lines[0]
        assert "`-c " in lines[0] and "started 20" in lines[0] and "give another --out" in lines[0]
    finally:
        holder.send_signal(end)
        holder.wait(timeout=30)
    # The holder is gone (kill -9 or Ctrl-C): the folder can be claimed at once.
    started = time.monotonic()
    with claim_run_dir(out, "bandit", {"--steps": 3000}):
        pass
    assert time.monotonic() - started < 5


def test_two_bandit_commands_with_other_steps_never_both_write(tmp_path):
    out = tmp_path / "run"
    first = _second_bandit(out, steps="20")
    assert first.returncode == 0, first.stderr
    rows = (out / "bandit.csv").read_bytes()
    second = _second_bandit(out, steps="30")
    assert second.returncode == 2 and "(--steps: saved 20, now 30)" in second.stderr
    assert (out / "bandit.csv").read_bytes() == rows


_KILLED_WRITER = """
import sys, time
from decision_bench._src.files import atomic_write
def write(handle):
    handle.write(b"half")
    handle.flush()
    print("writing", flush=True)
    time.sleep(60)
atomic_write(sys.argv[1], write)
"""


def test_orphaned_temporary_files_of_a_killed_writer_are_removed_when_a_run_claims_the_folder(tmp_path):
    cells = tmp_path / "cells"
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(cells / "cell.json")],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    (orphan,) = cells.glob(".cell.json.*.tmp")
    staging = tmp_path / ".analyze-1.tmp"  # a hidden folder is another tool's: left alone
    staging.mkdir()
    (staging / ".figure.png.x.tmp").write_text("")
    (tmp_path / "notes.tmp").write_text("the user's")
    with claim_run_dir(tmp_path, "testbed", {}):
        assert not orphan.exists()
    assert (staging / ".figure.png.x.tmp").exists() and (tmp_path / "notes.tmp").exists()
    assert sorted(os.listdir(cells)) == []


def test_a_nested_claim_of_the_same_run_is_reentrant_and_of_another_is_refused(tmp_path):
    with claim_run_dir(tmp_path, "reproduce", {"--preset": "demo"}):
        with claim_run_dir(tmp_path, "reproduce", {"--preset": "demo"}, flag="out"):
            pass
        with pytest.raises(ValueError, match="already claimed by this process for another run"):
            with claim_run_dir(tmp_path, "reproduce", {"--preset": "quick"}):
                pass


@pytest.mark.parametrize("argv", [["reproduce", "--preset", "demo"], ["demo"], ["tune", "mlp", "--grid", "l2=1"]])
def test_reproduce_demo_and_tune_claim_their_folder_too(tmp_path, capsys, argv):
    with claim_run_dir(tmp_path, "testbed", {"--sweep": "quick"}):
        pass
    assert cli.main(argv + ["--no-progress", "--out", str(tmp_path)]) == 2
    assert f"holds a `testbed` run; `{argv[0] if argv[0] != 'demo' else 'reproduce'}` would overwrite" in _error_line(capsys)


def test_a_first_run_refused_as_bad_input_leaves_no_manifest_behind(tmp_path):
    with pytest.raises(ValueError, match="unknown agent"):
        with claim_run_dir(tmp_path, "tune", {"agent": "foo"}):
            raise ValueError("unknown agent 'foo'")
    assert not (tmp_path / MANIFEST_FILE).exists()
    with claim_run_dir(tmp_path, "tune", {"agent": "mlp"}):
        pass  # the corrected command is not refused as another run
    with pytest.raises(KeyboardInterrupt):
        with claim_run_dir(tmp_path, "tune", {"agent": "mlp"}):
            raise KeyboardInterrupt  # an interrupted run keeps its manifest, to resume
    assert json.loads((tmp_path / MANIFEST_FILE).read_text())["arguments"] == {"agent": "mlp"}


def test_the_manifest_keeps_every_start_of_a_resumed_run_and_a_restart_forgets_them(tmp_path, monkeypatch):
    starts = iter(["2026-01-01T00:00:00+00:00", "2026-01-01T02:00:00+00:00", "2026-01-01T05:00:00+00:00"])

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.fromisoformat(next(starts))

    monkeypatch.setattr(rundir.datetime, "datetime", Clock)
    for _ in range(2):
        with claim_run_dir(tmp_path, "bandit", {"--steps": 10}):
            pass
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert manifest["claims"] == ["2026-01-01T00:00:00+00:00", "2026-01-01T02:00:00+00:00"]
    assert manifest["claimed"] == "2026-01-01T02:00:00+00:00"
    with claim_run_dir(tmp_path, "bandit", {"--steps": 20}, restart=True):
        pass
    assert json.loads((tmp_path / MANIFEST_FILE).read_text())["claims"] == ["2026-01-01T05:00:00+00:00"]
