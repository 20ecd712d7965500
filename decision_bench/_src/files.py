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
import time
from pathlib import Path
from typing import IO, Callable

__all__ = [
    "CHECKSUM_SUFFIX",
    "UNFINISHED_RUN",
    "atomic_write",
    "atomic_write_text",
    "check_output_dir",
    "checksum_path",
    "read_verified_results",
    "sha256_hex",
    "umask_mode",
    "verify_results_file",
    "write_results_csv",
]


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


# Results CSVs (testbed.csv, bandit.csv, tune.csv, correlations.csv, ...) get a
# sidecar NAME.csv.sha256 in `sha256sum` format (`sha256sum -c NAME.csv.sha256`
# checks it by hand), with comment lines recording the number of data rows and,
# for a summary, the checksum of the file it summarises. The CSV itself stays a
# plain CSV that pd.read_csv reads as is. A CSV without a sidecar (a user's own
# file) is read as unverified.
#
# Runs rewrite their CSVs while they go on (a row set per finished chunk or
# cell), and `analyze` may read them at any moment, so the pair must agree at
# every instant although two files cannot be renamed at once. A rewrite is three
# atomic renames: (1) the sidecar lists the new version and the one on disk;
# (2) the CSV is replaced; (3) the sidecar lists the new version alone. Between
# (1) and (3) the sidecar vouches for both versions (a reader accepts either,
# each with its own row count; `sha256sum -c` reports the one not on disk as
# FAILED), so a kill at any moment leaves a pair that verifies. A reader that
# reads the old CSV and then, after (3), the new sidecar retries
# (read_verified_results).
CHECKSUM_SUFFIX = ".sha256"
# The `error` of bandit.csv rows of a run still in progress ("unfinished: 3000 of
# 10000 steps"): readers leave such runs out, as they do failed ones, and say so.
UNFINISHED_RUN = "unfinished:"
_ROWS = "# data rows: "
_SUMMARISES = "# summarises: "
_REPLACING = "# being replaced: a writer is between its renames; the version it replaces:"
# How often a reader re-reads a results file that changed under it while it read.
_READ_ATTEMPTS = 4
_READ_RETRY_SECONDS = 0.05


def checksum_path(path: str | os.PathLike) -> Path:
    """Where the checksum of results file ``path`` is kept: NAME.csv.sha256 beside it."""
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def _sidecar_versions(lines: list[str]) -> list[tuple[str, int]]:
    """(digest, data rows) of each version a sidecar lists, newest first; each digest
    line goes with the "# data rows" line before it. ValueError when none does."""
    versions, rows = [], None
    for line in lines:
        if line.startswith(_ROWS):
            rows = int(line[len(_ROWS):])
        elif line and not line.startswith("#"):
            if rows is None:
                raise ValueError("a checksum line without its row count")
            versions.append((line.split()[0], rows))
            rows = None
    if not versions:
        raise ValueError("no checksum line")
    return versions


def _vouched_version(path: Path) -> tuple[str, int] | None:
    """(digest, rows) of the version of ``path`` now on disk, if its sidecar vouches for it."""
    sidecar = checksum_path(path)
    if not path.is_file() or not sidecar.is_file():
        return None
    try:
        versions = _sidecar_versions(sidecar.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    digest = sha256_hex(path.read_bytes())
    return next((v for v in versions if v[0] == digest), None)


def write_results_csv(path: str | os.PathLike, table, summarises: str | os.PathLike | None = None) -> Path:
    """Writes ``table`` (a pandas DataFrame: anything with ``to_csv`` and ``len``)
    as a CSV without its index, atomically, with its checksum file.

    May be called again and again on one path while a run grows it: at every
    moment the CSV on disk matches its checksum file (see the comment above).

    ``summarises``: another results file this one is computed from (tune_summary.csv
    from tune.csv); its current checksum is recorded, so a reader can tell that the
    two belong together (``verify_results_file`` checks it).
    """
    path = Path(path)
    data = table.to_csv(index=False).encode("utf-8")
    digest = sha256_hex(data)
    header = []
    if summarises is not None:
        source = Path(summarises)
        header.append(f"{_SUMMARISES}{source.name} {sha256_hex(source.read_bytes())}")
    final = header + [f"{_ROWS}{len(table)}", f"{digest}  {path.name}"]
    previous = _vouched_version(path)
    if previous is not None and previous[0] != digest:
        transitional = final + [_REPLACING, f"{_ROWS}{previous[1]}", f"{previous[0]}  {path.name}"]
        atomic_write_text(checksum_path(path), "\n".join(transitional) + "\n")
    else:
        # No vouched version on disk (a first write, or a file the sidecar does not
        # match): the new sidecar goes first, so a CSV never stands beside a sidecar
        # that does not list it once this write has begun.
        atomic_write_text(checksum_path(path), "\n".join(final) + "\n")
    atomic_write(path, lambda handle: handle.write(data))
    if previous is not None and previous[0] != digest:
        atomic_write_text(checksum_path(path), "\n".join(final) + "\n")
    return path


def verify_results_file(path: str | os.PathLike, data: bytes) -> int | None:
    """Checks ``data`` (the bytes read from results file ``path``) against its checksum file.

    Returns the recorded number of data rows, or None when there is no checksum
    file (a hand-made or older file: the caller treats it as unverified). Raises
    ValueError (one line naming the file) when the checksum file is unreadable,
    the bytes match none of the versions it lists (cut short, edited, or a kill
    between writes of an older decision-bench), or the file it summarises has
    changed since.
    """
    path = Path(path)
    sidecar = checksum_path(path)
    if not sidecar.is_file():
        return None
    advice = f"re-run the command that wrote it, or delete {sidecar.name} to read {path.name} as an unverified file"
    try:
        lines = sidecar.read_text(encoding="utf-8").splitlines()
        versions = _sidecar_versions(lines)
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        raise ValueError(f"{path}: its checksum file {sidecar.name} is unreadable; {advice}") from None
    digest = sha256_hex(data)
    rows = next((count for recorded, count in versions if recorded == digest), None)
    if rows is None:
        raise ValueError(
            f"{path} does not match its checksum in {sidecar.name} (cut short, edited, or written "
            f"by an interrupted run); {advice}"
        )
    for line in lines:
        if line.startswith(_SUMMARISES):
            name, _, recorded = line[len(_SUMMARISES):].rpartition(" ")
            source = path.with_name(name)
            if not source.is_file() or sha256_hex(source.read_bytes()) != recorded:
                raise ValueError(
                    f"{path} summarises another {name} than the one beside it (a run interrupted "
                    f"between its writes, or files mixed from two runs); {advice}"
                )
    return rows


def read_verified_results(path: str | os.PathLike) -> tuple[bytes, int | None]:
    """(bytes, recorded data rows or None when unverified) of results file ``path``,
    checked by ``verify_results_file``. A run in progress may replace the file
    between the reads of the CSV and of its checksum file: a mismatch is read
    again a few times (0.05 s apart) before it is reported. OSError (e.g.
    FileNotFoundError) as ``Path.read_bytes`` raises it."""
    path = Path(path)
    for _ in range(_READ_ATTEMPTS - 1):
        data = path.read_bytes()
        try:
            return data, verify_results_file(path, data)
        except ValueError:
            time.sleep(_READ_RETRY_SECONDS)
    data = path.read_bytes()
    return data, verify_results_file(path, data)


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
