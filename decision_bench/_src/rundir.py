"""A run directory belongs to one run: a manifest says what made it, a lock says who is running.

Every command that writes results into ``--out`` (``reproduce``/``demo``,
``testbed``, ``bandit``, ``tune``) claims the folder with :func:`claim_run_dir`
for the whole run:

* The lock. ``OUT/.decision-bench.lock`` is held with an OS file lock
  (``filelock``) while the run goes on; a second process claiming the folder is
  refused at once with one line naming the holder (PID, host, command line, start
  time, from ``OUT/.decision-bench.lock.json``). The OS drops the lock when the
  holder ends, however it ends (Ctrl-C, kill, kill -9), so a dead run never
  blocks the next one. Worker processes never take it: the parent holds it for them.
* The manifest. ``OUT/run_manifest.json`` records the command and its
  result-defining arguments (not --workers, --no-progress and others that cannot
  change a row). The same command with the same arguments resumes; another
  command, or other arguments, is refused with one line naming the differences
  (``restart=True``, a command's --restart, replaces the manifest instead).
  A folder written before manifests existed (0.2.0) is adopted when the command's
  ``legacy_check`` finds its stored config agrees.
* Orphans. Temporary files of :func:`decision_bench._src.files.atomic_write`
  (``.NAME.XXXX.tmp``) left by a killed writer are removed once the folder is
  claimed: under the lock no live writer of this folder can be racing.

``decision-bench analyze`` writes its outputs into a run folder but is not a run:
it does not claim.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import filelock

from decision_bench._src.files import atomic_write_text, check_output_dir

MANIFEST_FILE = "run_manifest.json"
LOCK_FILE = ".decision-bench.lock"
OWNER_FILE = ".decision-bench.lock.json"
FORMAT = "decision_bench.run/1"

# Folders this process holds, resolved path -> manifest: a nested claim of the
# same run (reproduce's command around run_preset) is re-entrant. A second OS lock
# on the same file from this process would conflict with the first.
_HELD: dict[Path, dict] = {}


def plain_arguments(arguments: Mapping[str, Any]) -> dict:
    """Arguments as they read back from JSON (tuples become lists), so a saved
    manifest and a new one compare equal when the arguments are."""
    return json.loads(json.dumps(dict(arguments), sort_keys=True, default=str))


def _show(value: Any) -> str:
    return "not given" if value is None else repr(value)


def argument_differences(saved: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """"--steps: saved 3000, now 4000; ..." for every key whose value differs."""
    differ = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k))
    return "; ".join(f"{k}: saved {_show(saved.get(k))}, now {_show(now.get(k))}" for k in differ)


def read_manifest(out: Path) -> dict | None:
    """The folder's manifest, None when it has none; ValueError naming a damaged one."""
    path = Path(out) / MANIFEST_FILE
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT or not isinstance(manifest.get("arguments"), dict):
            raise ValueError("not a run manifest")
        str(manifest["command"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, AttributeError) as error:
        raise ValueError(
            f"{path} is damaged ({error}); if the folder holds the run you mean to resume, "
            "delete that file to have it adopted again, or give another output folder"
        ) from None
    return manifest


def legacy_command(out: Path) -> str | None:
    """Which command made a folder without a manifest (0.2.0), from the files it
    leaves; None when nothing tells (an empty folder, or cells alone)."""
    out = Path(out)
    if (out / "run.json").exists() or (out / "bandit_runs").is_dir():
        return "reproduce"
    if (out / "testbed.json").exists() or (out / "realdata.json").exists():
        return "testbed"
    if (out / "checkpoints").is_dir():
        return "bandit"
    if (out / "tune_summary.csv").exists() or (out / "tune.csv").exists():
        return "tune"
    return None


def _holder(out: Path) -> str:
    try:
        owner = json.loads((out / OWNER_FILE).read_text(encoding="utf-8"))
        return (
            f"pid {owner['pid']} on {owner['host']}, `{owner['command']}`, started {owner['started']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet said which"


def remove_orphan_temporaries(out: Path) -> list[Path]:
    """Removes the ``.*.tmp`` files atomic_write leaves when killed, in ``out`` and
    its subfolders (not inside hidden folders: those are other tools' staging
    areas); returns what it removed. Only safe under the run-directory lock."""
    removed = []
    for folder, subfolders, files in os.walk(out):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                path = Path(folder) / name
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


def _check_manifest(
    out: Path,
    flag: str,
    command: str,
    arguments: dict,
    restart: bool,
    restart_flag: str | None,
    legacy_check: Callable[[Path], str | None] | None,
) -> None:
    """Raises ValueError (one line) when ``out`` holds another run."""
    manifest = read_manifest(out)
    saved_command = manifest["command"] if manifest is not None else legacy_command(out)
    if saved_command is not None and saved_command != command:
        raise ValueError(
            f"{flag} {str(out)!r} holds a `{saved_command}` run; `{command}` would overwrite its "
            f"results: give another {flag}"
        )
    if restart:
        return
    retry = "give the same arguments to resume it"
    retry += f", start over with {restart_flag}" if restart_flag else ""
    retry += f" or give another {flag}"
    if manifest is not None:
        if manifest["arguments"] != arguments:
            raise ValueError(
                f"{flag} {str(out)!r} holds a `{command}` run with other arguments "
                f"({argument_differences(manifest['arguments'], arguments)}); {retry}"
            )
    elif saved_command is not None and legacy_check is not None:
        why = legacy_check(out)
        if why is not None:
            raise ValueError(
                f"{flag} {str(out)!r} holds a `{command}` run (from before run manifests) with "
                f"other arguments ({why}); {retry}"
            )


@contextlib.contextmanager
def claim_run_dir(
    out: str | os.PathLike,
    command: str,
    arguments: Mapping[str, Any],
    *,
    flag: str = "--out",
    restart: bool = False,
    restart_flag: str | None = None,
    legacy_check: Callable[[Path], str | None] | None = None,
) -> Iterator[Path]:
    """Claims ``out`` for one run of ``command`` for the duration of the ``with``.

    Creates the folder (``check_output_dir``), takes its lock (refusing at once,
    naming the holder, when another process has it), checks the manifest against
    ``command`` and ``arguments`` (result-defining values only, keyed by how the
    user gives them, e.g. "--steps"), writes the manifest, removes orphaned
    temporary files and yields the folder. ValueError with one line for another
    run's folder or a busy one.

    restart: the caller starts over (its --restart, named ``restart_flag``): a
      manifest of the same command with other arguments is replaced.
    legacy_check(out): for a folder of the same command without a manifest, None
      when its stored config agrees with this run, else the differences.
    """
    out = check_output_dir(out, flag)
    key = out.resolve()
    arguments = plain_arguments(arguments)
    manifest = {"format": FORMAT, "command": command, "arguments": arguments}
    held = _HELD.get(key)
    if held is not None:
        if (held["command"], held["arguments"]) != (command, arguments):
            raise ValueError(
                f"{flag} {str(out)!r} is already claimed by this process for another run "
                f"(`{held['command']}`: {argument_differences(held['arguments'], arguments)})"
            )
        yield out
        return
    lock = filelock.FileLock(out / LOCK_FILE, timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise ValueError(
            f"{flag} {str(out)!r} is in use by another run ({_holder(out)}); wait for it to end "
            f"or give another {flag}"
        ) from None
    try:
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else command,
            "started": started,
        }
        atomic_write_text(out / OWNER_FILE, json.dumps(owner) + "\n")
        _check_manifest(out, flag, command, arguments, restart, restart_flag, legacy_check)
        first_claim = not (out / MANIFEST_FILE).exists()
        # Every start of this run, oldest first: the time a resumed run spent is the sum
        # of its sessions, and the gaps between them are idle (experiments/baselines.py).
        # A manifest written before 0.3 keeps only its latest start ("claimed").
        previous = {} if first_claim or restart else read_manifest(out) or {}
        claims = previous.get("claims") or ([previous["claimed"]] if "claimed" in previous else [])
        record = {**manifest, "claimed": started, "claims": [*claims, started]}
        atomic_write_text(out / MANIFEST_FILE, json.dumps(record, indent=1) + "\n")
        remove_orphan_temporaries(out)
        _HELD[key] = manifest
        try:
            yield out
        except ValueError:
            # Bad input found once the run had started (an agent its command checks
            # late): the folder must not keep a manifest of arguments that never ran,
            # or the corrected command would be refused as another run.
            if first_claim:
                (out / MANIFEST_FILE).unlink(missing_ok=True)
            raise
        finally:
            _HELD.pop(key, None)
    finally:
        lock.release()
