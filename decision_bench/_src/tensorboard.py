"""Optional TensorBoard logging of a run as it goes (``--tensorboard DIR``).

Event files are written with tensorboardX's record format (``pip install
'decision-bench[tensorboard]'``), which needs no TensorFlow; ``tensorboard --logdir DIR``
shows them. They are written in the calling thread (tensorboardX's ``RecordWriter``, not its
``SummaryWriter``): a full disk or a lost folder is then an ``OSError`` where the run
writes, which the commands report in one line like any other write, rather than
tracebacks from the writer's background thread and its exit hook. Scalars:

- ``regret/<bandit setting>/<agent>/seed<s>`` ("+" in a name is written "_plus"): cumulative regret against the step,
  from the rows of bandit.csv as they are logged (each chunk or cell);
- ``dkl/<design>/<agent>/d<d>_beta<beta>``: the mean d_KL over seeds against the
  training-set size T (the step axis), per testbed setting, as its cell finishes.

A value is written once per (tag, step): results files rewritten as a run grows
add only their new rows, and a resumed run (after Ctrl-C or kill -9) first reads the
(tag, step) pairs already in DIR's event files, so it adds the missing points (the
cells it reuses included: the commands log every row when they finish) and no
duplicates.
"""

from __future__ import annotations

import contextlib
import math
import socket
import struct
import time
import uuid
from pathlib import Path

import pandas as pd

from decision_bench._src.files import check_output_dir

INSTALL_HINT = "pip install 'decision-bench[tensorboard]'"


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bandit_setting(row) -> str:
    """env_d2_A40_beta0.1 (with _tanh_10-10 for another family), from the row's setting columns."""
    parts = [str(row.get("env", "bandit"))]
    for column, prefix in (("input_dim", "d"), ("num_actions", "A"), ("temperature", "beta")):
        if column in row and not pd.isna(row[column]):
            parts.append(f"{prefix}{_number(row[column])}")
    for column in ("dataset", "activation", "hidden_sizes"):
        if column in row and not pd.isna(row[column]) and str(row[column]):
            parts.append(str(row[column]))
    return "_".join(parts)


def _name(agent) -> str:
    """An agent name as a tag part: TensorBoard keeps [A-Za-z0-9_./-] and would turn
    "ensemble+" into "ensemble_", so "+" becomes "_plus"."""
    return str(agent).replace("+", "_plus")


def _design(tau, kappa) -> str:
    return f"tau{int(tau)}" + ("" if pd.isna(kappa) else f"_kappa{int(kappa)}")


def logged_points(directory: str | Path) -> set[tuple[str, int]]:
    """The (tag, step) pairs of the scalars in the event files under ``directory``.

    An event file is a sequence of records (a little-endian uint64 length, a 4-byte
    CRC, the serialised ``Event`` protobuf, a 4-byte CRC); a record cut short by an
    interrupted write ends the file's reading, so a damaged tail costs only its
    points, which the resumed run writes again."""
    from tensorboardX.proto import event_pb2  # noqa: PLC0415 - optional dependency

    points: set[tuple[str, int]] = set()
    folder = Path(directory)
    if not folder.is_dir():
        return points
    for path in sorted(folder.rglob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            start, end = offset + 12, offset + 12 + length
            if end + 4 > len(data):
                break
            try:
                event = event_pb2.Event.FromString(data[start:end])
            except Exception:  # noqa: BLE001 - a damaged record: stop reading this file
                break
            for value in event.summary.value:
                points.add((value.tag, int(event.step)))
            offset = end + 4
    return points


class TensorBoardLog:
    """Scalars of a run into event files under ``directory``; ``close()`` when done."""

    def __init__(self, directory: str | Path):
        try:
            from tensorboardX.record_writer import RecordWriter  # noqa: PLC0415 - optional dependency
        except ImportError:
            raise ValueError(f"--tensorboard needs tensorboardX, which is not installed: {INSTALL_HINT}") from None
        # A file (or an unwritable place) where the folder belongs is one line naming the
        # flag, before any work, not an OSError once the run has started.
        self.directory = check_output_dir(directory, "--tensorboard")
        # Before the writer opens its own file: the points of earlier sessions of the run.
        self.written: set[tuple[str, int]] = logged_points(self.directory)
        # Event files are named by the second they were opened: a unique suffix keeps a
        # run resumed within the same second from replacing the earlier session's file.
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{uuid.uuid4().hex[:12]}"
        self.records = RecordWriter(str(self.directory / name))
        self._write(file_version="brain.Event:2")  # what TensorBoard expects first

    def _write(self, **fields) -> None:
        from tensorboardX.proto import event_pb2  # noqa: PLC0415 - optional dependency

        self.records.write(event_pb2.Event(wall_time=time.time(), **fields).SerializeToString())

    def _add(self, tag: str, value: float, step: int) -> None:
        from tensorboardX.summary import scalar  # noqa: PLC0415 - optional dependency

        if (tag, step) in self.written or not math.isfinite(value):
            return
        self.written.add((tag, step))
        self._write(step=step, summary=scalar(tag, value))

    def bandit_rows(self, rows: pd.DataFrame) -> None:
        """Regret curves from bandit.csv rows (agent, seed, step, cumulative_regret, setting columns)."""
        for row in rows.to_dict("records"):
            tag = f"regret/{_bandit_setting(row)}/{_name(row['agent'])}/seed{int(row['seed'])}"
            self._add(tag, float(row["cumulative_regret"]), int(row["step"]))
        self.records.flush()

    def testbed_rows(self, rows: pd.DataFrame) -> None:
        """Mean d_KL over seeds per agent, design and (d, beta), at step T, from testbed.csv rows."""
        if not {"kl", "tau", "num_train"} <= set(rows.columns):
            return
        frame = rows.assign(
            design=[_design(t, k) for t, k in zip(rows["tau"], rows.get("kappa", pd.Series(float("nan"), rows.index)))]
        )
        keys = ["agent", "design", "input_dim", "temperature", "num_train"]
        for (agent, design, d, beta, num_train), kl in frame.groupby(keys, dropna=False)["kl"]:
            self._add(f"dkl/{design}/{_name(agent)}/d{_number(d)}_beta{_number(beta)}", float(kl.mean()),
                      int(num_train))
        self.records.flush()

    def close(self) -> None:
        # Closes the file even when its last flush fails (a full disk): the error is
        # raised once, where the run writes, and no file is left open behind it.
        self.records.close()


@contextlib.contextmanager
def closing_board(board: TensorBoardLog | None):
    """Closes the TensorBoard log (flushing its events) however the run ends."""
    try:
        yield board
    finally:
        if board is not None:
            board.close()
