"""JAX's persistent compilation cache, on by default for the command line.

XLA compilation is most of the wall time of a small run (the demo preset spends
more time compiling than computing on a 2-core CPU). JAX can keep every compiled
program in a directory, keyed by the program, the JAX/jaxlib versions and the
backend, so a second process running the same programs loads them instead of
compiling again.

Where the cache lives (``default_cache_dir``):

- ``$DECISION_BENCH_CACHE_DIR`` when set; set it to an empty string or ``off`` to
  turn the cache off;
- else ``$XDG_CACHE_HOME/decision-bench/xla``;
- else ``~/.cache/decision-bench/xla``.

The directory grows with every new program and is never pruned (JAX's size limit
needs the optional ``filelock`` package); deleting it is always safe. A process
killed while JAX writes an entry can leave it truncated: JAX then warns that it
cannot read that entry and compiles the program as if it were not cached.

The cache must never make a run fail: a directory that cannot be created or
written is reported with one warning and the run continues without a cache. A
cache that stops accepting entries during the run (a full disk) would make JAX
warn once per program; ``enable_compile_cache`` makes that one warning per
process (``warn_cache_write_errors_once``): the programs still run, uncached.
``enable_compile_cache`` changes process-wide JAX settings and only affects
programs compiled afterwards, so call it once, before the first computation.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Mapping

ENV_VAR = "DECISION_BENCH_CACHE_DIR"
# Values of ENV_VAR that turn the cache off (compared after strip() and lower()).
OFF_VALUES = ("", "off")


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache directory the command line uses, or None when ENV_VAR turns it off.

    environ: the environment to read (default: ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    if ENV_VAR in environ:
        value = environ[ENV_VAR]
        if value.strip().lower() in OFF_VALUES:
            return None
        return Path(value).expanduser()
    # An empty XDG_CACHE_HOME means unset (XDG Base Directory specification).
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or "~", ".cache")
    return Path(base).expanduser() / "decision-bench" / "xla"


def enable_compile_cache(directory: str | os.PathLike | None = None) -> Path | None:
    """Makes JAX keep compiled programs in `directory` (default: ``default_cache_dir()``).

    Returns the directory in use, or None when the cache stays off: ENV_VAR says
    off (and no directory was given), or the directory cannot be created or
    written, which is warned about (RuntimeWarning) instead of raised.
    """
    path = default_cache_dir() if directory is None else Path(directory).expanduser()
    if path is None:
        return None
    problem = _unusable_reason(path)
    if problem is not None:
        warnings.warn(
            f"the compilation cache is off for this run: {problem} (set {ENV_VAR} to another "
            f"directory, or to 'off', or pass --no-compile-cache)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    import jax  # noqa: PLC0415 - keeps this module importable without loading JAX

    warn_cache_write_errors_once()
    jax.config.update("jax_compilation_cache_dir", str(path))
    # JAX's defaults skip programs that compile in under a second and let the
    # backend impose a minimum entry size; most of our CPU programs compile in
    # tenths of a second but there are hundreds of them, so cache every one.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path


def _unusable_reason(path: Path) -> str | None:
    """Why `path` cannot hold the cache (creating it if needed), or None if it can."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file in the way, a read-only or missing mount, ...
        return f"cannot create {path} ({error.strerror or error})"
    # JAX reports failed cache writes as a warning per program; checking here
    # gives one clear line instead.
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable"
    return None


# The start of JAX's warning when an entry cannot be stored (jax/_src/compiler.py);
# its text names the program, so Python's own once-per-text rule shows one per program.
CACHE_WRITE_ERROR = "Error writing persistent compilation cache entry"


def warn_cache_write_errors_once() -> None:
    """Shows JAX's first cache-write warning of this process, reworded, and ignores
    the rest (one per program otherwise; with a full disk, hundreds).

    Installs a ``warnings.showwarning`` wrapper (once; idempotent) that, on the
    first such warning, adds an "ignore" filter for later ones. Warnings recorded
    by ``warnings.catch_warnings(record=True)`` are not affected.
    """
    original = warnings.showwarning
    if getattr(original, "_decision_bench_cache_once", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if text.startswith(CACHE_WRITE_ERROR):
            warnings.filterwarnings("ignore", message=CACHE_WRITE_ERROR)
            reason = text.split("': ", 1)[-1]
            message = (
                f"the compilation cache cannot store programs ({reason}); the run goes on without storing "
                f"them, and further cache write errors of this process are not shown (set {ENV_VAR}=off "
                "to turn the cache off)"
            )
        original(message, category, filename, lineno, file, line)

    show._decision_bench_cache_once = True  # type: ignore[attr-defined]
    warnings.showwarning = show
