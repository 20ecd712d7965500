"""The ``decision-bench`` program's entry point (``[project.scripts]`` in pyproject.toml).

A module of its own, outside the ``decision_bench`` package, because importing
anything inside the package first runs ``decision_bench/__init__.py``, which
imports JAX, flax and every agent family: seconds during which a Ctrl-C used to
print a long traceback, or land in one of JAX's callbacks that swallow it
("Exception ignored in ...") and let the command run on. Here the interrupt exit
of ``decision_bench/_src/console.py`` is installed before that import, from the
file itself (located without executing the package), so a signal at any moment
ends the process with 130 / 143 and one line.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _install_interrupt_exit() -> None:
    package = importlib.util.find_spec("decision_bench")  # finds; does not import
    if package is None or not package.submodule_search_locations:
        return  # not installed: the import below fails with Python's own message
    path = Path(list(package.submodule_search_locations)[0]) / "_src" / "console.py"
    spec = importlib.util.spec_from_file_location("_decision_bench_early_console", path)
    console = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(console)  # standard library imports only
    console.install_interrupt_exit()


def main() -> int:
    _install_interrupt_exit()
    from decision_bench.cli.program import main as run  # noqa: PLC0415 - after the handler

    return run()


if __name__ == "__main__":
    sys.exit(main())
