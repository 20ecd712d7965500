"""Optional dependencies (the package's extras): is one installed, and the one-line
error or note when it is not.

``pip install decision-bench`` alone must run every command: a missing extra either
degrades the command (no figures without ``plot``) or ends it with one line naming
the extra to install (a data set that ships with scikit-learn without ``data``).
The checks use ``importlib.util.find_spec`` and import nothing, so asking costs no
import time and a module blocked with ``sys.modules[name] = None`` (how the tests
simulate a missing extra) reads as missing.
"""

from __future__ import annotations

import importlib.util

# extra name -> (the top-level module it provides, its distribution's name); see
# pyproject.toml's [project.optional-dependencies].
EXTRA_MODULES = {
    "plot": ("matplotlib", "matplotlib"),
    "data": ("sklearn", "scikit-learn"),
    "bayes": ("blackjax", "blackjax"),
    "ray": ("ray", "Ray"),
}

# What `bandit`, `analyze` and `reproduce` print (once) when matplotlib is missing.
FIGURES_SKIPPED = "figures skipped: install decision-bench[plot]"


class MissingExtraError(ImportError):
    """An optional dependency a command needs is not installed. The message is one
    line naming the extra; the command line prints it and exits with status 2."""


def has_module(module: str) -> bool:
    """True if the top-level ``module`` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


def has_extra(extra: str) -> bool:
    """True if the module the ``extra`` provides is installed."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"extra must be one of {sorted(EXTRA_MODULES)}, got {extra!r}")
    return has_module(EXTRA_MODULES[extra][0])


def require_extra(extra: str, purpose: str) -> None:
    """Raises MissingExtraError, ``"<purpose> needs <package>: pip install
    'decision-bench[<extra>]'"``, unless the extra's module is installed."""
    if not has_extra(extra):
        raise MissingExtraError(
            f"{purpose} needs {EXTRA_MODULES[extra][1]}: pip install 'decision-bench[{extra}]'"
        )


def plotting_available() -> bool:
    """True if figures can be drawn (matplotlib, the ``plot`` extra, is installed)."""
    return has_extra("plot")
