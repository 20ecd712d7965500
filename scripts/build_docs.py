"""Builds the API reference from the docstrings with pdoc (the `docs` extra).

    python scripts/build_docs.py [--out docs/api]

Renders the public modules (each package's ``__all__``) as HTML into OUT and
exits with status 1, listing them, if pdoc warned about anything (an annotation it
cannot resolve, a docstring it cannot parse, a module named twice): the reference
must build without warnings. ``make docs`` runs it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

# The documented API, top-down (decision_bench's own __all__ brings priors and the
# top-level helpers; the private _src package is left out by its name).
MODULES = (
    "decision_bench",
    "decision_bench.specs",
    "decision_bench.envs",
    "decision_bench.agents",
    "decision_bench.bandit",
    "decision_bench.evaluation",
    "decision_bench.evaluation.tune",
    "decision_bench.data",
    "decision_bench.experiments",
    "decision_bench.analysis",
    "decision_bench.cli",
)


def build(out: Path, modules: tuple[str, ...] = MODULES) -> list[str]:
    """Writes the HTML reference of ``modules`` into ``out``; returns pdoc's warnings
    (empty when clean)."""
    try:
        import pdoc
        import pdoc.render
    except ImportError:
        raise SystemExit("the API reference needs pdoc: pip install 'decision-bench[docs]'") from None
    # The docstrings are Google style (Args:, Returns:, Raises:).
    pdoc.render.configure(docformat="google", show_source=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules, output_directory=Path(out))
    # pdoc reports its problems as UserWarnings; libraries' deprecation notes
    # raised while importing the package are not about our docstrings.
    return [str(w.message) for w in caught if w.category is UserWarning]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/api"), help="output folder (default: docs/api)")
    args = parser.parse_args(argv)
    problems = build(args.out)
    for message in problems:
        print(f"pdoc warning: {message}", file=sys.stderr)
    if problems:
        print(f"API reference: {len(problems)} warning(s); fix the docstrings or annotations named above", file=sys.stderr)
        return 1
    print(f"API reference written to {args.out}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
