"""Every compatibility shim of the public API, in one place, each with the version
that removes it (optax keeps its own in ``_src/deprecations.py`` the same way).

Internal code uses the current names only; what is here serves users' code written
against an older release. Each shim warns with a ``DeprecationWarning`` that names
the current spelling and the removal version, and then does exactly what the
current spelling does, so no result changes while a user migrates.

The shims, by where a user meets them:

- ``agents.core.hyperparameters_of`` / ``with_hyperparameters``: renamed to
  ``hyper_of`` / ``with_hyper`` (``RENAMED``).
- ``agents.mlp.check_common``, ``cross_entropy``, ``sum_of_squares``, ``MLP``:
  re-exported from ``agents/_src`` for code written before it held them (``MOVED``).
- ``Agent._replace``: the copy method of the NamedTuple the record was before it
  became a pytree dataclass; now ``Agent.replace`` (``method_alias``).
- An agent function written in the pre-0.2 argument order (``init(key, spec)``,
  ``update(state, batch, key)``, ``sample_logits(state, key, x)``) is refused with a
  ValueError naming the key-first order, rather than run with its arguments
  swapped (``refuse_pre_0_2_order``; it raises rather than warns, because running
  it would give wrong numbers).
- ``run_bandit``'s loop settings as keywords (``policy=``, ``batch_size=``, ...):
  now one ``BanditLoopConfig`` (``config_from_keywords``).

This module imports nothing from the package (it sits below every module that
uses it): home modules resolve the names, the shims only map and warn.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import warnings
from typing import Any, Callable, Mapping

# The release that removes every shim below.
REMOVAL_VERSION = "0.4"

# Old attribute name -> current name, per module (the object is the module's own).
RENAMED: dict[str, dict[str, str]] = {
    "decision_bench.agents.core": {
        "hyperparameters_of": "hyper_of",
        "with_hyperparameters": "with_hyper",
    },
}

# Attribute name -> the module that holds it now, per module that re-exported it.
MOVED: dict[str, dict[str, str]] = {
    "decision_bench.agents.mlp": {
        "MLP": "decision_bench.agents._src.networks",
        "check_common": "decision_bench.agents._src.checks",
        "cross_entropy": "decision_bench.agents._src.losses",
        "sum_of_squares": "decision_bench.agents._src.losses",
    },
}


def warn(old: str, new: str, *, stacklevel: int = 3) -> None:
    """One DeprecationWarning: ``old`` is deprecated, use ``new``; removed in
    ``REMOVAL_VERSION``. stacklevel 3 points at the caller of the shim's caller."""
    warnings.warn(
        f"{old} is deprecated and will be removed in decision_bench {REMOVAL_VERSION}; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def module_getattr(module: str) -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562) serving its deprecated names from
    ``RENAMED`` and ``MOVED`` with a warning; any other missing name is the usual
    AttributeError. Installed as ``__getattr__ = module_getattr(__name__)``."""
    renamed = RENAMED.get(module, {})
    moved = MOVED.get(module, {})

    def __getattr__(name: str) -> Any:
        if name in renamed:
            warn(f"{module}.{name}", f"{module}.{renamed[name]}")
            return getattr(sys.modules[module], renamed[name])
        if name in moved:
            warn(f"{module}.{name}", f"{moved[name]}.{name}")
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def method_alias(owner: str, old: str, new: str) -> Callable[..., Any]:
    """A method ``old`` that warns and calls the current method ``new`` of the same
    object with the same arguments (``Agent._replace`` -> ``Agent.replace``)."""

    def alias(self: Any, *args: Any, **kwargs: Any) -> Any:
        warn(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)(*args, **kwargs)

    alias.__name__ = old
    alias.__doc__ = f"Deprecated alias of ``{new}`` (removed in {REMOVAL_VERSION})."
    return alias


# The first parameter names of a state-first function of the pre-0.2 order.
_OLD_FIRST_NAMES = ("state", "params")


def refuse_pre_0_2_order(field: str, fn: Any, key_first_order: str) -> None:
    """Raises ValueError when a user's plain function for ``Agent.<field>`` clearly
    follows the pre-0.2 order (``init(key, spec)``: two required positional
    parameters; ``update`` / ``sample_logits`` whose first parameter is ``state`` or
    ``params``), which would otherwise run with its arguments swapped.
    key_first_order: the current order, named in the error (e.g. "(key, state, x)").
    Callables whose signature cannot be read are not checked."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    got = None
    if field == "init":
        required = [p for p in positional if p.default is p.empty]
        if len(required) == 2:
            got = f"a function with 2 required positional parameters {tuple(p.name for p in required)}"
    elif positional and positional[0].name in _OLD_FIRST_NAMES:
        got = f"a function whose first parameter is {positional[0].name!r}"
    if got is not None:
        raise ValueError(f"Agent.{field} takes {key_first_order} since decision_bench 0.2 (key first); got {got}")


def config_from_keywords(where: str, config_class: type, config: Any, keywords: Mapping[str, Any]) -> Any:
    """The config a call of ``where`` gets when it was given some of the fields of
    ``config_class`` as keywords (the spelling before the config object): ``config``
    (default: the class's defaults) with those fields replaced, after one
    DeprecationWarning naming them. A keyword that is no field is the TypeError an
    unknown keyword argument gives."""
    fields = [field.name for field in dataclasses.fields(config_class)]
    unknown = sorted(set(keywords) - set(fields))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if not keywords:
        return config
    given = ", ".join(f"{name}={keywords[name]!r}" for name in sorted(keywords))
    current = (
        f"{config_class.__name__}({given})" if config is None else f"dataclasses.replace(config, {given})"
    )
    warn(f"passing {given} to {where}() as keywords", f"{where}(..., config={current})", stacklevel=4)
    return dataclasses.replace(config if config is not None else config_class(), **keywords)
