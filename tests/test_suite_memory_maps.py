"""Why the whole suite can run in one process (tests/conftest.py).

Every live XLA:CPU executable holds memory mappings of its own, and JAX keeps
every program it compiled. In one process the suite reached Linux's default
vm.max_map_count (65530 mappings) and the next compilation crashed with SIGSEGV
("LLVM compilation error: Cannot allocate memory", then a segfault inside
backend_compile_and_load). conftest.py calls jax.clear_caches() after each test
module; this checks the premise that this gives the mappings back.
"""

import os

import jax
import jax.numpy as jnp
import pytest

MAPS = "/proc/self/maps"


def mapping_count() -> int:
    with open(MAPS) as maps:
        return sum(1 for _ in maps)


@pytest.mark.skipif(not os.path.exists(MAPS), reason="needs Linux's /proc/self/maps")
def test_clear_caches_gives_back_the_mappings_of_live_compiled_programs():
    x = jnp.ones(4)
    jax.block_until_ready(x)
    jax.clear_caches()
    before = mapping_count()
    # Distinct programs, all kept referenced, as the library's cached builders keep theirs.
    programs = [jax.jit(lambda v, i=i: jnp.sin(v * (i + 1.0)).sum()) for i in range(40)]
    for program in programs:
        jax.block_until_ready(program(x))
    with_programs = mapping_count()
    jax.clear_caches()
    after = mapping_count()
    assert after <= before + 5, (before, with_programs, after)
    # The programs still work after their executables were dropped (recompiled).
    assert float(programs[3](x)) == pytest.approx(float(jnp.sin(x * 4.0).sum()))
