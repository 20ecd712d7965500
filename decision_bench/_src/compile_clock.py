"""Seconds XLA spends compiling inside a ``with`` block, read from JAX's monitoring events."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

import jax

# The event JAX records once per backend compilation, with its duration.
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@dataclasses.dataclass
class CompileClock:
    """What compiled while the clock was open: total seconds and number of programs."""

    seconds: float = 0.0
    count: int = 0


@contextlib.contextmanager
def compile_clock() -> Iterator[CompileClock]:
    """Counts the compilations of the block: ``with compile_clock() as clock: ...``.

    JAX's listeners are process-wide, so the listener lives only as long as the
    block: nothing stays registered once it ends, even when it raises. A
    compilation on another thread during the block is counted too.
    """
    clock = CompileClock()

    def listen(event: str, duration: float, **kwargs: Any) -> None:
        if event == COMPILE_EVENT:
            clock.seconds += duration
            clock.count += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield clock
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
