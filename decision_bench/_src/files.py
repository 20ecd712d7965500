"""Writing files so that an interrupted run never leaves a half-written one.

Every file the package writes (results, cells, checkpoints, figures, reports)
goes through :func:`atomic_write`: the bytes go to a temporary file in the same
folder, are flushed to disk and renamed over the target (``os.replace`` is atomic
on one file system). A crash, Ctrl-C or ``kill -9`` at any moment leaves either
the old file or the new one, never a mix. The file gets the permissions any
other tool would give it (``0o666`` less the user's umask), not the ``0o600`` of
``tempfile.mkstemp``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO, Callable

__all__ = ["atomic_write", "atomic_write_text", "check_output_dir", "sha256_hex", "umask_mode"]


def umask_mode() -> int:
    """The mode a new regular file gets under the current umask (e.g. 0o644)."""
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Calls ``write(handle)`` on a temporary binary file, then renames it to ``path``.

    The parent folder is created if missing. On any exception (KeyboardInterrupt
    included) the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A leading "." and a ".tmp" suffix: globs for results (*.json, *.csv) never
    # pick up a temporary file left by kill -9.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, umask_mode())
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.filename in (None, tmp):
            # A failed write (no space left, say) names no file, or the temporary
            # one: name the file being written, for the command line's one line.
            error.filename, error.filename2 = str(path), None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Writes ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_write`."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda handle: handle.write(data))


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``: the checksum stored beside cells and checkpoints."""
    return hashlib.sha256(data).hexdigest()


def check_output_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Creates the output folder (and parents) and checks it is writable, before
    any work starts; raises ValueError with one line naming ``flag`` otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a file, not a folder; give a folder path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{flag} {str(path)!r}: {str(parent)!r} is a file, not a folder")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"{flag} {str(path)!r} cannot be created ({error.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {str(path)!r} is not writable")
    return path
