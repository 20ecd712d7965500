"""Sizes a run may ask for: int32 bounds and a memory estimate before allocating.

JAX indexes with int32 (step counters, replay positions, sample indices), so a
count above 2**31 - 1 overflows inside a compiled program; and a run whose
arrays cannot fit in the machine's memory ends in an out-of-memory traceback (or
grows for hours) after its first seconds. Both are refused before any work, in
one line naming the flag, the estimate and the machine's memory.

One estimator per command family: :func:`bandit_memory` (``bandit`` and the
bandit cells of ``reproduce``) and :func:`testbed_memory` (``testbed``). Each
returns the largest terms of the run's footprint (a lower bound: only arrays
whose size is certain are counted, so a refused run could never have fit).
"""

from __future__ import annotations

import os
from typing import Any

INT32_MAX = 2**31 - 1
_FLOAT = 4  # bytes of a float32 / int32
# Bytes of one results row in memory (about 15 numeric and text columns in pandas).
_ROW_BYTES = 200
# Hidden width of the neural bandits' reward network and of most agents (50, 50).
_HIDDEN = 50


def check_count(flag: str, value: Any, minimum: int = 1) -> int:
    """An integer in [minimum, 2**31 - 1] (JAX's int32 indices), else one line naming flag."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= INT32_MAX:
        raise ValueError(f"{flag} must be an integer in [{minimum}, 2**31 - 1 = {INT32_MAX}], got {value!r}")
    return value


# Bootstrap resamples: each holds every point's index and values (tens of bytes a
# point), and the interval's Monte Carlo error at 10**6 is far below its width.
MAX_RESAMPLES = 1_000_000


def check_resamples(flag: str, value: Any) -> int:
    """A bootstrap size in [1, MAX_RESAMPLES]; ValueError naming flag otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RESAMPLES:
        raise ValueError(
            f"{flag} must be an integer in [1, {MAX_RESAMPLES}] (more resamples only hold more memory: "
            f"the interval's Monte Carlo error is already negligible), got {value!r}"
        )
    return value


def physical_memory_bytes() -> int | None:
    """The machine's memory (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(count: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if count < 1000 or unit == "PB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


def check_fits(what: str, terms: dict[str, int], memory: int | None = None) -> None:
    """Raises ValueError when the estimate (the sum of ``terms``) exceeds the
    machine's memory, naming the largest term: what to make smaller."""
    memory = physical_memory_bytes() if memory is None else memory
    total = sum(terms.values())
    if memory is None or total <= memory:
        return
    largest = max(terms, key=terms.get)
    raise ValueError(
        f"{what} needs at least {format_bytes(total)} of memory, mostly {largest} = "
        f"{format_bytes(terms[largest])}, but this machine has {format_bytes(memory)}; make that smaller"
    )


def bandit_memory(
    seeds: int, steps: int, log_every: int, replay_capacity: int, input_dim: int, num_actions: int
) -> dict[str, int]:
    """The largest arrays of a bandit run (all seeds run together): the replay
    buffers, the action sets with the networks' first layer on them, the logged rows."""
    return {
        "--seeds x --replay-capacity x (input dim + 2) x 4 bytes (replay buffers)":
            seeds * replay_capacity * (input_dim + 2) * _FLOAT,
        f"--seeds x --num-actions x (input dim + 2 x {_HIDDEN}) x 4 bytes (action sets and network activations)":
            seeds * num_actions * (input_dim + 2 * _HIDDEN) * _FLOAT,
        f"--steps / --log-every x --seeds x {_ROW_BYTES} bytes (logged rows)":
            (steps // log_every) * seeds * _ROW_BYTES,
    }


def testbed_memory(
    seeds: int, num_train: int, num_test: int, max_tau: int, input_dim: int, rows: int
) -> dict[str, int]:
    """The largest arrays of one testbed setting (its seeds together): the test
    inputs, the training data, and the rows of the whole run."""
    return {
        "--seeds x --num-test x tau x input dim x 4 bytes (test inputs)":
            seeds * num_test * max_tau * input_dim * _FLOAT,
        "--seeds x --num-train x (input dim + 1) x 4 bytes (training data)":
            seeds * num_train * (input_dim + 1) * _FLOAT,
        f"results rows (agents x settings x designs x --seeds) x {_ROW_BYTES} bytes": rows * _ROW_BYTES,
    }
