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


# The vector extensions that change how XLA:CPU compiles a program (which kernels, which
# polynomial for exp and log, fused multiply-adds): two machines that differ in them may
# round the same program differently. Measured: paper2d rows stored on one 2-core AMD EPYC
# and recomputed on another (avx2 and fma, no avx512) differ by up to 1.8e-6 relative in d_KL,
# and a d = 2 bandit's per-step regret, a difference of two close probabilities, by 3e-4.
_ISA_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "amx_tile", "amx_bf16", "asimd", "sve")


@functools.lru_cache(maxsize=None)
def cpu_signature() -> str:
    """This machine's CPU as far as it decides float rounding: the model name and the
    family and model numbers, and the vector extensions of ``_ISA_FLAGS`` and every avx512
    one ("AMD EPYC; cpu family 25 model 1; avx avx2 fma ..."); the processor name alone where
    /proc/cpuinfo is not readable."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())  # the first processor's
    except OSError:
        pass
    name = fields.get("model name") or fields.get("CPU part") or platform.processor() or platform.machine()
    # LLVM tunes its code to the family and model (znver3 or znver4 under one "AMD EPYC").
    model = " ".join(f"{key} {fields[key]}" for key in ("cpu family", "model") if key in fields)
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    isa = sorted(f for f in flags if f in _ISA_FLAGS or f.startswith("avx512"))
    return "; ".join(part for part in (name, model, " ".join(isa)) if part)


def same_cpu(recorded: dict) -> bool | None:
    """Whether a results record (``environment_info``) was made on a CPU of this one's
    ``cpu_signature``; None for records from before the CPU was recorded (unknown)."""
    cpu = recorded.get("cpu")
    return None if cpu is None else cpu == cpu_signature()


def environment_info() -> dict[str, str | None]:
    """Package versions (None for one not installed), Python, platform, the CPU
    (``cpu_signature``), JAX backend and devices."""
    info: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            info[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            info[name] = None
    info["python"] = platform.python_version()
    info["platform"] = platform.platform()
    info["cpu"] = cpu_signature()
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
