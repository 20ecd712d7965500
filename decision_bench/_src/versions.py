"""The one record of what produced a result: package versions, Python, platform, JAX backend."""

from __future__ import annotations

import importlib.metadata
import platform

import jax

# The packages whose versions can change results (JAX changes its random streams
# between minor releases); every results file and cell records them.
PACKAGES = ("decision-bench", "jax", "jaxlib", "flax", "optax", "numpy", "pandas")


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
