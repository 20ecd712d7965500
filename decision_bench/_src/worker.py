"""A worker process of the local executor (``run_cells(..., workers=N)``).

Run as ``python -I path/to/worker.py PARENT_PID`` (by path, isolated: nothing of
the package is imported before it knows its parent is alive). It reads
length-prefixed pickles from stdin: first its parent's import path and the JAX
settings to copy (the persistent compilation cache), then jobs ``(pickled compute_fn, cell)``; for
each job it writes ``(True, rows)`` or ``(False, exception)`` to stdout. Anything
the computation prints goes to stderr. It ends at the end of its input, or (on
Linux) as soon as its parent dies.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import IO, Any

_LENGTH = struct.Struct("<Q")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def write_message(stream: IO[bytes], message: Any) -> None:
    """Writes one pickled message (8-byte little-endian length, then the pickle)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_message(stream: IO[bytes]) -> Any:
    """Reads one message written by ``write_message``; EOFError at the end of input."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        raise EOFError("the other side closed the pipe")
    (size,) = _LENGTH.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other side closed the pipe mid-message")
    return pickle.loads(data)


def describe_exit(returncode: int | None) -> str:
    """How a process ended, in words: "killed by SIGKILL", "exit status 1"."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGKILL:
            # The kernel's out-of-memory killer sends SIGKILL too.
            return f"killed by {name}; an out-of-memory kill looks the same"
        return f"killed by {name}"
    return f"exit status {returncode}"


def _exit_with_parent(parent: int) -> None:
    """Asks Linux to kill this process when its parent dies; exits now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes  # noqa: PLC0415 - Linux only

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _failure(error: BaseException) -> tuple[bool, BaseException]:
    try:
        # Round trip: an exception class whose __init__ takes other arguments than
        # its args pickles but fails to unpickle, in the parent.
        pickle.loads(pickle.dumps(error))
        return False, error
    except Exception:  # noqa: BLE001 - an exception that does not pickle is sent as text
        return False, RuntimeError(f"{type(error).__name__}: {error}")


def main(argv: list[str]) -> int:
    _exit_with_parent(int(argv[0]))
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the computation's prints go to stderr
    jobs = sys.stdin.buffer
    sys.path[:], settings = read_message(jobs)
    import jax  # noqa: PLC0415 - after the parent is known to be alive

    for name, value in settings.items():
        jax.config.update(name, value)
    payload, compute_fn = None, None
    while True:
        try:
            job_payload, cell = read_message(jobs)
        except EOFError:
            return 0
        if job_payload != payload:
            payload, compute_fn = job_payload, pickle.loads(job_payload)
        try:
            reply = (True, compute_fn(cell))
        except Exception as error:  # noqa: BLE001 - reported to the parent, which raises it
            reply = _failure(error)
        write_message(replies, reply)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
