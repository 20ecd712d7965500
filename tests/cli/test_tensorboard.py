"""--tensorboard DIR writes event files that read back to the run's numbers (issue 21, part 3)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decision_bench._src.tensorboard import TensorBoardLog

event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")  # the optional tensorboard extra


def read_scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...]} of every event file under ``directory``, read with the
    TFRecord framing (length, its CRC, the record, its CRC) and the Event protocol buffer."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    files = sorted(directory.rglob("events.out.tfevents.*"))
    assert files, f"no event files under {directory}"
    for path in files:
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            record = data[offset + 12: offset + 12 + length]
            offset += 12 + length + 4
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_bandit_rows_logged_as_they_grow_read_back_once_per_step(tmp_path):
    board = TensorBoardLog(tmp_path / "tb")
    rows = pd.DataFrame({"agent": "mlp", "env": "NeuralBandit-v0", "input_dim": 2, "num_actions": 40,
                         "temperature": 0.1, "seed": [0, 0, 1, 1], "step": [10, 20, 10, 20],
                         "cumulative_regret": [1.5, 2.25, 0.5, 3.0]})
    board.bandit_rows(rows.iloc[[0, 2]])  # the first chunk
    board.bandit_rows(rows)  # the file rewritten after the second: its first rows again
    board.close()
    scalars = read_scalars(tmp_path / "tb")
    assert scalars == {
        "regret/NeuralBandit-v0_d2_A40_beta0.1/mlp/seed0": [(10, 1.5), (20, 2.25)],
        "regret/NeuralBandit-v0_d2_A40_beta0.1/mlp/seed1": [(10, 0.5), (20, 3.0)],
    }


def test_testbed_rows_give_the_mean_dkl_over_seeds_against_t(tmp_path):
    board = TensorBoardLog(tmp_path / "tb")
    rows = pd.DataFrame({"agent": "ensemble+", "input_dim": 2, "temperature": 0.1, "num_train": [10] * 4 + [100] * 4,
                         "tau": [1, 1, 10, 10] * 2, "kappa": [np.nan, np.nan, 2, 2] * 2, "seed": [0, 1] * 4,
                         "kl": [0.1, 0.3, 1.0, 2.0, 0.05, 0.15, 0.5, 0.75]})
    board.testbed_rows(rows)
    board.close()
    scalars = read_scalars(tmp_path / "tb")
    assert set(scalars) == {"dkl/tau10_kappa2/ensemble_plus/d2_beta0.1", "dkl/tau1/ensemble_plus/d2_beta0.1"}
    np.testing.assert_allclose(np.array(scalars["dkl/tau1/ensemble_plus/d2_beta0.1"]), [[10, 0.2], [100, 0.1]],
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(scalars["dkl/tau10_kappa2/ensemble_plus/d2_beta0.1"]),
                               [[10, 1.5], [100, 0.625]], rtol=1e-6)


def test_the_bandit_command_logs_every_row_of_its_csv(tmp_path):
    from decision_bench.cli.program import main

    out, board = tmp_path / "run", tmp_path / "tb"
    assert main(["bandit", "--agents", "uniform", "--env", "BernoulliBandit-v0", "--num-actions", "4",
                 "--steps", "60", "--chunk-size", "20", "--seeds", "2", "--log-every", "10", "--no-progress",
                 "--out", str(out), "--tensorboard", str(board)]) == 0
    rows = pd.read_csv(out / "bandit.csv")
    scalars = read_scalars(board)
    assert len(scalars) == 2
    for seed in (0, 1):
        (tag,) = [t for t in scalars if t.endswith(f"/uniform/seed{seed}")]
        mine = rows[rows.seed == seed]
        assert [s for s, _ in scalars[tag]] == mine.step.tolist()
        np.testing.assert_allclose([v for _, v in scalars[tag]], mine.cumulative_regret, rtol=1e-6)


def _bandit_rows(steps):
    return pd.DataFrame({"agent": "mlp", "env": "NeuralBandit-v0", "input_dim": 2, "num_actions": 40,
                         "temperature": 0.1, "seed": 0, "step": steps,
                         "cumulative_regret": [float(s) / 10 for s in steps]})


def test_a_resumed_run_adds_the_missing_points_and_no_duplicates(tmp_path):
    # I12, I13 (issue 34): a resumed run lost the reused cells' points or wrote its
    # recomputed chunk's points a second time.
    first = TensorBoardLog(tmp_path / "tb")
    first.bandit_rows(_bandit_rows([10, 20]))
    first.close()  # the first session ends (after Ctrl-C, or kill -9 once flushed)
    second = TensorBoardLog(tmp_path / "tb")
    second.bandit_rows(_bandit_rows([10, 20, 30]))  # resumed from step 10: 20 recomputed, 30 new
    second.close()
    # Two sessions' files: the points once each (their order across files is the files').
    scalars = {tag: sorted(points) for tag, points in read_scalars(tmp_path / "tb").items()}
    assert scalars == {"regret/NeuralBandit-v0_d2_A40_beta0.1/mlp/seed0": [(10, 1.0), (20, 2.0), (30, 3.0)]}


def test_a_cut_event_file_keeps_its_whole_records(tmp_path):
    from decision_bench._src.tensorboard import logged_points

    board = TensorBoardLog(tmp_path / "tb")
    board.bandit_rows(_bandit_rows([10, 20]))
    board.close()
    (path,) = sorted((tmp_path / "tb").rglob("events.out.tfevents.*"))
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # kill -9 in the middle of the last record
    tag = "regret/NeuralBandit-v0_d2_A40_beta0.1/mlp/seed0"
    assert logged_points(tmp_path / "tb") == {(tag, 10)}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_is_an_oserror_where_the_run_writes_and_nothing_else(tmp_path):
    """E20 (issue 34): a full disk under --tensorboard used to print two tensorboardX
    tracebacks (its writer thread and its exit hook) after the command's one line. Event
    files on /dev/full (every write: ENOSPC): the error reaches the caller, and the
    process exits with nothing on stderr (no thread or exit-hook traceback, no file left open)."""
    import subprocess
    import sys

    script = f"""
import errno, pandas as pd, tensorboardX.record_writer as record_writer
record_writer.open_file = lambda path: open("/dev/full", "wb")
from decision_bench._src.tensorboard import TensorBoardLog
rows = pd.DataFrame({{"agent": "mlp", "seed": 0, "step": [1, 2], "cumulative_regret": [0.5, 1.0]}})
board = TensorBoardLog({str(tmp_path / "tb")!r})
try:
    board.bandit_rows(rows)
except OSError as error:
    print("caught", errno.errorcode[error.errno])
try:
    board.close()
except OSError as error:
    print("close", errno.errorcode[error.errno])
"""
    done = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "caught ENOSPC"
    assert done.stderr == ""


@pytest.mark.parametrize("command", [
    ["testbed", "--num-train", "3", "--temperature", "0.1", "--tau", "1", "--seeds", "1", "--num-test", "4",
     "--num-models", "2", "--no-progress"],
    ["bandit", "--input-dim", "2", "--num-actions", "3", "--steps", "2", "--seeds", "1", "--no-progress"],
])
def test_a_file_where_the_tensorboard_folder_belongs_is_one_line_exit_2_before_any_work(tmp_path, capsys, command):
    # R3-99: it ended with exit 1 after the run had started, its line promising a resume
    from decision_bench.cli.program import main as cli_main

    taken = tmp_path / "taken"
    taken.write_text("a file of the user's")
    assert cli_main([*command, "--tensorboard", str(taken), "--out", str(tmp_path / "out")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"decision-bench: error: --tensorboard {str(taken)!r} is a file, not a folder; give a folder path"]
    assert taken.read_text() == "a file of the user's"
    assert not (tmp_path / "out" / "cells").exists()  # no cell was computed
