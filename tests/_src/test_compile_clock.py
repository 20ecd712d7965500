import jax
import jax.numpy as jnp
import pytest

from decision_bench._src.compile_clock import compile_clock


def _listeners() -> int:
    # jax.monitoring has no public way to list listeners.
    from jax._src import monitoring

    return len(monitoring.get_event_duration_listeners())


def test_counts_the_compilations_of_the_block_and_leaves_no_listener():
    x = jax.block_until_ready(jnp.ones(3))
    before = _listeners()
    with compile_clock() as clock:
        assert _listeners() == before + 1
        jax.block_until_ready(jax.jit(lambda v: v * 3.0 + 1.0)(x))
    assert clock.count == 1 and clock.seconds > 0.0
    assert _listeners() == before
    jax.block_until_ready(jax.jit(lambda v: v - 7.0)(x))  # after the block: not counted
    assert clock.count == 1


def test_a_cached_call_compiles_nothing_and_an_error_still_removes_the_listener():
    f = jax.jit(lambda x: x * 5.0)
    f(jnp.ones(2))
    with compile_clock() as clock:
        f(jnp.ones(2))
    assert clock.count == 0 and clock.seconds == 0.0
    before = _listeners()
    with pytest.raises(RuntimeError), compile_clock():
        raise RuntimeError("inside")
    assert _listeners() == before
