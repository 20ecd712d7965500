"""The ``decision-bench`` command: one module per subcommand in this package.

Subcommands:
  reproduce  testbed + bandit + analysis in one resumable run (presets demo | quick | paper)
  testbed    offline d_KL of marginal and joint predictions for agents on a sweep
  bandit     Thompson-sampling regret of agents on a neural or Bernoulli bandit
  analyze    correlations of d_KL with regret, figures and a report from a run directory
  demo       what ``make demo`` runs: ``reproduce --preset demo``
  tune       a grid of an agent's real-valued hyperparameters as one vmapped program
  leaderboard  your agents against the stored core agents on the very same problems
  store-baselines  finished runs as a baselines set that leaderboard --baselines reads

Run as a program, the command keeps compiled XLA programs in a persistent cache
(``_src/compile_cache.py``), so a second run of the same command loads them
instead of compiling; ``--no-compile-cache`` (before or after the subcommand) or
``DECISION_BENCH_CACHE_DIR=off`` turns it off for a run.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from decision_bench._src import compile_cache, console, devices
from decision_bench._src.extras import MissingExtraError

NO_CACHE_HELP = (
    "do not read or write the persistent XLA compilation cache (default: on, in "
    f"${compile_cache.ENV_VAR}, else $XDG_CACHE_HOME/decision-bench/xla or "
    f"~/.cache/decision-bench/xla; {compile_cache.ENV_VAR}=off also turns it off; deleting the "
    "directory is always safe)"
)


def build_parser() -> argparse.ArgumentParser:
    # Imported here, after main() has installed the interrupt exit: importing JAX
    # and every agent family takes seconds, and Ctrl-C during it must end cleanly.
    from decision_bench import __version__
    from decision_bench.cli import analyze, bandit, leaderboard, reproduce, store_baselines, testbed, tune

    parser = argparse.ArgumentParser(
        prog="decision-bench",
        description="Neural-bandit environments, epistemic agents and joint-prediction evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"decision-bench {__version__}")
    parser.add_argument("--no-compile-cache", action="store_true", help=NO_CACHE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in (reproduce, testbed, bandit, analyze, tune, leaderboard, store_baselines):
        command.register(sub)
    # Also accepted after the subcommand. SUPPRESS: a subcommand that was not
    # given the flag must not reset the value parsed before it.
    for subparser in {id(p): p for p in sub.choices.values()}.values():
        subparser.add_argument(
            "--no-compile-cache", action="store_true", default=argparse.SUPPRESS, help=NO_CACHE_HELP
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one subcommand; returns the exit status (0, 2 for bad input, 1 for a
    failure during the run such as a worker that died).

    Called as the ``decision-bench`` program (argv None), it also installs the
    interrupt exit (Ctrl-C ends at once with 130, see ``_src/console.py``), makes
    the CPU one JAX device per core so that seeds run on every core
    (``_src/devices.py``) and, unless ``--no-compile-cache``, installs JAX's
    persistent compilation cache (``_src/compile_cache.py``). Called from Python
    with an argv list, signals and JAX's settings are process-wide state left to
    the caller (who may call ``use_cpu_cores`` or ``enable_compile_cache`` itself).
    """
    if argv is None:
        console.install_interrupt_exit()
    # Restored on return, so a call from Python leaves the caller's warning setup alone.
    with warnings.catch_warnings():
        console.install_warning_printer()
        args = build_parser().parse_args(argv)
        if argv is None:
            # Before the first computation (JAX reads it once): one CPU device per
            # core, so a run's seeds spread over every core (_src/devices.py).
            devices.use_cpu_cores()
        if argv is None and not args.no_compile_cache:
            # Before the subcommand compiles anything: JAX reads the setting once.
            compile_cache.enable_compile_cache()
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from decision_bench.cli.arguments import check_path_options

    # I07: analyze computes no cells, so "resume" would promise what it does not do. Set
    # for every command: a process (a test, a notebook) may run several in turn.
    analysis = getattr(args, "command", None) == "analyze"
    console.set_interrupt_line(console.INTERRUPTED_ANALYSIS if analysis else console.INTERRUPTED)
    try:
        check_path_options(args)  # before the command: no default or '.' stands in for ''
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"\n{console.interrupt_line()}", file=sys.stderr)
        return 130
    except (ValueError, MissingExtraError) as error:
        # Bad input, or input that needs an extra that is not installed (a data set
        # bundled with scikit-learn): a clear message without a traceback.
        console.print_error(str(error))
        return 2
    except OSError as error:
        # The disk is full, a folder stands where a file should be, ...: one line
        # naming the path (finished cells and chunks are saved).
        console.print_error(console.os_error_line(error))
        if isinstance(error, BrokenPipeError):
            # Python's own flush of the closed stdout at exit would fail a second time.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except console.RunFailed as error:
        # A failure during the run (a worker that died): one line saying what is saved.
        console.print_error(str(error))
        return 1
    except MemoryError:
        console.print_error(console.OUT_OF_MEMORY)
        return 1
    except RuntimeError as error:
        from decision_bench.agents.host_agent import host_error_line  # noqa: PLC0415

        line = host_error_line(error)
        if line is not None:
            # A host agent's own code failed inside a callback (agents/host_agent.py): its one line.
            console.print_error(line)
            return 1
        # XLA's allocator failing (jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED).
        if "RESOURCE_EXHAUSTED" not in str(error):
            raise
        console.print_error(f"{console.OUT_OF_MEMORY} ({str(error).splitlines()[0][:200]})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
