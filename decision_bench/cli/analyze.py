"""The `decision-bench analyze DIR` subcommand.

`register(subparsers)` adds it to the CLI's argparse subparsers; the parsed
arguments' `func(args) -> int` runs it and returns the exit status.
"""

from __future__ import annotations

import argparse

import pandas as pd

from decision_bench._src.console import print_error
from decision_bench._src.extras import FIGURES_SKIPPED
from decision_bench.analysis.correlation import SKEWED_NOTE, excludes_estimate
from decision_bench.analysis.pipeline import analyze
from decision_bench.cli.arguments import RESAMPLES_HELP, add_command, parse_resamples

__all__ = ["print_robustness", "print_skewed_intervals", "register", "run"]


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def register(subparsers) -> argparse.ArgumentParser:
    """Adds `analyze` to `subparsers` (from ArgumentParser.add_subparsers())."""
    parser = add_command(
        subparsers, "analyze", "correlate testbed d_KL with bandit regret; write figures and report.md",
        (
            "Reads DIR/testbed.csv and DIR/bandit.csv and writes DIR/correlations.csv, "
            "DIR/joined.csv, the figures (PNG and PDF) and DIR/report.md. Both files are checked "
            "before anything is written; see the README for their required columns. Results of several "
            "generative families (columns activation, hidden_sizes) or bandit input dimensions also get "
            "DIR/robustness_summary.csv, DIR/robustness_matrices.csv, heat maps, DIR/regret_by_dimension.csv "
            "and a robustness section in the report."
        ),
    )
    parser.add_argument("directory", metavar="DIR", help="results directory")
    parser.add_argument("--resamples", default=1000, metavar="N", help=RESAMPLES_HELP)
    parser.add_argument("--seed", type=_nonnegative_int, default=0, metavar="S", help="bootstrap seed")
    parser.set_defaults(func=run)
    return parser


def print_skewed_intervals(correlations: pd.DataFrame) -> None:
    """A line under the printed table for each interval that excludes its own estimate."""
    for _, row in correlations.iterrows():
        for stat, low, high in (("pearson_log", "pearson_ci_low", "pearson_ci_high"),
                                ("spearman", "spearman_ci_low", "spearman_ci_high")):  # fmt: skip
            if excludes_estimate(row[stat], row[low], row[high]):
                print(f"note: {row.get('level', '')} {row['metric']} {stat}: {SKEWED_NOTE} (see report.md)")


def print_robustness(result) -> None:
    """The robustness lines (mean off-diagonal correlation per group, metric, method), if any."""
    robust = getattr(result, "robustness", None)
    if robust is None or robust.summary.empty:
        return
    cols = ["group", "metric", "method", "mean", "mean_low", "mean_high", "num_models", "num_agents"]
    print("\nrobustness across generative models (mean off-diagonal correlation, 90% interval):")
    with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 120):
        print(robust.summary[cols].to_string(index=False))
    if not robust.by_dimension.empty:
        print("\nregret vs d_KL by bandit input dimension (agent points):")
        by_dim = robust.by_dimension[["input_dim", "metric", "pearson_log", "pearson_ci_low", "pearson_ci_high", "spearman", "n"]]
        with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 120):
            print(by_dim.to_string(index=False))


def run(args: argparse.Namespace) -> int:
    """Runs the analysis; prints the correlations and the written paths.

    Returns 0, or 2 on bad input (a missing file, or a malformed or out-of-range
    value: see decision_bench.analysis.inputs) after printing one line
    ``decision-bench: error: <message>``, the form every subcommand uses.
    """
    # Imported here so `decision-bench --help` does not pay for pandas/scipy.

    try:
        resamples = parse_resamples(args.resamples)
        result = analyze(args.directory, num_resamples=resamples, seed=args.seed)
    except (FileNotFoundError, ValueError) as err:
        print_error(str(err))
        return 2
    if result.correlations.empty:
        print("testbed results only (no bandit.csv): no correlation with regret")
    else:
        print(result.correlations.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print_skewed_intervals(result.correlations)
    print_robustness(result)
    print(f"report: {result.report}")
    for path in result.figures:
        print(f"figure: {path}")
    if result.figures_skipped:
        print(FIGURES_SKIPPED)
    return 0
