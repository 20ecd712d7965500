"""``decision-bench testbed``: fit and evaluate agents on a testbed sweep.

    decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out DIR

writes DIR/testbed.csv (one row per agent, problem, design and seed; columns as
``run_testbed``) and DIR/testbed.json (package versions and the arguments),
shows progress, and prints mean d_KL per agent and design normalised to mlp
(as paper 000, Fig. 2) when mlp is among the agents.

    decision-bench testbed --agents mlp --input-dim 2 --num-train 3,30,300 \
        --temperature 0.01,0.1,0.5 --tau 1,10 [--kappa 2] --seeds 5 --out DIR

runs a custom grid instead of a named sweep (``sweeps.custom_sweep``): settings
are every (input dim, T, beta) of the product of the lists; designs are tau iid
for every --tau, plus (tau, kappa) for every --tau > 1 when --kappa is given.
--num-train and --temperature are required; --input-dim defaults to 2, --tau to
1,10, --seeds to 5. The grid flags and --sweep are mutually exclusive.

    decision-bench testbed --agents mlp,ensemble+ --sweep realdata [--datasets iris,wine] --out DIR

evaluates on real data instead (scikit-learn's bundled data sets, or .csv/.npz
files given to --datasets): there is no environment, so the score is the NLL of
marginal (tau 1) and dyadic joint (tau 10, kappa 2) predictions. It writes
DIR/realdata.csv (columns as ``run_realdata``) and DIR/realdata.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from pathlib import Path

import pandas as pd

from decision_bench.evaluation.kl import METHODS
from decision_bench.evaluation.runner import run_testbed
from decision_bench.evaluation.sweeps import SWEEP_NAMES, Sweep, custom_sweep

BASELINE = "mlp"
REALDATA = "realdata"
DEFAULT_SWEEP = "quick"
# Custom-grid flags (as typed, argparse dest) and their defaults when a grid is
# given; None: required in a grid.
GRID_FLAGS = {
    "--input-dim": ("input_dim", "2"),
    "--num-train": ("num_train", None),
    "--temperature": ("temperature", None),
    "--tau": ("tau", "1,10"),
    "--kappa": ("kappa", None),
}

_EPILOG = """\
examples:
  decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out runs/tb
  decision-bench testbed --agents mlp --input-dim 2 --num-train 3,30,300 \\
      --temperature 0.01,0.1,0.5 --tau 1,10 --kappa 2 --seeds 5 --out runs/grid

custom grid: settings are input-dim x num-train x temperature; designs are tau iid
for each --tau, plus (tau, kappa) for each --tau > 1 when --kappa is given. Give
either --sweep or grid flags, not both; with grid flags --num-train and
--temperature are required, --input-dim defaults to 2, --tau to 1,10, --seeds to 5.
"""


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``testbed`` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "testbed",
        help="offline d_KL of marginal and joint predictions on a testbed sweep",
        description=__doc__.splitlines()[0],
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--agents", default="mlp", help="comma-separated agent names (default: mlp)")
    parser.add_argument(
        "--sweep",
        default=None,
        choices=SWEEP_NAMES + (REALDATA,),
        help=f"named sweep (default: {DEFAULT_SWEEP}, unless grid flags are given)",
    )
    grid = parser.add_argument_group("custom grid (instead of --sweep)")
    grid.add_argument(
        "--input-dim", metavar="D[,D...]", help="input dimensions, integers >= 1 (default: 2)"
    )
    grid.add_argument(
        "--num-train", metavar="T[,T...]", help="training set sizes, integers >= 0 (required in a grid)"
    )
    grid.add_argument(
        "--temperature", metavar="BETA[,BETA...]", help="temperatures, numbers > 0 (required in a grid)"
    )
    grid.add_argument(
        "--tau", metavar="TAU[,TAU...]", help="test tau, integers >= 1, each scored iid (default: 1,10)"
    )
    grid.add_argument(
        "--kappa",
        metavar="KAPPA",
        help="also score (tau, kappa) for every tau > 1; an integer >= 1 (default: iid only)",
    )
    parser.add_argument(
        "--datasets",
        default=None,
        help="--sweep realdata only: comma-separated bundled names or .csv/.npz files "
        "(default: iris,wine,breast_cancer,digits)",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default: the sweep's; 5 for a custom grid)"
    )
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


def parse_int_list(flag: str, text: str, minimum: int) -> tuple[int, ...]:
    """"3,30,300" -> (3, 30, 300): distinct integers >= minimum, else a ValueError naming flag."""
    items = [item.strip() for item in str(text).split(",")]
    try:
        values = tuple(int(item) for item in items)
    except ValueError:
        values = ()
    if not values or any(v < minimum for v in values):
        raise ValueError(f"{flag} must be a comma-separated list of integers >= {minimum}, got {text!r}")
    _check_distinct(flag, values, text)
    return values


def parse_number_list(flag: str, text: str) -> tuple[float, ...]:
    """"0.01,0.1" -> (0.01, 0.1): distinct finite numbers > 0, else a ValueError naming flag."""
    items = [item.strip() for item in str(text).split(",")]
    try:
        values = tuple(float(item) for item in items)
    except ValueError:
        values = ()
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError(f"{flag} must be a comma-separated list of numbers > 0, got {text!r}")
    _check_distinct(flag, values, text)
    return values


def _check_distinct(flag: str, values: tuple, text: str) -> None:
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        shown = ", ".join(f"{v:g}" for v in repeated)
        raise ValueError(f"{flag} must not repeat a value, got {text!r} (repeated: {shown})")


def grid_sweep(args: argparse.Namespace) -> Sweep | None:
    """The custom grid of the command line (sweeps.custom_sweep), or None when no
    grid flag was given. ValueError for --sweep together with grid flags, a
    missing --num-train or --temperature, or a malformed list."""
    given = [flag for flag, (dest, _) in GRID_FLAGS.items() if getattr(args, dest, None) is not None]
    if not given:
        return None
    if getattr(args, "sweep", None) is not None:
        raise ValueError(
            f"--sweep and the custom-grid flags ({', '.join(given)}) are mutually exclusive: "
            "give a named --sweep or a grid (--num-train ... --temperature ...), not both"
        )
    text = {
        flag: default if getattr(args, dest, None) is None else getattr(args, dest)
        for flag, (dest, default) in GRID_FLAGS.items()
    }
    missing = [flag for flag in ("--num-train", "--temperature") if text[flag] is None]
    if missing:
        raise ValueError(
            f"a custom grid needs {' and '.join(missing)} "
            "(e.g. --num-train 10,100 --temperature 0.1), or use a named --sweep"
        )
    kappa = None
    if text["--kappa"] is not None:
        try:
            kappa = int(str(text["--kappa"]).strip())
        except ValueError:
            kappa = 0
        if kappa < 1:
            raise ValueError(f"--kappa must be one integer >= 1, got {text['--kappa']!r}")
    taus = parse_int_list("--tau", text["--tau"], 1)
    if kappa is not None and max(taus) <= 1:
        raise ValueError(
            f"--kappa needs a --tau > 1 (kappa designs are scored for tau > 1), got --tau {text['--tau']!r}"
        )
    return custom_sweep(
        input_dims=parse_int_list("--input-dim", text["--input-dim"], 1),
        num_trains=parse_int_list("--num-train", text["--num-train"], 0),
        temperatures=parse_number_list("--temperature", text["--temperature"]),
        taus=taus,
        kappa=kappa,
    )


def _grid_meta(sweep: Sweep) -> dict:
    """The grid of a custom sweep, for testbed.json."""
    return {
        "input_dims": sorted({s.input_dim for s in sweep.settings}),
        "num_trains": sorted({s.num_train for s in sweep.settings}),
        "temperatures": sorted({s.temperature for s in sweep.settings}),
        "designs": [[d.tau, d.kappa] for d in sweep.designs],
    }


def main(args: argparse.Namespace) -> int:
    custom = grid_sweep(args)  # validated before anything is written
    sweep = custom if custom is not None else (getattr(args, "sweep", None) or DEFAULT_SWEEP)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if sweep == REALDATA:
        return _main_realdata(args, out)
    if getattr(args, "datasets", None) is not None:
        raise ValueError("--datasets is only used with --sweep realdata")
    frame = run_testbed(
        args.agents,
        sweep,
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
    if custom is not None:
        meta["grid"] = _grid_meta(custom)
    _write_atomic(out / "testbed.json", json.dumps(meta, indent=2) + "\n")
    table = summary_table(frame)
    normalised = BASELINE in table.index
    title = f"mean d_KL, normalised to {BASELINE}" if normalised else "mean d_KL"
    print(f"{title} ({len(frame)} rows, sweep {frame.attrs['sweep']}):")
    print(table.round(3).to_string())
    bad = frame[~frame["params_finite"] | (frame["fraction_finite"] < 1.0)]
    if len(bad):
        print(f"note: {len(bad)} rows had non-finite parameters or per-sample estimates; "
              "see columns params_finite and fraction_finite")
    print(f"wrote {out / 'testbed.csv'}")
    return 0
