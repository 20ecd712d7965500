"""Compare our testbed d_KL with the reference implementation's, setting by setting.

    python scripts/compare_reference.py [--agent mlp] [--seeds 20] [--save ours.csv]
    python scripts/compare_reference.py --agent ensemble+ [--num-ensemble 30] --seeds 20
    python scripts/compare_reference.py --ours ours.csv        # redo the comparison only

The reference figures (reference_testbed_runs.csv, measured on DeepMind's
neural_testbed; see testbed_facts.md beside it, last two sections) are per
problem: one d_KL per (T, beta, tau, seed) of ``classification_2d`` (d = 2, iid
test inputs). Its environments are not ours, so the comparison is of per-setting
means over seeds, never of single problems. This script runs ours on exactly
the reference's (T, beta, tau) settings with more seeds (default 20; at least
the reference's), or reads an earlier run with --ours, and prints:

- per setting (T, beta, tau): the reference's mean +- standard error over its
  seeds (std with ddof 1 / sqrt(n)), ours likewise, the z-score of the
  difference z = (ours - ref) / sqrt(se_ours^2 + se_ref^2), the ratio
  ours / ref, and both medians (the per-seed values are heavy-tailed);
- per tau: the mean over settings of the reference's and of our means, each
  with the standard error sqrt(sum of the settings' se^2) / num_settings, the
  ratio ours / reference and the z-score of the difference;
- a verdict: the issue's acceptance holds when the ratio is within
  [0.85, 1.15] at tau 1 and at tau 10 (those of the two the reference has for
  the agent; ensemble+ has only tau 10) and no setting has |z| > 3 (a setting
  whose z is undefined fails too).

When the reference's settings are not a full grid, ours runs the product of
their T, beta and tau values and only the reference's settings are compared.
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from decision_bench import agents
from decision_bench._src.validation import check_choice, check_int
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import Sweep, custom_sweep

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference" / "reference_testbed_runs.csv"
REFERENCE_COLUMNS = (
    "agent", "num_ensemble", "tau", "num_train", "temperature", "problem_seed", "kl_estimate"
)
OURS_COLUMNS = ("agent", "num_train", "temperature", "tau", "kappa", "seed", "kl")
KEYS = ["num_train", "temperature", "tau"]  # a setting of the comparison
INPUT_DIM = 2  # the reference's classification_2d
DEFAULT_SEEDS = 20
RATIO_BAND = (0.85, 1.15)
Z_MAX = 3.0
JUDGED_TAUS = (1, 10)


def _standard(frame: pd.DataFrame, seed_column: str, kl_column: str) -> pd.DataFrame:
    """Columns num_train (int), temperature (float, rounded to 10 decimals so that
    values read from different files match), tau (int), seed, kl: one row per problem."""
    return pd.DataFrame(
        {
            "num_train": frame["num_train"].astype(int).to_numpy(),
            "temperature": frame["temperature"].astype(float).round(10).to_numpy(),
            "tau": frame["tau"].astype(int).to_numpy(),
            "seed": frame[seed_column].to_numpy(),
            "kl": frame[kl_column].astype(float).to_numpy(),
        }
    )


def _missing_columns(frame: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks columns {missing}; it has {list(frame.columns)}")


def is_ensemble_agent(agent: str) -> bool:
    """Whether agent has a num_ensemble hyperparameter (ensemble, ensemble+)."""
    return "num_ensemble" in agents.hyperparameters(agent)


def reference_runs(
    reference: pd.DataFrame, agent: str, num_ensemble: int | None = None
) -> tuple[pd.DataFrame, int | None]:
    """The reference's problems of one agent, standardised (see _standard), and the
    ensemble size they were measured with (None for agents without one).

    reference: the rows of reference_testbed_runs.csv. For an ensemble agent
    num_ensemble picks the reference's rows; None is allowed when the reference
    has a single size for the agent (that size is returned).
    """
    _missing_columns(reference, REFERENCE_COLUMNS, "the reference file")
    check_choice("--agent", agent, agents.names())
    rows = reference[reference["agent"] == agent]
    if rows.empty:
        raise ValueError(
            f"the reference has no rows for agent {agent!r}; it has {sorted(reference['agent'].unique())}"
        )
    sizes = sorted(int(m) for m in rows["num_ensemble"].unique())
    if not is_ensemble_agent(agent):
        if num_ensemble is not None:
            raise ValueError(f"--num-ensemble is only for ensemble agents, not {agent!r}")
        return _standard(rows, "problem_seed", "kl_estimate"), None
    if num_ensemble is None:
        if len(sizes) > 1:
            raise ValueError(
                f"the reference has {agent!r} with num_ensemble {sizes}: pick one with --num-ensemble"
            )
        num_ensemble = sizes[0]
    num_ensemble = check_int("--num-ensemble", num_ensemble, 1)
    rows = rows[rows["num_ensemble"] == num_ensemble]
    if rows.empty:
        raise ValueError(
            f"the reference has {agent!r} only with --num-ensemble in {sizes}, got {num_ensemble}"
        )
    return _standard(rows, "problem_seed", "kl_estimate"), num_ensemble


def ours_runs(ours: pd.DataFrame, agent: str) -> pd.DataFrame:
    """Our rows of one agent (a run_testbed frame or its CSV), iid designs and
    d = 2 only, standardised (see _standard)."""
    _missing_columns(ours, OURS_COLUMNS, "the ours file")
    rows = ours[(ours["agent"] == agent) & ours["kappa"].isna()]
    if "input_dim" in rows.columns:
        rows = rows[rows["input_dim"] == INPUT_DIM]
    if rows.empty:
        raise ValueError(
            f"ours has no iid d = {INPUT_DIM} rows for agent {agent!r}; "
            f"its agents are {sorted(ours['agent'].unique())}"
        )
    return _standard(rows, "seed", "kl")


def summarize_settings(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting (index num_train, temperature, tau; sorted by tau, T, beta):
    n (number of non-NaN kl), mean, se (std with ddof 1 / sqrt(n); NaN when
    n < 2), median and num_nan (seeds whose kl is NaN, left out of the others).

    runs: one row per problem with columns num_train, temperature, tau, kl.
    """
    grouped = runs.groupby(KEYS)["kl"]
    table = pd.DataFrame(
        {
            "n": grouped.count(),
            "mean": grouped.mean(),
            "se": grouped.std(ddof=1) / np.sqrt(grouped.count()),
            "median": grouped.median(),
            "num_nan": runs["kl"].isna().groupby([runs[k] for k in KEYS]).sum().astype(int),
        }
    )
    return table.reorder_levels(["tau", "num_train", "temperature"]).sort_index().reorder_levels(KEYS)


def compare(reference: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Per reference setting: ref_* and ours_* (n, mean, se, median, num_nan as in
    summarize_settings), diff = ours_mean - ref_mean, z = diff / sqrt(ours_se^2 +
    ref_se^2) and ratio = ours_mean / ref_mean. Index and order: the reference's.

    Raises ValueError when ours lacks some of the reference's settings.
    """
    missing = reference.index.difference(ours.index)
    if len(missing):
        shown = ", ".join(f"(T={t}, beta={b:g}, tau={u})" for t, b, u in missing)
        raise ValueError(f"ours lacks {len(missing)} of the reference's settings: {shown}")
    table = pd.concat([reference.add_prefix("ref_"), ours.loc[reference.index].add_prefix("ours_")], axis=1)
    table["diff"] = table["ours_mean"] - table["ref_mean"]
    table["z"] = table["diff"] / np.sqrt(table["ours_se"] ** 2 + table["ref_se"] ** 2)
    table["ratio"] = table["ours_mean"] / table["ref_mean"]
    return table


def overall(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per tau (index): num_settings, ref_mean and ours_mean (means over the
    settings of the per-setting means), ref_se and ours_se (sqrt(sum of the
    settings' se^2) / num_settings: settings are independent), ratio ours/ref
    and z = (ours_mean - ref_mean) / sqrt(ours_se^2 + ref_se^2)."""
    rows = {}
    for tau, group in comparison.groupby(level="tau"):
        k = len(group)
        row = {"num_settings": k}
        for side in ("ref", "ours"):
            row[f"{side}_mean"] = group[f"{side}_mean"].mean()
            row[f"{side}_se"] = math.sqrt((group[f"{side}_se"] ** 2).sum(skipna=False)) / k
        row["ratio"] = row["ours_mean"] / row["ref_mean"]
        row["z"] = (row["ours_mean"] - row["ref_mean"]) / math.sqrt(row["ours_se"] ** 2 + row["ref_se"] ** 2)
        rows[tau] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "tau"
    return table


def verdict(
    comparison: pd.DataFrame,
    overall_table: pd.DataFrame,
    band: tuple[float, float] = RATIO_BAND,
    z_max: float = Z_MAX,
    taus: tuple[int, ...] = JUDGED_TAUS,
) -> tuple[bool, list[str]]:
    """Whether the acceptance holds, and the reasons (one short sentence each).

    Holds when, for every tau in taus that overall_table has (at least one
    must be there), the ratio ours/reference is within band (inclusive), and
    no setting of comparison has |z| > z_max or an undefined z.
    """
    low, high = band
    reasons, holds = [], True
    judged = [tau for tau in taus if tau in overall_table.index]
    if not judged:
        present = list(overall_table.index)
        return False, [f"no tau in {list(taus)} to judge (the comparison has tau {present})"]
    for tau in taus:
        if tau not in overall_table.index:
            reasons.append(f"tau {tau} not in the reference for this agent")
            continue
        ratio = overall_table.loc[tau, "ratio"]
        inside = bool(low <= ratio <= high)  # False for NaN
        holds &= inside
        reasons.append(f"tau {tau} ratio {ratio:.3f} {'within' if inside else 'OUTSIDE'} [{low}, {high}]")
    z = comparison["z"]
    far = comparison[z.abs() > z_max]
    undefined = comparison[z.isna()]
    if len(far):
        holds = False
        shown = ", ".join(f"T={t} beta={b:g} tau={u} (z {v:+.2f})" for (t, b, u), v in far["z"].items())
        reasons.append(f"{len(far)} setting(s) with |z| > {z_max:g}: {shown}")
    if len(undefined):
        holds = False
        shown = ", ".join(f"T={t} beta={b:g} tau={u}" for t, b, u in undefined.index)
        reasons.append(
            f"{len(undefined)} setting(s) with undefined z (fewer than 2 seeds or no spread): {shown}"
        )
    if not len(far) and not len(undefined):
        reasons.append(f"no setting with |z| > {z_max:g} (max |z| {z.abs().max():.2f})")
    return holds, reasons


def _pm(mean: float, se: float) -> str:
    return f"{mean:.4f} +- {se:.4f}"


def format_settings(comparison: pd.DataFrame) -> str:
    """The per-setting table as text."""
    table = pd.DataFrame(
        {
            "reference": [_pm(m, s) for m, s in zip(comparison["ref_mean"], comparison["ref_se"])],
            "ref n": comparison["ref_n"],
            "ours": [_pm(m, s) for m, s in zip(comparison["ours_mean"], comparison["ours_se"])],
            "ours n": comparison["ours_n"],
            "z": comparison["z"].map(lambda v: f"{v:+.2f}"),
            "ours/ref": comparison["ratio"].map(lambda v: f"{v:.3f}"),
            "ref median": comparison["ref_median"].map(lambda v: f"{v:.4f}"),
            "ours median": comparison["ours_median"].map(lambda v: f"{v:.4f}"),
        },
        index=comparison.index.set_names(["T", "beta", "tau"]),
    )
    return table.to_string()


def format_overall(overall_table: pd.DataFrame) -> str:
    """The per-tau table as text."""
    table = pd.DataFrame(
        {
            "settings": overall_table["num_settings"],
            "reference": [_pm(m, s) for m, s in zip(overall_table["ref_mean"], overall_table["ref_se"])],
            "ours": [_pm(m, s) for m, s in zip(overall_table["ours_mean"], overall_table["ours_se"])],
            "ours/ref": overall_table["ratio"].map(lambda v: f"{v:.3f}"),
            "z": overall_table["z"].map(lambda v: f"{v:+.2f}"),
        },
        index=overall_table.index,
    )
    return table.to_string()


def reference_sweep(reference: pd.DataFrame, num_seeds: int) -> Sweep:
    """A custom sweep covering the reference's settings (the product of its T, beta
    and tau values; d = 2, iid designs)."""
    return custom_sweep(
        input_dims=(INPUT_DIM,),
        num_trains=sorted(reference["num_train"].unique().tolist()),
        temperatures=sorted(reference["temperature"].unique().tolist()),
        taus=sorted(reference["tau"].unique().tolist()),
        num_seeds=num_seeds,
        name="reference",
    )


def parse_override(text: str) -> tuple[str, object]:
    """"num_steps=50" -> ("num_steps", 50): the value as a Python literal, else a string."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"--set must be NAME=VALUE (a hyperparameter of the agent), got {text!r}")
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        parsed = value.strip()
    return name.strip(), parsed


def _read_csv(path: Path, what: str, hint: str) -> pd.DataFrame:
    if not path.is_file():
        raise ValueError(f"{what} not found: {path}; {hint}")
    return pd.read_csv(path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--agent", default="mlp", help="agent to compare, as named in both (default: mlp)")
    parser.add_argument(
        "--num-ensemble",
        type=int,
        default=None,
        help="ensemble agents only: the reference's ensemble size to compare, also given to ours "
        "(default: the reference's, when it has one)",
    )
    parser.add_argument(
        "--reference",
        default=str(DEFAULT_REFERENCE),
        help="the reference's per-problem CSV (default: ../shared/reference/reference_testbed_runs.csv "
        "from the repository root)",
    )
    parser.add_argument(
        "--ours",
        default=None,
        help="read our rows from this CSV (decision-bench testbed's testbed.csv or an earlier --save) "
        "instead of running (for ensemble agents the file's ensemble size is not checked)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"our seeds 0..N-1 per setting, at least the reference's "
        f"(default: {DEFAULT_SEEDS}; not with --ours)",
    )
    parser.add_argument("--save", default=None, help="write our rows (run_testbed's columns) to this CSV")
    parser.add_argument(
        "--num-test",
        type=int,
        default=1000,
        help="test tau-samples per problem (default: 1000, as the reference)",
    )
    parser.add_argument(
        "--num-models",
        type=int,
        default=1000,
        help="agent draws per estimate (default: 1000, as the reference)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one of our agent's hyperparameters (repeatable), e.g. --set num_steps=100",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def run(args: argparse.Namespace) -> bool:
    """Loads or runs both sides, prints the comparison; returns whether the acceptance holds."""
    check_choice("--agent", args.agent, agents.names())
    reference_path = Path(args.reference)
    reference = _read_csv(
        reference_path,
        "reference file",
        "it is reference_testbed_runs.csv in the project's shared folder (shared/reference/ beside "
        "the repository, with testbed_facts.md); pass its path with --reference FILE",
    )
    ref_runs, num_ensemble = reference_runs(reference, args.agent, args.num_ensemble)
    ref_summary = summarize_settings(ref_runs)
    ref_seeds = int(ref_runs.groupby(KEYS).size().max())
    label = args.agent if num_ensemble is None else f"{args.agent} (num_ensemble {num_ensemble})"
    if args.ours is not None:
        running_only = (("--seeds", args.seeds), ("--save", args.save), ("--set", args.overrides))
        given = [flag for flag, value in running_only if value is not None and value != []]
        if given:
            raise ValueError(f"{', '.join(given)}: only when running ours, not with --ours")
        ours = _read_csv(Path(args.ours), "ours file", "write one with --save FILE or decision-bench testbed")
        source = args.ours
    else:
        seeds = DEFAULT_SEEDS if args.seeds is None else args.seeds
        if seeds < 1:
            raise ValueError(f"--seeds must be an integer >= 1, got {seeds}")
        if seeds < ref_seeds:
            raise ValueError(
                f"--seeds must be >= the reference's seeds per setting ({ref_seeds}), got {seeds}"
            )
        overrides = dict(parse_override(text) for text in args.overrides)
        if num_ensemble is not None:
            if overrides.setdefault("num_ensemble", num_ensemble) != num_ensemble:
                raise ValueError("give the ensemble size with --num-ensemble, not --set num_ensemble")
        agents.config(args.agent, **overrides)  # unknown or invalid hyperparameters fail here
        num_test = check_int("--num-test", args.num_test, 1)
        num_models = check_int("--num-models", args.num_models, 1)
        sweep = reference_sweep(ref_runs, seeds)
        print(
            f"running {label} on {len(sweep.settings)} settings x {len(sweep.designs)} designs "
            f"x {seeds} seeds" + (f" with {overrides}" if overrides else "")
        )
        ours = run_testbed(
            args.agent,
            sweep=sweep,
            seeds=seeds,
            num_test=num_test,
            num_models=num_models,
            overrides={args.agent: overrides} if overrides else None,
            progress=not args.no_progress,
        )
        if args.save is not None:
            save = Path(args.save)
            save.parent.mkdir(parents=True, exist_ok=True)
            ours.to_csv(save, index=False)
            print(f"wrote {save}")
        source = f"this run ({seeds} seeds)"
    comparison = compare(ref_summary, summarize_settings(ours_runs(ours, args.agent)))
    per_tau = overall(comparison)
    holds, reasons = verdict(comparison, per_tau)
    print(f"d_KL of {label}: reference {reference_path} vs ours {source}")
    print("per setting: mean +- standard error over seeds, z of the difference, ratio, medians")
    print(format_settings(comparison))
    nan = comparison[["ref_num_nan", "ours_num_nan"]].sum()
    if nan.any():
        print(f"note: NaN kl left out: {int(nan['ref_num_nan'])} reference, {int(nan['ours_num_nan'])} ours")
    print("\nper tau: mean over settings +- sqrt(sum se^2) / settings")
    print(format_overall(per_tau))
    low, high = RATIO_BAND
    print(
        f"\nverdict: acceptance {'HOLDS' if holds else 'FAILS'} (ratio ours/reference in [{low}, {high}] "
        f"at tau {' and '.join(map(str, JUDGED_TAUS))}, no setting with |z| > {Z_MAX:g}): "
        + "; ".join(reasons)
    )
    return holds


def main(argv: list[str] | None = None) -> int:
    """0 when the acceptance holds, 1 when it fails, 2 on bad input."""
    args = build_parser().parse_args(argv)
    try:
        return 0 if run(args) else 1
    except ValueError as error:
        print(f"compare_reference: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
