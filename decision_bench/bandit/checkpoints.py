"""Saving and restoring a bandit run's carry: self-checking npz files written atomically.

One checkpoint holds the carry (every seed's environment, agent and replay),
the progress, the run's config and a SHA-256 over every array; the previous one
is kept beside it. A damaged file is named, set aside as ``*.damaged`` and the
previous checkpoint (or step 0) is used; a sound checkpoint of another config
is refused with the differing arguments named; a sound checkpoint of the same
arguments made by other code (PROVENANCE_KEYS: the decision-bench, jax, jaxlib, flax or optax
version, the agent's fingerprint) is stale: one warning names the cause and the run
starts over from step 0, as a stale results cell is recomputed.
"""

from __future__ import annotations

import ast
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.files import atomic_write, atomic_write_text
from decision_bench.bandit.loop import DEFAULT_REGULARIZATION, SeedCarry

STATE_FILE = "bandit_state.npz"
CONFIG_FILE = "bandit_config.json"
PREVIOUS_STATE_FILE = "bandit_state.prev.npz"
# Config entries that say which code made a checkpoint, not which experiment: a
# difference makes the checkpoint stale (recomputed), not another run (refused).
# A checkpoint without one of them (written before it was recorded) is not held
# against it.
PROVENANCE_KEYS = (
    "jax_version", "decision_bench_version", "library_versions", "agent_fingerprint", "agent_config",
)


def _to_numpy(tree: Any) -> list[np.ndarray]:
    leaves = jax.tree.leaves(tree)
    return [
        np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
        for x in leaves
    ]


def _from_numpy(template: Any, arrays: list[np.ndarray]) -> Any:
    """Arrays saved by _to_numpy, checked against the template's shapes and dtypes."""
    leaves, treedef = jax.tree.flatten(template)
    if len(leaves) != len(arrays):
        raise ValueError(
            f"checkpoint has {len(arrays)} arrays but this run's state has {len(leaves)}; "
            "it was written by a different agent or version"
        )
    restored = []
    for i, (leaf, array) in enumerate(zip(leaves, arrays)):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            value = jax.random.wrap_key_data(jnp.asarray(array), impl=jax.random.key_impl(leaf))
        else:
            value = jnp.asarray(array, leaf.dtype)
        if value.shape != leaf.shape:
            raise ValueError(
                f"checkpoint array {i} has shape {value.shape}, this run expects {leaf.shape}"
            )
        restored.append(value)
    return jax.tree.unflatten(treedef, restored)


class DamagedCheckpoint(Exception):
    """A checkpoint file that cannot be used; the message says why."""


def checkpoint_digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def save_checkpoint(
    out_dir: Path, config: dict, carry: SeedCarry, t: int, wall_seconds: float, logged: np.ndarray
) -> None:
    """Writes the carry, progress and config as one self-checking npz.

    The config travels inside the file, so state and config can never be paired
    wrongly. The previous state is kept as ``bandit_state.prev.npz`` until the new
    one is in place: if the newest file is ever found damaged, the run continues
    from the one before instead of from step 0.
    """
    arrays = {f"leaf_{i:05d}": a for i, a in enumerate(_to_numpy(carry))}
    arrays["t"] = np.asarray(t, np.int64)
    arrays["wall_seconds"] = np.asarray(wall_seconds, np.float64)
    arrays["logged"] = np.asarray(logged, np.float64)
    arrays["config"] = np.asarray(json.dumps(config, sort_keys=True))
    arrays["sha256"] = np.asarray(checkpoint_digest(arrays))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    state, previous = out_dir / STATE_FILE, out_dir / PREVIOUS_STATE_FILE
    if state.exists():
        # Copied, not renamed: at every instant both names hold a complete file.
        old = state.read_bytes()
        atomic_write(previous, lambda handle: handle.write(old))
    atomic_write(state, lambda handle: handle.write(data))
    # The human-readable copy; never read back, so it cannot be damaged usefully.
    atomic_write_text(out_dir / CONFIG_FILE, json.dumps(config, indent=1, sort_keys=True) + "\n")


def _read_checkpoint(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(saved config, arrays) of one file that passes its checksum and holds values
    a run writes; DamagedCheckpoint saying why otherwise."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.array(data[name]) for name in data.files}
    except Exception as error:  # noqa: BLE001 - zip, pickle and format errors all mean "damaged"
        raise DamagedCheckpoint(f"unreadable ({type(error).__name__}: {error})") from None
    if "sha256" not in arrays or "config" not in arrays:
        raise DamagedCheckpoint("no checksum (written by an older version or by hand)")
    stored = str(arrays.pop("sha256"))
    if checkpoint_digest(arrays) != stored:
        raise DamagedCheckpoint("checksum mismatch")
    try:
        config = json.loads(str(arrays["config"]))
        num_steps = int(config["num_steps"])  # the saved run's length, not this run's
        t, logged = int(arrays["t"]), arrays["logged"]
        float(arrays["wall_seconds"])
    except (KeyError, ValueError, TypeError) as error:
        raise DamagedCheckpoint(f"malformed ({error})") from None
    if not 0 < t <= num_steps or logged.ndim != 2 or not np.all(np.isfinite(logged)):
        # Regrets stay finite even for a seed that failed (its regret freezes), so
        # a NaN here never came from a run.
        raise DamagedCheckpoint("progress values out of range (non-finite regret or bad step)")
    return config, arrays


def saved_progress(out_dir: Path) -> tuple[int, int, float] | None:
    """(steps saved, the run's steps, wall seconds so far) of the newest sound
    checkpoint in a run folder, None when it holds none: how far a run is, read
    without restoring it (safe beside the running process: every write is atomic)."""
    for name in (STATE_FILE, PREVIOUS_STATE_FILE):
        path = Path(out_dir) / name
        if path.exists():
            try:
                config, arrays = _read_checkpoint(path)
            except DamagedCheckpoint:
                continue  # the run that reads it next names it and sets it aside
            return int(arrays["t"]), int(config["num_steps"]), float(arrays["wall_seconds"])
    return None


def upgrade_saved_config(saved: dict) -> dict:
    """A config saved before the decay mode was a setting of the run (it was an
    agent keyword, in agent_kwargs when given, else the default) as recorded now."""
    if "regularization" in saved:
        return saved
    kwargs = dict(saved.get("agent_kwargs") or {})
    mode = kwargs.pop("regularization", repr(DEFAULT_REGULARIZATION))  # values are saved as repr
    return {**saved, "agent_kwargs": kwargs, "regularization": ast.literal_eval(mode)}


def _config_difference(saved: dict, config: dict) -> str:
    differ = sorted(k for k in set(saved) | set(config) if saved.get(k) != config.get(k))
    return "; ".join(f"{k}: saved {saved.get(k)!r}, now {config.get(k)!r}" for k in differ)


def load_checkpoint(
    out_dir: Path, config: dict, template: SeedCarry
) -> tuple[SeedCarry, int, float, np.ndarray] | None:
    """The newest usable saved state of this config, or None if there is none.

    A damaged file is named in a warning and moved aside to ``<name>.damaged``
    (kept for inspection, never read again); the older state is tried next. A
    sound checkpoint of another config raises ValueError naming every argument
    that differs (before its arrays are compared with this run's shapes, so it is
    never mistaken for damage): resuming it would mix two experiments.
    """
    for name in (STATE_FILE, PREVIOUS_STATE_FILE):
        path = out_dir / name
        if not path.exists():
            continue
        try:
            saved, arrays = _read_checkpoint(path)
            saved = upgrade_saved_config(saved)
            arguments = {k: v for k, v in saved.items() if k not in PROVENANCE_KEYS}
            wanted = {k: v for k, v in config.items() if k not in PROVENANCE_KEYS}
            if arguments != wanted:
                raise ValueError(
                    f"{out_dir} holds a saved run with other arguments "
                    f"({_config_difference(arguments, wanted)}); give the same arguments to resume "
                    "it, start over with --restart (resume=False in Python) or choose another "
                    "output folder"
                )
            stale = {k: saved[k] for k in PROVENANCE_KEYS if k in saved and saved[k] != config.get(k)}
            if stale:
                warnings.warn(
                    f"checkpoint {path} is stale (made with "
                    + ", ".join(f"{k} {v!r}, now {config.get(k)!r}" for k, v in stale.items())
                    + "); starting this run over from step 0",
                    RuntimeWarning,
                    stacklevel=3,
                )
                return None
            try:
                leaves = [arrays[k] for k in sorted(k for k in arrays if k.startswith("leaf_"))]
                carry = _from_numpy(template, leaves)
            except ValueError as error:
                raise DamagedCheckpoint(f"does not fit its own arguments ({error})") from None
        except DamagedCheckpoint as why:
            os.replace(path, path.with_name(path.name + ".damaged"))
            warnings.warn(
                f"checkpoint {path} is damaged ({why}); discarding it (kept as "
                f"{path.name}.damaged) and continuing from the last good state or step 0",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        return carry, int(arrays["t"]), float(arrays["wall_seconds"]), np.array(arrays["logged"])
    return None


# ----------------------------------------------------------------------------
# The compiled experiment
