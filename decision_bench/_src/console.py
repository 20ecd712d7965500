"""What the command line shows a person: errors, warnings, help, interrupts.

- Errors and warnings are single plain lines with one prefix for every
  subcommand (``decision-bench: error:`` / ``decision-bench: warning:``); a
  warning is shown once per distinct message and never with source code.
- ``--help`` shows every option's default.
- Ctrl-C (SIGINT) and SIGTERM end the process within moments, even in the middle
  of an XLA compilation, with exit status 130 / 143 and a message saying what is
  saved. Every file the package writes is written atomically
  (``_src/files.py``), so stopping at any instant loses at most the unit of work
  in progress (a cell, a chunk of bandit steps).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
import warnings

PROG = "decision-bench"
INTERRUPTED = (
    "interrupted: everything finished so far is saved (cells, bandit chunks); "
    "run the same command again to resume"
)
# Commands that compute no cells: an interruption there has nothing to resume.
INTERRUPTED_ANALYSIS = (
    "interrupted: analyze computes no cells, and the folder keeps the previous analysis' "
    "outputs (new ones are moved in only when it finishes); run the same command again"
)
# The line the interrupt exit prints: set once per process by the program for its
# command (``set_interrupt_line``), read by the signal handler, which cannot be told.
_interrupt_line = [INTERRUPTED]


def set_interrupt_line(line: str) -> None:
    """The line printed when Ctrl-C or SIGTERM ends this process (INTERRUPTED by default)."""
    _interrupt_line[0] = line


def interrupt_line() -> str:
    return _interrupt_line[0]


OUT_OF_MEMORY = (
    "out of memory: make the run smaller (fewer --seeds, smaller sizes or fewer --workers); "
    "everything finished so far is saved, so the same command resumes"
)


class RunFailed(RuntimeError):
    """A failure during a run that the command line reports as one line, without a
    traceback, and exit status 1 (a worker that died, say): the message says what
    failed, where, and what is saved."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-wrapped descriptions and adds "(default: ...)" to each option
    that has a real default and does not already say what happens without it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, False, argparse.SUPPRESS)
            or action.option_strings == []
        ):
            return text
        return f"{text} (default: %(default)s)"


def error_line(message: str) -> str:
    return f"{PROG}: error: {message}"


def os_error_line(error: OSError) -> str:
    """One line for a failed read or write: what happened, to which path, and what
    to do (the work finished so far is saved, so the same command resumes)."""
    if error.errno == errno.EPIPE and error.filename is None:
        # E11, E12: output piped into a command that stopped reading (| head).
        return ("the standard output was closed before the command finished printing (a pipe such as "
                "| head): the rest of its output was not shown; the files it writes are not affected")
    where = error.filename if error.filename is not None else "a file"
    if error.filename2 is not None:
        where = f"{where} -> {error.filename2}"
    resume = "then run the same command again to resume"
    if error.errno == errno.ENOSPC:
        return f"no space left on the device writing {where}: free some space, {resume}"
    if error.errno == errno.EDQUOT:
        return f"disk quota exceeded writing {where}: free some space, {resume}"
    if isinstance(error, IsADirectoryError):
        return f"{where} is a folder where a file belongs: move or remove it, {resume}"
    if isinstance(error, (NotADirectoryError, FileExistsError)) and error.filename is not None:
        # mkdir of a folder that is a file (FileExistsError), or a path through one.
        culprit = _first_file_on(error.filename)
        if culprit is not None:
            return f"{culprit} is a file where a folder belongs: move or remove it, {resume}"
    return f"{error.strerror or error}: {where}"


def _first_file_on(path: str | os.PathLike) -> str | None:
    """The first of ``path``'s ancestors (or itself) that exists and is not a folder."""
    path = os.fspath(path)
    chain = []
    while True:
        chain.append(path)
        parent = os.path.dirname(path)
        if parent in ("", path):
            break
        path = parent
    for candidate in reversed(chain):
        if os.path.exists(candidate) and not os.path.isdir(candidate):
            return candidate
    return None


def print_error(message: str) -> None:
    print(error_line(message), file=sys.stderr)


def install_warning_printer(stream=None) -> None:
    """Shows each distinct warning once as ``decision-bench: warning: <message>``.

    Python's default display adds the file, line number and source line of the
    code that warned: useful to a developer, noise to a researcher running a
    command.
    """
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message).strip()
        if text in seen:
            return
        seen.add(text)
        print(f"{PROG}: warning: {text}", file=stream or sys.stderr)

    warnings.showwarning = show
    # "default" would already show each (message, location) once; "always" plus
    # our own de-duplication shows each message once whatever the location.
    warnings.simplefilter("always")


_EXITS = (signal.SIGINT, signal.SIGTERM)


def install_interrupt_exit() -> None:
    """SIGINT and SIGTERM end the process at once with status 128 + signal number.

    Python runs a signal handler only between bytecodes of the main thread, so a
    KeyboardInterrupt waits for a long XLA compilation to return, and unwinding
    through JAX's runtime while its threads were still busy crashed the
    interpreter at exit (a segmentation fault). A KeyboardInterrupt raised inside
    a callback that swallows exceptions (JAX's garbage-collection callback, while
    JAX imports) was printed as "Exception ignored" and the command ran on. Here
    no KeyboardInterrupt is ever raised: the C-level handler writes the signal
    number to a pipe (``signal.set_wakeup_fd``) which a watcher thread reads at
    once, whatever the main thread is doing; the watcher prints the message and
    leaves with ``os._exit`` (no finalisers run while XLA threads are busy).
    Child processes get the default handlers back when they exec.

    Call from the main thread. The ``decision-bench`` program calls it before the
    package is imported (``decision_bench_launcher.py``, which loads this file on
    its own); a second call, from ``cli.program.main``, finds it installed and
    does nothing.
    """
    if getattr(signal.getsignal(signal.SIGINT), "decision_bench_interrupt_exit", False):
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)

    leaving = threading.Lock()

    def leave(signum: int) -> None:
        # The watcher and the Python-level handler may both see one signal; the
        # first one out prints and exits, the other stops here.
        if not leaving.acquire(blocking=False):
            return
        os.write(sys.stderr.fileno(), f"\n{interrupt_line()}\n".encode())
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - leaving anyway; a closed stream must not block exit
                pass
        os._exit(128 + signum)

    def watch() -> None:
        # The pipe carries every signal that has a Python handler (a library may
        # add one, for SIGCHLD say); only ours end the process.
        while True:
            received = os.read(read_end, 1)[0]
            if received in _EXITS:
                leave(received)

    # The Python-level handler must not raise KeyboardInterrupt into JAX; if it
    # runs before the watcher, it leaves the same way.
    def handle(received, frame) -> None:
        leave(received)

    handle.decision_bench_interrupt_exit = True
    for signum in _EXITS:
        signal.signal(signum, handle)
    threading.Thread(target=watch, name="decision-bench-signals", daemon=True).start()
