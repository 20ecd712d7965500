"""A results CSV rewritten while a run goes on always matches its checksum file
(issue 21, part 3): at every rename, after a kill between renames, and for a
reader racing the writer."""

from __future__ import annotations

import io
import shutil
import subprocess
import threading

import pandas as pd
import pytest

from decision_bench._src import files
from decision_bench._src.files import checksum_path, read_verified_results, verify_results_file, write_results_csv


def _table(rows: int) -> pd.DataFrame:
    return pd.DataFrame({"agent": ["mlp"] * rows, "seed": [0] * rows, "step": list(range(1, rows + 1)),
                         "cumulative_regret": [0.5 * i for i in range(rows)]})  # fmt: skip


def test_every_state_between_renames_verifies_with_its_own_row_count(tmp_path, monkeypatch):
    path = tmp_path / "bandit.csv"
    states = []
    real_write = files.atomic_write

    def recording_write(target, write):
        result = real_write(target, write)
        if path.exists():
            states.append(verify_results_file(path, path.read_bytes()))
        return result

    monkeypatch.setattr(files, "atomic_write", recording_write)
    for rows in (2, 5, 9):
        write_results_csv(path, _table(rows))
    # The first write: sidecar (no CSV yet), CSV; each later one: sidecar listing both, CSV, sidecar.
    assert states == [2, 2, 5, 5, 5, 9, 9]
    assert "being replaced" not in checksum_path(path).read_text()
    if shutil.which("sha256sum"):
        check = subprocess.run(["sha256sum", "-c", checksum_path(path).name], cwd=tmp_path, capture_output=True)
        assert check.returncode == 0


@pytest.mark.parametrize("killed_at, expected_rows", [(0, 3), (1, 7)])
def test_a_kill_between_renames_leaves_a_pair_that_verifies(tmp_path, monkeypatch, killed_at, expected_rows):
    path = write_results_csv(tmp_path / "testbed.csv", _table(3))
    real_write = files.atomic_write
    calls = []

    def dying_write(target, write):
        # killed_at 0: after the sidecar listing both versions, before the CSV's rename;
        # 1: after the CSV's rename, before the final sidecar.
        if len(calls) == killed_at + 1:
            raise KeyboardInterrupt
        calls.append(target)
        return real_write(target, write)

    monkeypatch.setattr(files, "atomic_write", dying_write)
    with pytest.raises(KeyboardInterrupt):
        write_results_csv(path, _table(7))
    assert verify_results_file(path, path.read_bytes()) == expected_rows
    assert len(pd.read_csv(path)) == expected_rows
    monkeypatch.setattr(files, "atomic_write", real_write)
    write_results_csv(path, _table(8))  # the next write starts from what it finds
    assert verify_results_file(path, path.read_bytes()) == 8
    assert "being replaced" not in checksum_path(path).read_text()


def test_a_reader_racing_a_writer_never_sees_a_mismatch_or_a_partial_row(tmp_path):
    path = write_results_csv(tmp_path / "bandit.csv", _table(1))
    stop = threading.Event()
    failures, seen = [], set()

    def read_forever():
        while not stop.is_set():
            try:
                data, rows = read_verified_results(path)
            except ValueError as error:
                failures.append(str(error))
                continue
            frame = pd.read_csv(io.BytesIO(data))
            if len(frame) != rows or frame.isna().any().any():
                failures.append(f"{len(frame)} rows, recorded {rows}")
            seen.add(rows)

    reader = threading.Thread(target=read_forever)
    reader.start()
    try:
        # Rewrites (2 to 24 rows, round and round) go on until the reader has read at
        # least 3 versions, so a busy machine that schedules the reader late still races.
        for write in range(5000):
            write_results_csv(path, _table(2 + write % 23))
            if write >= 22 and len(seen) >= 3:
                break
    finally:
        stop.set()
        reader.join()
    assert failures == []
    assert len(seen) >= 3  # the reader did read while the file was rewritten


def test_a_file_that_stays_wrong_is_still_refused_after_the_retries(tmp_path):
    path = write_results_csv(tmp_path / "bandit.csv", _table(4))
    path.write_text(path.read_text()[:-3])
    with pytest.raises(ValueError, match="does not match its checksum"):
        read_verified_results(path)
