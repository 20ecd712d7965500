"""Real signals sent to the command line: a clean exit (130 / 143) within moments,
and nothing saved is lost, whether the signal comes mid-compile, mid-run or as
kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from decision_bench._src import console

COMMAND = [sys.executable, "-m", "decision_bench.cli"]
# Longer than any of these tiny runs could take, so a signal always finds it running.
LONG_BANDIT = ["bandit", "--agents", "mlp", "--env", "BernoulliBandit-v0", "--num-actions", "4",
               "--batch-size", "8", "--steps", "200000", "--chunk-size", "50", "--seeds", "1",
               "--no-progress"]
SHORT_BANDIT = ["bandit", "--agents", "mlp", "--env", "BernoulliBandit-v0", "--num-actions", "4",
                "--batch-size", "8", "--steps", "300", "--chunk-size", "50", "--seeds", "1",
                "--log-every", "50", "--no-progress"]


def _start(args):
    return subprocess.Popen(COMMAND + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, process, timeout=120.0):
    """Waits until ``path`` exists (the run has saved something)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _signal_and_wait(process, signum):
    """Sends signum; returns (exit status, stderr, seconds until the command exits).

    The seconds are the command's own (what the README promises); its worker processes,
    which may hold the stderr pipe a little longer while they notice their parent is gone,
    are checked apart (_wait_until_no_process_is_marked)."""
    sent = time.monotonic()
    process.send_signal(signum)
    process.wait(timeout=60)
    seconds = time.monotonic() - sent
    _, err = process.communicate(timeout=60)
    return process.returncode, err, seconds


def test_ctrl_c_during_the_first_compile_exits_130_at_once(tmp_path):
    process = _start(LONG_BANDIT + ["--out", str(tmp_path)])
    # The command is importing or compiling: nothing is saved yet.
    _wait_for(tmp_path / "checkpoints" / "mlp", process)
    assert not (tmp_path / "checkpoints" / "mlp" / "bandit_state.npz").exists()
    status, err, seconds = _signal_and_wait(process, signal.SIGINT)
    assert status == 130, err
    assert "interrupted" in err and "run the same command again" in err
    assert "Traceback" not in err
    assert seconds < 2.0


def test_sigterm_mid_run_exits_143_and_the_same_command_resumes(tmp_path):
    state = tmp_path / "checkpoints" / "mlp" / "bandit_state.npz"
    process = _start(LONG_BANDIT + ["--out", str(tmp_path)])
    _wait_for(state, process)
    status, err, seconds = _signal_and_wait(process, signal.SIGTERM)
    assert status == 143, err
    assert seconds < 2.0
    import numpy as np

    with np.load(state) as data:
        saved_steps = int(data["t"])
    assert saved_steps >= 50
    # The same command again continues (it refuses nothing and keeps the steps).
    again = _start(LONG_BANDIT + ["--out", str(tmp_path)])
    deadline = time.monotonic() + 120
    while True:
        with np.load(state) as data:
            if int(data["t"]) > saved_steps:
                break
        assert again.poll() is None, again.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    status, err, _ = _signal_and_wait(again, signal.SIGINT)
    assert status == 130, err


def test_kill_9_then_the_same_command_finishes_with_the_uninterrupted_rows(tmp_path):
    fresh = subprocess.run(COMMAND + SHORT_BANDIT + ["--out", str(tmp_path / "fresh")],
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    killed = tmp_path / "killed"
    process = _start(SHORT_BANDIT[:-1] + ["--steps", "200000", "--out", str(killed)])
    _wait_for(killed / "checkpoints" / "mlp" / "bandit_state.npz", process)
    process.kill()
    process.communicate()
    # Another length is another experiment: it is refused, naming the argument.
    other = subprocess.run(COMMAND + SHORT_BANDIT + ["--out", str(killed)],
                           capture_output=True, text=True, timeout=300)
    assert other.returncode == 2
    assert other.stderr.startswith("decision-bench: error:") and "--steps: saved 200000, now 300" in other.stderr
    assert "--restart" in other.stderr
    # --restart starts over and gives what an uninterrupted run gives.
    again = subprocess.run(COMMAND + SHORT_BANDIT + ["--out", str(killed), "--restart"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    columns = ["agent", "seed", "step", "cumulative_regret", "final_regret"]
    pd.testing.assert_frame_equal(pd.read_csv(killed / "bandit.csv")[columns],
                                  pd.read_csv(tmp_path / "fresh" / "bandit.csv")[columns])


def _processes_marked(mark: str) -> list[int]:
    """Pids of live processes whose environment holds MARK=mark (a run's workers inherit it)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"DECISION_BENCH_TEST_MARK={mark}".encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def _wait_until_no_process_is_marked(mark: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _processes_marked(mark):
        assert time.monotonic() < deadline, f"processes left running: {_processes_marked(mark)}"
        time.sleep(0.1)


def _start_marked(args, mark: str):
    env = dict(os.environ, DECISION_BENCH_TEST_MARK=mark)
    return subprocess.Popen(COMMAND + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_mid_cell_of_reproduce_exits_130_and_leaves_no_worker(tmp_path, workers):
    out = tmp_path / "demo"
    mark = f"ctrl-c-{os.getpid()}-{workers}"
    process = _start_marked(
        ["reproduce", "--preset", "demo", "--no-progress", "--workers", workers, "--out", str(out)], mark
    )
    _wait_for(out, process)  # the folder is made before the first cell starts
    time.sleep(3.0)  # inside the first cell (or workers still importing)
    status, err, seconds = _signal_and_wait(process, signal.SIGINT)
    assert status == 130, err
    assert "run the same command again" in err and "Traceback" not in err
    assert seconds < 2.0
    _wait_until_no_process_is_marked(mark)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers follow a kill -9 on Linux")
def test_kill_9_of_reproduce_takes_its_workers_with_it(tmp_path):
    out = tmp_path / "demo"
    mark = f"kill-9-{os.getpid()}"
    process = _start_marked(
        ["reproduce", "--preset", "demo", "--no-progress", "--workers", "2", "--out", str(out)], mark
    )
    _wait_for(out, process)
    deadline = time.monotonic() + 60
    while len(_processes_marked(mark)) < 3:  # the parent and its two workers
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.1)
    time.sleep(2.0)
    process.kill()
    process.communicate(timeout=60)
    _wait_until_no_process_is_marked(mark)


def test_ctrl_c_in_testbed_keeps_finished_cells_and_the_same_command_resumes(tmp_path):
    args = ["testbed", "--agents", "mlp,ensemble", "--num-train", "3", "--temperature", "0.1,1",
            "--tau", "1", "--num-test", "20", "--num-models", "20", "--seeds", "1",
            "--no-progress", "--out", str(tmp_path)]
    process = _start(args)
    cells = tmp_path / "cells"
    deadline = time.monotonic() + 120
    while not list(cells.glob("*.json")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    status, err, seconds = _signal_and_wait(process, signal.SIGINT)
    assert status == 130, err
    assert seconds < 2.0 and err.count("interrupted") == 1
    done = len(list(cells.glob("*.json")))
    assert 1 <= done < 4
    again = subprocess.run(COMMAND + args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {done} of 4 cells already done" in again.stderr
    rows = pd.read_csv(tmp_path / "testbed.csv")
    assert len(rows) == 4 and set(rows.agent) == {"mlp", "ensemble"}


# The installed program, as a person runs it (its entry point installs the
# interrupt exit before the package's JAX and flax imports start).
PROGRAM = Path(sys.executable).parent / "decision-bench"


@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 2.0])
def test_ctrl_c_while_the_program_imports_jax_exits_130_without_a_traceback(tmp_path, delay):
    # SIGINT at its default disposition in the program, as at a terminal (a shell
    # that starts jobs in the background hands them SIGINT ignored): a small
    # launcher resets it and execs the program (no preexec_fn in a JAX process).
    argv = [str(PROGRAM)] + LONG_BANDIT + ["--out", str(tmp_path)]
    reset_and_exec = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    process = subprocess.Popen(
        [sys.executable, "-c", reset_and_exec] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(delay)
    status, err, seconds = _signal_and_wait(process, signal.SIGINT)
    assert status == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().splitlines() == [console.INTERRUPTED]
    assert seconds < 2.0


def test_the_program_installs_the_interrupt_exit_before_importing_the_package():
    probe = (
        "import signal, sys, decision_bench_launcher as launcher\n"
        "launcher._install_interrupt_exit()\n"
        "handler = signal.getsignal(signal.SIGINT)\n"
        "print('decision_bench' in sys.modules, getattr(handler, 'decision_bench_interrupt_exit', False))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr


def _children(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
    return children


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_a_reproduce_worker_ends_with_one_line_naming_it_and_its_cell(tmp_path):
    out = tmp_path / "demo"
    process = _start(["reproduce", "--preset", "demo", "--no-progress", "--workers", "2", "--out", str(out)])
    deadline = time.monotonic() + 60
    while len(_children(process.pid)) < 2:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.1)
    victim = _children(process.pid)[0]
    time.sleep(1.0)  # each worker has been handed a cell
    os.kill(victim, signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    lines = [line for line in err.splitlines() if line.startswith("decision-bench:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"decision-bench: error: worker process {victim} died (killed by SIGKILL; "
                               "an out-of-memory kill looks the same) while computing cell "), lines[0]
    assert str(out / "cells") in lines[0] and "run the same command again to resume" in lines[0]
