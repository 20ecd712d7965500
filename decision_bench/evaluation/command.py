"""``decision-bench testbed``: fit and evaluate agents on a testbed sweep.

    decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out DIR

writes DIR/testbed.csv (one row per agent, problem, design and seed; columns as
``run_testbed``) and DIR/testbed.json (package versions and the arguments),
shows progress, and prints mean d_KL per agent and design normalised to mlp
(as paper 000, Fig. 2) when mlp is among the agents.

    decision-bench testbed --agents mlp,ensemble+ --sweep realdata [--datasets iris,wine] --out DIR

evaluates on real data instead (scikit-learn's bundled data sets, or .csv/.npz
files given to --datasets): there is no environment, so the score is the NLL of
marginal (tau 1) and dyadic joint (tau 10, kappa 2) predictions. It writes
DIR/realdata.csv (columns as ``run_realdata``) and DIR/realdata.json.
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
REALDATA = "realdata"


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``testbed`` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "testbed",
        help="offline d_KL of marginal and joint predictions on a testbed sweep",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--agents", default="mlp", help="comma-separated agent names (default: mlp)")
    parser.add_argument(
        "--sweep", default="quick", choices=SWEEP_NAMES + (REALDATA,), help="named sweep (default: quick)"
    )
    parser.add_argument(
        "--datasets",
        default=None,
        help="--sweep realdata only: comma-separated bundled names or .csv/.npz files "
        "(default: iris,wine,breast_cancer,digits)",
    )
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


def realdata_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean NLL per agent (rows) and design (columns), over data sets, sizes and seeds."""
    design = frame["tau"].astype(str).radd("NLL^") + frame["kappa"].map(
        lambda k: "" if pd.isna(k) else f",kappa={int(k)}"
    )
    return frame.assign(design=design).groupby(["agent", "design"], sort=False)["nll"].mean().unstack("design")


def _main_realdata(args: argparse.Namespace, out: Path) -> int:
    from decision_bench.evaluation.realdata import realdata_sweep, run_realdata

    sweep = realdata_sweep()
    datasets = (
        sweep.datasets
        if args.datasets is None
        else tuple(d.strip() for d in args.datasets.split(",") if d.strip())
    )
    frame = run_realdata(
        args.agents,
        datasets=datasets,
        num_train=sweep.num_train,
        seeds=sweep.num_seeds if args.seeds is None else args.seeds,
        designs=sweep.designs,
        num_test=args.num_test,
        num_models=args.num_models,
        method=args.method,
        progress=not args.no_progress,
    )
    _write_atomic(out / "realdata.csv", frame.to_csv(index=False))
    meta = {
        "versions": frame.attrs["versions"],
        "sweep": REALDATA,
        "datasets": list(datasets),
        "seeds": frame.attrs["seeds"],
        "agents": args.agents,
        "num_test": args.num_test,
        "num_models": args.num_models,
        "method": args.method,
    }
    _write_atomic(out / "realdata.json", json.dumps(meta, indent=2) + "\n")
    print(f"mean NLL ({len(frame)} rows, sweep {REALDATA}):")
    print(realdata_table(frame).round(3).to_string())
    print(f"wrote {out / 'realdata.csv'}")
    return 0


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.sweep == REALDATA:
        return _main_realdata(args, out)
    if getattr(args, "datasets", None) is not None:
        raise ValueError("--datasets is only used with --sweep realdata")
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
