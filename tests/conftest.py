"""Shared fixtures. JAX runs on the CPU here; keep problem sizes small."""

import importlib.util
import os
import platform
from pathlib import Path


def _avx2() -> bool:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return any(line.startswith("flags") and " avx2" in line for line in cpuinfo)
    except OSError:
        return False


# JAX's CPU linear algebra (Cholesky and triangular solves: laplace and
# deep_kernel) calls the OpenBLAS that SciPy ships, and OpenBLAS picks its kernels
# by processor when it loads: on an AVX-512 machine (its "SkylakeX" kernels) those
# agents' draws differ in the last bits (up to about 1e-6) from an AVX2 machine's,
# and the bit-for-bit golden outputs (tests/agents/test_same_results.py, written on
# an AVX2 machine) fail although no code changed. Every x86-64 processor with AVX2
# runs the "Haswell" kernels, so the tests pin them, before jax loads OpenBLAS; the
# worker processes and the subprocesses tests start inherit it. A value set by the
# caller is kept.
if platform.machine().lower() in ("x86_64", "amd64") and _avx2():
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")

import jax  # noqa: E402  (after OPENBLAS_CORETYPE)
import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Frees every compiled XLA program once a test module is done.

    Each live XLA:CPU executable holds about three memory mappings (code, data),
    and JAX keeps every executable it compiled (jit caches, eager ops). The whole
    suite in one process reached Linux's default vm.max_map_count (65530) and XLA
    then crashed with SIGSEGV instead of an error ("LLVM compilation error: Cannot
    allocate memory"; tests/test_suite_memory_maps.py has the mechanism).
    jax.clear_caches() drops the executables and their mappings; programs a later
    module needs again are recompiled.
    """
    yield
    jax.clear_caches()


@pytest.fixture
def key():
    return jax.random.key(0)


def _load_script(name: str):
    """scripts/<name>.py as a module (the scripts are not a package)."""
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_script():
    """load_script(name) -> the module scripts/<name>.py, for tests of the scripts."""
    return _load_script
