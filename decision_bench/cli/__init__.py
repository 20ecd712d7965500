"""The ``decision-bench`` command line: ``main`` and one module per subcommand
(reproduce, testbed, bandit, analyze, tune); see ``decision_bench.cli.program``."""

from decision_bench.cli.program import build_parser, main

__all__ = ["build_parser", "main"]
