"""Counting XLA compilations in a test (JAX's monitoring events); shared by the
compile-once tests of several packages."""

from __future__ import annotations

import contextlib

import jax

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def count_compilations():
    """Yields a list that gets one entry per XLA backend compilation inside the block."""
    seen: list[float] = []

    def listener(event: str, duration: float, **kwargs) -> None:
        if event == BACKEND_COMPILE:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
