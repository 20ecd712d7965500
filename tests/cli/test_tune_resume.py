"""`decision-bench tune` interrupted by a real SIGINT resumes per setting, and the
resumed run writes the rows an uninterrupted run writes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

COMMAND = [sys.executable, "-m", "decision_bench.cli", "tune", "mlp", "--grid", "l2=0.1,1", "--sweep", "quick",
           "--seeds", "1", "--num-test", "10", "--num-models", "4", "--no-progress"]  # fmt: skip


@pytest.mark.slow  # three tune processes: about a minute on 2 cores
def test_ctrl_c_after_a_setting_keeps_it_and_the_same_command_resumes(tmp_path):
    out = tmp_path / "interrupted"
    process = subprocess.Popen([*COMMAND, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not list((out / "tune_settings").glob("*.csv.sha256")):  # the first setting is stored
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err, err
    assert not (out / "tune.csv").exists()
    stored = sorted(p.name for p in (out / "tune_settings").glob("setting-*.csv"))
    assert len(stored) == 1
    resumed = subprocess.run([*COMMAND, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    # The stored setting was reused (its file untouched), the other one added.
    assert len(list((out / "tune_settings").glob("setting-*.csv"))) == 2
    fresh = subprocess.run([*COMMAND, "--out", str(tmp_path / "fresh")], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    pd.testing.assert_frame_equal(pd.read_csv(out / "tune.csv"), pd.read_csv(tmp_path / "fresh" / "tune.csv"))
    pd.testing.assert_frame_equal(pd.read_csv(out / "tune_summary.csv"),
                                  pd.read_csv(tmp_path / "fresh" / "tune_summary.csv"))  # fmt: skip
