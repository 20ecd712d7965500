"""The ``decision-bench`` command.

Subcommands:
  reproduce  testbed + bandit + analysis in one resumable run (presets demo | quick | paper)
  testbed    offline d_KL of marginal and joint predictions for agents on a sweep
  bandit     Thompson-sampling regret of agents on a neural or Bernoulli bandit
  analyze    correlations of d_KL with regret, figures and a report from a run directory
  demo       what ``make demo`` runs: ``reproduce --preset demo``
"""

from __future__ import annotations

import argparse
import sys
import warnings

from decision_bench._src import console


def build_parser() -> argparse.ArgumentParser:
    from decision_bench import __version__, bandit_command, reproduce
    from decision_bench.analysis import command as analysis_command
    from decision_bench.evaluation import command as testbed_command

    parser = argparse.ArgumentParser(
        prog="decision-bench",
        description="Neural-bandit environments, epistemic agents and joint-prediction evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"decision-bench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    reproduce.register(sub)
    testbed_command.register(sub)
    bandit_command.register(sub)
    analysis_command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one subcommand; returns the exit status (0, 2 for bad input).

    Called as the ``decision-bench`` program (argv None), it also installs the
    interrupt exit (Ctrl-C ends at once with 130, see ``_src/console.py``); called
    from Python with an argv list, signals are left to the caller.
    """
    if argv is None:
        console.install_interrupt_exit()
    # Restored on return, so a call from Python leaves the caller's warning setup alone.
    with warnings.catch_warnings():
        console.install_warning_printer()
        return _run(build_parser().parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"\n{console.INTERRUPTED}", file=sys.stderr)
        return 130
    except ValueError as error:
        # Bad input: a clear message without a traceback.
        console.print_error(str(error))
        return 2


if __name__ == "__main__":
    sys.exit(main())
