"""Shared fixtures. JAX runs on the CPU here; keep problem sizes small."""

import jax
import pytest


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
