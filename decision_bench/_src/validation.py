"""Argument checks shared by the public constructors.

Every check raises ValueError naming the parameter, the value received and what
is accepted, so that a bad sweep fails before any compilation starts.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable


def repeated(values: Iterable[Any]) -> list:
    """The values that occur more than once, sorted: what every "give each ... once"
    check refuses (a name or setting given twice would run or be written twice)."""
    values = list(values)
    return sorted({v for v in values if values.count(v) > 1})


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not is_integral(value):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def is_integral(value: Any) -> bool:
    try:
        import numpy as np

        return isinstance(value, np.integer)
    except ImportError:  # pragma: no cover - numpy is a base dependency
        return False


def check_positive(name: str, value: Any) -> float:
    return _check_number(name, value, "> 0", lambda number: number > 0)


def check_nonnegative(name: str, value: Any) -> float:
    return _check_number(name, value, ">= 0", lambda number: number >= 0)


def check_finite(name: str, value: Any) -> float:
    return _check_number(name, value, "", lambda number: True)


def _check_number(name: str, value: Any, bound: str, accepts: Callable[[float], bool]) -> float:
    """float(value) when it is a finite number that ``accepts``; else one line naming
    ``name`` and the ``bound`` it must meet ("" for none)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan  # not a number: refused below, with the value as given
    if not math.isfinite(number) or not accepts(number):
        raise ValueError(f"{name} must be a finite number{' ' + bound if bound else ''}, got {value!r}")
    return number


def check_seed_list(seeds: Any) -> tuple[int, ...]:
    """Seeds 0..n-1 for a count n >= 1, or the given seeds: distinct integers >= 0."""
    if isinstance(seeds, int) and not isinstance(seeds, bool) or is_integral(seeds):
        return tuple(range(check_int("seeds", seeds, 1)))
    values = tuple(check_int("seeds", s, 0) for s in seeds)
    if not values or len(set(values)) != len(values):
        raise ValueError(f"seeds must be a count >= 1 or distinct integers >= 0, got {seeds!r}")
    return values


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    choices = sorted(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_sizes(name: str, value: Any) -> tuple[int, ...]:
    try:
        sizes = tuple(value)
    except TypeError:
        raise ValueError(
            f"{name} must be a non-empty sequence of positive integers, got {value!r}"
        ) from None
    if not sizes or any(
        isinstance(s, bool) or not (isinstance(s, int) or is_integral(s)) or s < 1 for s in sizes
    ):
        raise ValueError(f"{name} must be a non-empty sequence of positive integers, got {value!r}")
    return tuple(int(s) for s in sizes)


def check_optional_int(name: str, value: Any, minimum: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or is_integral(value)) or value < minimum:
        raise ValueError(f"{name} must be None or an integer >= {minimum}, got {value!r}")
    return int(value)


def user_code_error(path: Any, error: BaseException, doing: str) -> str:
    """One line for an exception raised by a user's Python file: the file, the line
    in it where the error arose (the deepest frame in that file; a syntax error's
    own line) and the error, e.g. ``agent_file 'my.py' line 7 (importing it):
    NameError: name 'jnp' is not defined``."""
    import os  # noqa: PLC0415 - only this helper needs it

    target = os.path.realpath(os.fspath(path))
    line = None
    if isinstance(error, SyntaxError) and error.filename and os.path.realpath(error.filename) == target:
        line = error.lineno
    trace = error.__traceback__
    while trace is not None:
        if os.path.realpath(trace.tb_frame.f_code.co_filename) == target:
            line = trace.tb_lineno
        trace = trace.tb_next
    where = f" line {line}" if line is not None else ""
    text = str(error).strip().splitlines()
    detail = f": {text[0]}" if text else ""
    if isinstance(error, SystemExit):
        detail = f": the file called sys.exit({error.code!r}); an agent file must not end the program"
    return f"agent_file {os.fspath(path)!r}{where} ({doing}): {type(error).__name__}{detail}"


def reporting_user_errors(path: Any, function: Any, doing: str) -> Any:
    """``function`` (from a user's file at ``path``) with any exception it raises
    turned into a ValueError whose one line is :func:`user_code_error`'s."""

    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (Exception, SystemExit) as error:  # noqa: BLE001 - the user's code: any error, one line
            # SystemExit too (F16): a sys.exit() in the user's code ended the command with
            # its status (0: "success" with nothing written).
            raise ValueError(user_code_error(path, error, doing)) from None

    return call


# JAX turns a seed into a key through a signed 64-bit integer.
MAX_SEED = 2**63 - 1


def check_seed(name: str, value: Any) -> int:
    """An integer seed in [0, 2**63 - 1]: non-negative as gymnasium requires, and
    within the signed 64-bit integer ``jax.random.key`` converts it to (a larger
    one overflowed inside JAX)."""
    if isinstance(value, bool) or not (isinstance(value, int) or is_integral(value)) or not 0 <= value <= MAX_SEED:
        raise ValueError(f"{name} must be an integer in [0, 2**63 - 1], got {value!r}")
    return int(value)
