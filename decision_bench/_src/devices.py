"""Seeds over devices: independent seeds run on every core, not one.

JAX's CPU backend is one device by default, and one XLA:CPU program keeps about
one core busy on this project's small shapes (a [S, 128, 50] @ [S, 50, 50] matmul
runs at the same GFLOP/s with one core as with two; bench/bandit.py). Seeds never
exchange data, so splitting the seed axis over several devices is exact: each
device runs the same per-seed program on its share of the seeds, and a seed's
numbers do not depend on the number of devices (tests/_src/test_devices.py).

- ``use_cpu_cores`` makes the CPU backend one device per core. It changes a
  process-wide JAX setting that is read once, when the first computation starts,
  so the ``decision-bench`` program calls it first thing (``cli/program.py``); a
  Python caller opts in the same way, or with
  ``jax.config.update("jax_num_cpu_devices", N)`` right after ``import jax``.
- ``shard_seeds`` places arrays whose leading axis is the seed axis [S] over as
  many local devices as divide S (so 20 seeds use 2 devices, 5 seeds 1 of 2);
  with one device it returns the arrays as they are. A jitted function given
  arrays placed so runs partitioned the same way (its outputs keep the placement).
- ``padded_seed_count`` and ``pad_seeds``: S seeds padded with copies of the
  last one to a multiple of the devices (5 seeds -> 6 on 2 devices), whose
  results are dropped: 5 seeds then take the wall time of 3, not 5. The testbed
  runner and ``run_bandit`` pad (the bandit saves and reports only its own
  seeds, so checkpoints never hold a copy).
- Each takes ``max_devices``: a host agent's seeds (agents/host_agent.py) run on one
  device (``max_devices=1``). Its program calls back into Python, and XLA places a
  callback on one device with collectives that gather the other device's operands
  to it; those wait for the callback, and a wait over XLA:CPU's collective limit
  (40 s: one slow fit of the user's code under load) aborts the process. Host
  agents gain nothing from a second device (their Python runs one call at a time).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

SEED_AXIS = "seeds"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def use_cpu_cores(count: int | None = None) -> int:
    """Asks JAX for ``count`` CPU devices (default: this process's usable cores) and
    returns the number of local devices JAX has.

    Must run before the first JAX computation: afterwards the device count is fixed,
    and this leaves it as it is (the return value says what it is). It only changes
    the CPU backend's device count; a GPU process still computes on its GPUs.
    """
    if count is None:
        count = usable_cores()
    if count < 1:
        raise ValueError(f"count must be >= 1 CPU device, got {count}")
    try:
        jax.config.update("jax_num_cpu_devices", int(count))
    except RuntimeError:
        pass  # a computation already ran: JAX keeps the devices it started with
    return jax.local_device_count()


def _available(max_devices: int | None) -> int:
    count = jax.local_device_count()
    return count if max_devices is None else max(1, min(count, max_devices))


def seed_devices(num_seeds: int, max_devices: int | None = None) -> int:
    """How many local devices ``shard_seeds`` spreads num_seeds seeds over: the
    largest count <= the local devices (at most max_devices) that divides num_seeds."""
    available = _available(max_devices)
    return max(n for n in range(1, min(available, num_seeds) + 1) if num_seeds % n == 0)


def padded_seed_count(num_seeds: int, max_devices: int | None = None) -> int:
    """num_seeds rounded up to a multiple of the local devices (at most max_devices),
    where there are at least as many seeds as devices (fewer gain nothing from copies)."""
    available = _available(max_devices)
    if num_seeds < available:
        return num_seeds
    return -(-num_seeds // available) * available


def pad_seeds(tree: Any, num_seeds: int, max_devices: int | None = None) -> Any:
    """``tree``'s arrays (leading axis [S]) with copies of their last entry appended
    to ``padded_seed_count(S)`` entries; the tree itself where that is S."""
    padded = padded_seed_count(num_seeds, max_devices)
    if padded == num_seeds:
        return tree
    index = np.minimum(np.arange(padded), num_seeds - 1)
    return jax.tree.map(lambda leaf: leaf[index], tree)


def seed_sharding(num_seeds: int, max_devices: int | None = None) -> NamedSharding | None:
    """The placement of a leading [num_seeds] axis over ``seed_devices(num_seeds)``
    devices (the other axes whole on each), or None where that is one device."""
    count = seed_devices(num_seeds, max_devices)
    if count == 1:
        return None
    mesh = Mesh(np.asarray(jax.local_devices()[:count]), (SEED_AXIS,))
    return NamedSharding(mesh, PartitionSpec(SEED_AXIS))


def shard_seeds(tree: Any, num_seeds: int, max_devices: int | None = None) -> Any:
    """``tree``'s arrays (each with a leading [num_seeds] axis) placed by
    ``seed_sharding``; the tree itself where that is None (one device)."""
    sharding = seed_sharding(num_seeds, max_devices)
    if sharding is None:
        return tree
    return jax.device_put(tree, sharding)
