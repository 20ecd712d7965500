"""``decision-bench leaderboard``: your agents against the stored core agents, problem by problem.

    decision-bench leaderboard --agent-file my_agent.py --out DIR
    decision-bench leaderboard --agents ensemble --set ensemble.num_ensemble=10 --baselines standard --out DIR

runs the given agents (registered names in --agents, and/or the agents of
--agent-file files) on exactly the problems the stored baselines were scored on
(the same environments, training data and test inputs: problems are functions of
setting and seed), then prints and writes:

- DIR/leaderboard.csv: each agent's d_KL^1, d_KL^10, d_KL^{10,kappa=2}, accuracy and
  ECE (stratified mean over settings, with standard errors), yours and the baselines';
- DIR/leaderboard_paired.csv: for each of your agents and each baseline, the mean
  over problems of yours minus the baseline's, with its standard error: environment
  luck cancels in a paired difference (for agents that respond alike to each problem,
  its error is a fraction of the scores');
- DIR/leaderboard.md (both tables) and DIR/testbed.csv (your agents' rows).

With --bandit (off by default; its estimated cost printed first), your agents also run
Thompson sampling on the stored set's bandit cells (the same env kwargs, steps and seeds:
environments are functions of the seed), and beside the d_KL tables:

- DIR/leaderboard_bandit.csv: each agent's mean, median and mean log final regret, with
  standard errors, yours and the baselines';
- DIR/leaderboard_bandit_paired.csv: per your agent and baseline, the mean over runs of
  your final regret minus the baseline's on the same problem and seed, with its standard error;
- DIR/leaderboard_regret_vs_dkl10.png/.pdf (with matplotlib): regret against d_KL^10, and in
  leaderboard.md where your agent falls against the baselines' trend;
- DIR/bandit.csv: your agents' bandit rows.

Only sets stored from a ``reproduce`` run hold bandit rows (``--list`` says which).

A registered agent given without --set replaces the stored one of its name (scored
anew); with --set values it is another agent, labelled with them (e.g.
"ensemble (num_ensemble=10)"), and the stored one stays among the baselines.

Stored baselines ship with the package (``decision-bench leaderboard --list``); a
baseline stored by another package version, or whose default config has changed
since, is left out of the comparison with a line saying why (``--allow-stale``
compares it anyway, marked as such). ``--baselines PATH.json`` takes baselines stored
elsewhere (``decision-bench store-baselines``, ``experiments.baselines.store_baselines``). Resumable as ``testbed``:
each finished cell is kept in DIR/cells/, and DIR belongs to one run.
"""

from __future__ import annotations

import argparse
import functools
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from decision_bench._src.files import atomic_write_text, write_results_csv
from decision_bench._src.rundir import claim_run_dir
from decision_bench._src.validation import check_choice
from decision_bench.agents import names as registered_names
from decision_bench.analysis.leaderboard import (
    bandit_markdown, bandit_paired_differences, bandit_scores, markdown, paired_differences, regret_trend, scores,
)
from decision_bench.cli.arguments import add_agent_options, add_command, parse_agent_list, parse_settings, settings_label
from decision_bench.experiments.testbed_cell import compute_testbed_cell, describe_testbed_cell
from decision_bench.experiments.baselines import (
    STORED_DIR, Baselines, bandit_stale_reasons, cpu_difference, library_differences, load_baselines, stale_reasons,
    stored_names,
)
from decision_bench.experiments.agent_files import file_pairs, host_agent_names, read_agent_files
from decision_bench.experiments.cells import config_label
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.store import ResultsStore

DEFAULT_BASELINES = "standard"
CELLS_DIR = "cells"


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``leaderboard`` subcommand to an argparse subparsers object."""
    parser = add_command(subparsers, "leaderboard",
                         "your agents against the stored core agents on the very same problems",
                         __doc__.splitlines()[0])
    parser.add_argument("--agents", default=None, help="comma-separated registered agent names to score")
    add_agent_options(parser)
    parser.add_argument(
        "--baselines", default=None,
        help=f"stored baselines: a name ({', '.join(stored_names()) or 'none stored'}; default "
        f"{DEFAULT_BASELINES}) or the path of a baselines .json file",
    )
    parser.add_argument("--out", default=None, help="output directory (created if missing)")
    parser.add_argument(
        "--allow-stale", action="store_true",
        help="also compare with baselines made by other code (marked stale in the tables)",
    )
    parser.add_argument(
        "--bandit", action="store_true",
        help="also run your agents on the set's bandit cells and compare final regret (sets stored from a "
        "reproduce run; the cost is printed first)",
    )
    parser.add_argument("--list", action="store_true", help="list the stored baselines and exit")
    parser.add_argument(
        "--estimate", action="store_true",
        help="print what the comparison would run (testbed cells, and with --bandit the bandit runs) and its "
        "estimated time, then exit without running anything (--out not needed)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=main)
    return parser


def _list(folder: Path | None = None) -> int:
    """Prints each baselines set stored in ``folder`` (the package's by default). A
    .json file there that is not a readable baselines record (a stray file, a set
    being edited) is skipped with one line on stderr naming it and why: it must not
    hide the sets that are stored."""
    folder = STORED_DIR if folder is None else Path(folder)
    names = stored_names(folder)
    for name in names:
        path = folder / f"{name}.json"
        try:
            stored = load_baselines(path)
        except ValueError as error:
            print(f"note: skipped {str(path)!r}: {str(error).splitlines()[0]}", file=sys.stderr)
            continue
        problems = sum(len(seeds) for _, seeds in stored.problems)
        reasons = stale_reasons(stored)
        bandit = (
            f"; bandit: {len(stored.bandit_agents)} agents on {len(stored.bandit_problems)} settings, "
            f"{sum(len(seeds) for _, seeds in stored.bandit_problems)} runs"
        ) if stored.has_bandit else ""
        print(
            f"{name}: {len(stored.agents)} agents ({', '.join(stored.agents)}) on {len(stored.problems)} "
            f"settings, {problems} problems{bandit}; made by: {stored.meta.get('command', 'unknown')}"
            + (f"; stale: {', '.join(sorted(reasons))}" if reasons else "")
        )
    if not names:
        print("no stored baselines")
    return 0


def _as_stored(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as a CSV reader sees them, so they join the stored baselines' rows
    (read from CSV) on equal types."""
    return pd.read_csv(io.StringIO(frame.to_csv(index=False)))


def _sets_with_bandit_rows() -> list[str]:
    """The stored sets that hold bandit rows (a set that cannot be read is not one)."""
    names = []
    for name in stored_names():
        try:
            if load_baselines(name).has_bandit:
                names.append(name)
        except ValueError:
            continue
    return names


def _check_bandit(stored: Baselines) -> None:
    """One line unless ``stored`` holds bandit rows, naming it and the sets that do."""
    if stored.has_bandit:
        return
    others = _sets_with_bandit_rows()
    raise ValueError(
        f"--bandit: the baselines {stored.name!r} hold no bandit rows; stored sets with bandit rows: "
        f"{', '.join(others) or 'none'} (a set stored from a finished reproduce run has them)"
    )


def _describe_bandit_cell(cell) -> str:
    problem = dict(cell.problem)
    return f"{cell.agent} bandit d={problem.get('input_dim')} {problem.get('num_steps')} steps"


def main(args: argparse.Namespace) -> int:
    if args.list:
        # --list lists the package's stored sets and nothing else: an option beside it
        # (a --baselines path that may not even exist) would be ignored without a word.
        given = [flag for flag, value in (
            ("--agents", args.agents), ("--agent-file", args.agent_files), ("--set", args.settings),
            ("--baselines", args.baselines is not None), ("--out", args.out is not None),
            ("--allow-stale", args.allow_stale), ("--bandit", args.bandit), ("--estimate", args.estimate),
        ) if value]
        if given:
            raise ValueError(
                f"--list lists the package's stored baselines and exits; it takes none of {', '.join(given)} "
                "(drop --list to use them)"
            )
        return _list()
    if args.out is None and not args.estimate:
        raise ValueError("--out is required (the folder for the tables and the agents' cells)")
    stored = load_baselines(args.baselines or DEFAULT_BASELINES)
    if args.bandit:
        _check_bandit(stored)
    registered = parse_agent_list(args.agents) if args.agents else ()
    for agent in registered:
        check_choice("--agents", agent, registered_names())
    files = read_agent_files(args.agent_files, registered_names())
    agents = registered + tuple(f.name for f in files)
    if not agents:
        raise ValueError("give the agents to score: --agents NAMES and/or --agent-file FILE")
    repeated = sorted(set(registered) & {f.name for f in files})
    if repeated:
        raise ValueError(f"--agent-file defines {repeated}, also given in --agents; give each agent once")
    settings = parse_settings(args.settings, agents, files)
    digests = {f.name: f.sha256 for f in files}
    # A registered agent with --set values is another agent than the stored one of its
    # name: its rows are labelled with the values and the stored one stays a baseline.
    labels = {a: f"{a} ({settings_label(v)})" for a, v in settings.items() if a in registered}
    replaced = [a for a in registered if a in stored.agents and a not in labels]
    reasons = stale_reasons(stored)
    compared = [a for a in stored.agents if a not in replaced and (args.allow_stale or a not in reasons)]

    def config(agent: str, kind: str) -> dict:
        # A baseline's name given without --set is that baseline scored anew: with the
        # overrides the set stored it with (a preset's 30-member ensembles), {} in older sets.
        return settings[agent] if agent in settings else (stored.agent_config(agent, kind) if agent in replaced else {})

    cells = tuple(c for a in agents for c in stored.cells(a, digests.get(a), config(a, "testbed")))
    arguments = {
        "--agents": list(registered), "--agent-file": {f.name: f.sha256 for f in files},
        "--set": {a: {k: repr(v) for k, v in sorted(values.items())} for a, values in sorted(settings.items())},
        "--baselines": stored.name, "--allow-stale": bool(args.allow_stale),
    }
    bandit_cells = ()
    from decision_bench.experiments.estimate import estimate_cells  # noqa: PLC0415

    if args.bandit:
        arguments["--bandit"] = True  # only when given: folders of earlier leaderboards keep their arguments
        bandit_cells = tuple(c for a in agents for c in stored.bandit_cells(a, digests.get(a), config(a, "bandit")))
    host = host_agent_names(files)
    if args.estimate:
        print(f"testbed: {estimate_cells(cells, host_agents=host).line()}")
        if args.bandit:
            print(f"--bandit: {estimate_cells(bandit_cells, host_agents=host).line()}")
        return 0
    if args.bandit:
        print(f"--bandit: {estimate_cells(bandit_cells, host_agents=host).line()}", flush=True)
    with claim_run_dir(args.out, "leaderboard", arguments) as out:
        frame = run_cells(
            cells,
            functools.partial(compute_testbed_cell, agent_files=file_pairs(files)),
            ResultsStore(out / CELLS_DIR),
            progress=not args.no_progress,
            announce=True,
            host_agents=host,
            desc="leaderboard", unit="setting", describe=describe_testbed_cell,
        )
        ours = _as_stored(frame)
        ours["agent"] = ours["agent"].map(lambda a: labels.get(a, a))
        yours = [labels.get(a, a) for a in agents]
        baseline_rows = stored.rows[stored.rows["agent"].isin(compared)]
        both = pd.concat([ours, baseline_rows], ignore_index=True)
        score_table = scores(both)
        score_table.insert(1, "source", [
            "yours" if a in yours else ("stored, stale" if a in reasons else "stored") for a in score_table["agent"]
        ])
        paired = paired_differences(both, yours, compared)
        notes = [
            f"baselines {stored.name!r}: {stored.meta['command']} ({stored.meta['versions'].get('decision-bench')}, "
            f"stored {stored.meta['created']})",
        ]
        for computed_with in (library_differences(stored), cpu_difference(stored)):
            if computed_with:
                notes.append(f"the baselines were computed with {computed_with}: rows may differ in float rounding")
        notes += [f"{a} is also a stored baseline: scored anew here, its stored rows not used" for a in replaced]
        for agent, reason in sorted(reasons.items()):
            if agent in replaced:
                continue
            verb = "compared anyway (--allow-stale)" if args.allow_stale else "left out (--allow-stale compares it)"
            notes.append(f"baseline {agent} is stale ({reason}): {verb}")
        write_results_csv(out / "testbed.csv", frame)
        write_results_csv(out / "leaderboard.csv", score_table)
        write_results_csv(out / "leaderboard_paired.csv", paired)
        text = markdown(score_table, paired, notes)
        written = ["leaderboard.csv", "leaderboard_paired.csv"]
        if args.bandit:
            text += _bandit_side(args, stored, out, bandit_cells, files, labels, yours, replaced, score_table)
            written += ["leaderboard_bandit.csv", "leaderboard_bandit_paired.csv", "bandit.csv"]
        atomic_write_text(out / "leaderboard.md", text)
    print(text, end="")
    print(f"wrote {out / 'leaderboard.md'}, {', '.join(written)}")
    return 0


def _bandit_side(args, stored: Baselines, out: Path, cells, files, labels, yours, replaced, score_table) -> str:
    """Runs (or resumes) your agents' bandit cells, writes leaderboard_bandit.csv,
    leaderboard_bandit_paired.csv, bandit.csv and the regret-vs-d_KL^10 figure; returns
    the decision side's Markdown."""
    from decision_bench._src.extras import plotting_available  # noqa: PLC0415
    from decision_bench.experiments.reproduce import CellRunner, bandit_rows, with_agent_config  # noqa: PLC0415

    runner = CellRunner(str(out), file_pairs(files), progress=False)
    store = ResultsStore(out / CELLS_DIR)
    run_cells(
        cells, runner, store, progress=not args.no_progress, announce=True,
        desc="leaderboard bandit", unit="setting", describe=_describe_bandit_cell,
    )
    frame = with_agent_config(bandit_rows([(cell, store.read(cell)) for cell in cells]), cells)
    write_results_csv(out / "bandit.csv", frame)
    ours = _as_stored(frame)
    ours["agent"] = ours["agent"].map(lambda a: labels.get(a, a))
    reasons = bandit_stale_reasons(stored)
    compared = [a for a in stored.bandit_agents if a not in replaced and (args.allow_stale or a not in reasons)]
    theirs = stored.bandit_rows[stored.bandit_rows["agent"].isin(compared)]
    both = pd.concat([ours, theirs], ignore_index=True)
    table = bandit_scores(both, [*yours, *compared])
    table.insert(1, "source", ["yours" if a in yours else ("stored, stale" if a in reasons else "stored")
                               for a in table["agent"]])
    paired = bandit_paired_differences(both, yours, compared)
    write_results_csv(out / "leaderboard_bandit.csv", table)
    write_results_csv(out / "leaderboard_bandit_paired.csv", paired)
    record = stored.meta["bandit"]
    notes = [f"bandit baselines of {stored.name!r}: {record.get('command')} "
             f"({(record.get('versions') or {}).get('decision-bench')}); "
             + "; ".join(f"{dict(p)['env']} {', '.join(f'{k}={v}' for k, v in p if k != 'env')}, "
                         f"{len(seeds)} seeds" for p, seeds in stored.bandit_problems)]
    notes += [f"baseline {a} ran with {config_label(stored.agent_config(a, 'bandit'))} (the set's overrides)"
              for a in compared if stored.agent_config(a, "bandit")]
    for agent, reason in sorted(reasons.items()):
        if agent not in replaced:
            verb = "compared anyway (--allow-stale)" if args.allow_stale else "left out (--allow-stale compares it)"
            notes.append(f"bandit baseline {agent} is stale ({reason}): {verb}")
    # The figure's points: each agent's d_KL^10 (the testbed table above) and mean final regret.
    dkl = score_table.set_index("agent")["dkl_10"] if "dkl_10" in score_table.columns else pd.Series(dtype=float)
    points = pd.DataFrame({
        "agent": table["agent"],
        "dkl_10": [float(dkl.get(a, np.nan)) for a in table["agent"]],
        "regret": table["final_regret_mean"].to_numpy(float),
    })
    sentences, fit = [], None
    for agent in yours:
        sentence, fit = regret_trend(points, agent, compared)
        sentences.append(sentence)
    if plotting_available():
        from decision_bench.analysis.figures import plot_leaderboard_regret_vs_dkl10  # noqa: PLC0415

        drawn = plot_leaderboard_regret_vs_dkl10(points, yours, fit, out)
        if drawn:
            sentences += ["", f"Figure: {', '.join(p.name for p in drawn)}."]
    else:
        sentences += ["", "Figure skipped: it needs matplotlib (pip install 'decision-bench[plot]')."]
    return bandit_markdown(table, paired, notes, sentences)
