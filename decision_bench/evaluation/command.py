"""``decision-bench testbed``: fit and evaluate agents on a testbed sweep.

    decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out DIR

writes DIR/testbed.csv (one row per agent, problem, design and seed; columns as
``run_testbed``) and DIR/testbed.json (package versions and the arguments),
shows progress, and prints mean d_KL per agent and design normalised to mlp
(as paper 000, Fig. 2) when mlp is among the agents.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from decision_bench.evaluation.kl import METHODS
from decision_bench.evaluation.runner import run_testbed
from decision_bench.evaluation.sweeps import SWEEP_NAMES

BASELINE = "mlp"


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``testbed`` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "testbed",
        help="offline d_KL of marginal and joint predictions on a testbed sweep",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--agents", default="mlp", help="comma-separated agent names (default: mlp)")
    parser.add_argument("--sweep", default="quick", choices=SWEEP_NAMES, help="named sweep (default: quick)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the sweep's)")
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--num-test", type=int, default=1000, help="test tau-samples per problem")
    parser.add_argument("--num-models", type=int, default=1000, help="agent draws per estimate")
    parser.add_argument("--method", default="auto", choices=METHODS, help="likelihood estimator")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=main)
    return parser


def summary_table(frame: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Mean d_KL per agent (rows) and design (columns); divided by the baseline's
    when it is present (a NaN kl makes its cell NaN rather than vanishing)."""
    design = frame["tau"].astype(str).radd("d_KL^") + frame["kappa"].map(
        lambda k: "" if pd.isna(k) else f",kappa={int(k)}"
    )
    means = frame.assign(design=design).groupby(["agent", "design"], sort=False)["kl"].mean(
        numeric_only=False
    ).unstack("design")
    if baseline in means.index:
        means = means / means.loc[baseline]
    return means


def _write_atomic(path: Path, text: str) -> None:
    # Write then rename, so an interrupted run never leaves a half-written file.
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame = run_testbed(
        args.agents,
        args.sweep,
        args.seeds,
        num_test=args.num_test,
        num_models=args.num_models,
        method=args.method,
        progress=not args.no_progress,
    )
    _write_atomic(out / "testbed.csv", frame.to_csv(index=False))
    meta = {
        "versions": frame.attrs["versions"],
        "sweep": frame.attrs["sweep"],
        "seeds": frame.attrs["seeds"],
        "agents": args.agents,
        "num_test": args.num_test,
        "num_models": args.num_models,
        "method": args.method,
    }
    _write_atomic(out / "testbed.json", json.dumps(meta, indent=2) + "\n")
    table = summary_table(frame)
    normalised = BASELINE in table.index
    title = f"mean d_KL, normalised to {BASELINE}" if normalised else "mean d_KL"
    print(f"{title} ({len(frame)} rows, sweep {args.sweep}):")
    print(table.round(3).to_string())
    bad = frame[~frame["params_finite"] | (frame["fraction_finite"] < 1.0)]
    if len(bad):
        print(f"note: {len(bad)} rows had non-finite parameters or per-sample estimates; "
              "see columns params_finite and fraction_finite")
    print(f"wrote {out / 'testbed.csv'}")
    return 0
