"""The one record of what produced a result: package versions, Python, platform, JAX backend."""

from __future__ import annotations

import functools
import importlib.metadata
import platform

import jax

# The packages whose versions can change results (JAX changes its random streams
# between minor releases); every results file and cell records them.
PACKAGES = ("decision-bench", "jax", "jaxlib", "flax", "optax", "numpy", "pandas")
# The ones whose change makes stored results stale: this package's own code and
# the libraries that compute (random streams, initialisers, optimisers). numpy and
# pandas only carry the numbers.
RESULT_PACKAGES = ("decision-bench", "jax", "jaxlib", "flax", "optax")


def environment_info() -> dict[str, str | None]:
    """Package versions (None for one not installed), Python, platform, JAX backend and devices."""
    info: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            info[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            info[name] = None
    info["python"] = platform.python_version()
    info["platform"] = platform.platform()
    info["backend"] = jax.default_backend()
    info["devices"] = ", ".join(sorted({d.device_kind for d in jax.devices()}))
    return info


@functools.lru_cache(maxsize=None)
def result_versions() -> tuple[tuple[str, str | None], ...]:
    """(package, version) of RESULT_PACKAGES in this process; cached (installed
    versions do not change while a process runs)."""
    versions = []
    for name in RESULT_PACKAGES:
        try:
            versions.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            versions.append((name, None))
    return tuple(versions)


def stale_versions(recorded: dict) -> str | None:
    """None when ``recorded`` (a results file's versions) agrees with this process
    on every RESULT_PACKAGE it names; otherwise one phrase naming the differences.
    A package the file does not name is not held against it."""
    differ = [
        f"{name} {recorded[name]} (now {now})"
        for name, now in result_versions()
        if name in recorded and recorded[name] != now
    ]
    return ", ".join(differ) or None
