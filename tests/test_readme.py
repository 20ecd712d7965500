"""Every snippet in README.md and docs/*.md runs as written, at small sizes, or is
listed in NOT_RUN with the reason it is not run here.

Fast checks: the Gymnasium example runs, and every `decision-bench` command in the
pages (in shell blocks and in inline code) parses with the real argument parser
(a missing required flag, a misspelt option or preset fails here). Slow checks
(`make test-all`): the Python blocks run with the sizes in SMALL, and the commands
run with SHRINK's flags appended (argparse keeps the last value of a repeated flag).
"""

from __future__ import annotations

import contextlib
import re
import runpy
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# Shell lines (by how they start) that are not run here, and why.
NOT_RUN = {
    "make demo": "the whole demo, minutes on 2 cores: it runs `decision-bench reproduce --preset demo`, "
    "whose machinery tests/cli/test_custom_agent.py runs on a tiny preset",
    "make test": "the test suite itself",
    "make docs": "builds the API reference: tests/test_docs.py",
    "pip install": "installs packages: checked by hand from a fresh virtual environment (issue 21)",
    "python -m pip install build twine": "installs the release tools (README, Releasing)",
    "python -m build": "builds the release's sdist and wheel: checked by hand before a release (issue 36)",
    "twine check": "checks the built distributions: by hand before a release (issue 36)",
    "python docs/tutorial.py": "the whole tutorial, minutes; tests/test_tutorial.py runs it with --small",
    'python -c "import jax; print(jax.devices())"': "shows a GPU only on a machine with one",
    "decision-bench reproduce --preset": "presets run from minutes to hours; their grids are tested in "
    "tests/experiments and the pipeline on a tiny preset in tests/cli/test_custom_agent.py",
    "python bench/": "benchmarks, minutes on 2 cores",
    "decision-bench testbed --sweep realdata": "every bundled data set, many minutes even at one seed; "
    "the realdata runner is run on iris by tests/cli/test_testbed_resume.py",
    "decision-bench testbed --agents mlp,ensemble+ --sweep quick --reference hmc": "HMC chains for every "
    "problem, many minutes; tests/agents/test_hmc.py and tests/evaluation/test_fidelity.py cover it",
    "decision-bench leaderboard --agent": "scores agents on every stored problem, minutes; "
    "tests/cli/test_leaderboard.py runs the command on baselines it stores from a tiny grid",
    "decision-bench reproduce --config std.toml": "the standard preset from its printed file, an hour; "
    "tests/cli/test_agent_options.py runs a tiny experiment file end to end",
    "decision-bench store-baselines": "needs a finished run; tests/cli/test_store_baselines.py stores one "
    "and tests/cli/test_leaderboard_bandit.py a reproduce run's",
    "decision-bench testbed --sweep quick --agents mlp,ensemble+ --out runs/lab_baselines": "the run "
    "stored in the lines after it; tests/cli/test_leaderboard.py does the same on a tiny grid",
    "decision-bench testbed --sweep standard --agents hmc": "the stored Bayes floor, an hour of HMC "
    "chains; tests/agents/test_hmc.py runs the agent",
    "decision-bench testbed --sweep quick --agents hmc": "HMC chains for every problem, minutes; "
    "tests/agents/test_hmc.py runs the agent, tests/cli/test_leaderboard.py stores two runs as one",
}
# Python blocks that another test runs from the page itself, each found by a piece of its
# text (its opening lines, or its NAME line).
MY_AGENT_START = '"""An anchored ensemble of linear softmax models'
RUN_ELSEWHERE = {
    MY_AGENT_START: "tests/cli/test_custom_agent.py (my_agent.py)",
    # Host agents, found by their NAME line (as tests/agents/test_host_agent.py finds them):
    # they only define make_agent; the PyTorch one needs torch (the torch extra).
    'NAME = "my_numpy"':
        "tests/agents/test_host_agent.py runs my_numpy.py through testbed, leaderboard and bandit",
    'NAME = "my_torch"':
        "tests/agents/test_host_agent.py (marked slow, skipped without torch)",
    # It reads the user's copies of UCI files, which no test can download.
    "from decision_bench import run_bandit\nfrom decision_bench.data import load_showdown":
        "tests/data/test_showdown_data.py, on small files it writes in each format",
}
# Flags appended to run a documented command at small size.
SHRINK = {
    "bandit": ["--steps", "20", "--seeds", "1", "--no-progress"],
    "testbed": ["--seeds", "1", "--num-test", "50", "--no-progress"],
    "tune": ["--seeds", "1", "--num-test", "50", "--no-progress"],
    "analyze": ["--resamples", "200"],
}
# Sizes in the Python blocks, replaced (old -> new) when the slow test runs them.
SMALL = {
    "num_steps=2000": "num_steps=30",
    "seeds=3": "seeds=1",
    "num_ensemble=10": "num_ensemble=2",
    'tune("mlp", PAPER_GRIDS["mlp"], "quick")': 'tune("mlp", {"l2": PAPER_GRIDS["mlp"]["l2"][:2]}, "quick", seeds=1, num_test=50)',
}


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.S)


def _run_elsewhere(block: str) -> str | None:
    """The reason a Python block is not run by this file's test, or None."""
    return next((reason for piece, reason in RUN_ELSEWHERE.items() if piece in block), None)


def _shell_commands(page: Path) -> list[tuple[str, str | None]]:
    """(command, file its output is redirected to, or None) for each line of the page's
    bash blocks: continuations joined, comments and optional `[...]` parts removed, the
    redirection (the shell's, not the command's) split off."""
    commands = []
    for block in _blocks(page, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s#\s.*$", "", line)  # a trailing comment
            line = re.sub(r"\[[^\]]*\]", "", line).strip()
            target = re.search(r"\s>\s*(\S+)$", line)
            if target:
                line = line[: target.start()]
            if line:
                commands.append((" ".join(line.split()), target[1] if target else None))
    return commands


def _shell_lines(page: Path) -> list[str]:
    """The commands of the page's bash blocks (``_shell_commands``)."""
    return [command for command, _ in _shell_commands(page)]


def _redirections() -> dict[str, str]:
    """{command: file} for the documented commands whose output the docs send to a file
    (``decision-bench reproduce --preset demo --print-config > demo.toml``): a later
    command reads that file."""
    return {command: target for page in PAGES for command, target in _shell_commands(page) if target}


def _inline_commands(page: Path) -> list[str]:
    """`decision-bench ...` in inline code that is a full command: synopses (with
    [...], | or an AGENT placeholder) and bare subcommand names are references."""
    found = []
    for span in re.findall(r"`(decision-bench [^`]*)`", page.read_text()):
        span = " ".join(span.split())
        if re.search(r"[\[|]|\bAGENT\b", span) or len(span.split()) < 3:
            continue
        found.append(span)
    return found


def _not_run_reason(line: str) -> str | None:
    return next((reason for prefix, reason in NOT_RUN.items() if line.startswith(prefix)), None)


def _documented_commands() -> list[str]:
    commands = []
    for page in PAGES:
        for line in _shell_lines(page) + _inline_commands(page):
            if line.startswith("decision-bench ") and line not in commands:
                commands.append(line)
    return commands


def _documented_agent_files() -> dict[str, str]:
    """{file name: text} of the agent files the docs define in Python blocks (a block with
    ``def make_agent``): docs/custom_agent.md's my_agent.py, and a file named after its
    agent where the NAME starts with "my_" (my_tunable.py)."""
    files = {}
    for page in PAGES:
        for block in _blocks(page, "python"):
            if "def make_agent" not in block:
                continue
            name = re.search(r'^NAME = "(\w+)"', block, re.M)
            files[f"{name[1]}.py" if name and name[1].startswith("my_") else "my_agent.py"] = block
    assert "my_agent.py" in files, "docs/custom_agent.md no longer defines my_agent.py"
    return files


def _argv(command: str, directory: Path) -> list[str]:
    """The command's arguments, with the DIR placeholder and output folders under `directory`."""
    argv = shlex.split(command)[1:]
    return [str(directory / a) if a == "DIR" or a.startswith("runs/") else a for a in argv]


def test_readme_gymnasium_example_runs_and_reports_regret(tmp_path, capsys):
    example = next(b for b in _blocks(README, "python") if "gym.make(" in b)
    assert len([line for line in example.splitlines() if line.strip()]) <= 14
    script = tmp_path / "example.py"
    script.write_text(example)
    runpy.run_path(str(script))
    printed = capsys.readouterr().out
    regret = float(re.search(r"regret after 100 steps: ([0-9.]+)", printed).group(1))
    assert 0.0 <= regret <= 100.0


def test_gymnasium_page_numpy_policies_write_a_bandit_csv_analyze_accepts(tmp_path, monkeypatch, capsys):
    from decision_bench.analysis import BANDIT_REQUIRED, read_bandit

    page = ROOT / "docs" / "gymnasium.md"
    example = next(b for b in _blocks(page, "python") if "bandit.csv" in b)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "example.py").write_text(example)
    runpy.run_path(str(tmp_path / "example.py"))
    printed = capsys.readouterr().out
    bandit = read_bandit(tmp_path / "bandit.csv")  # raises on anything analyze would refuse
    assert set(BANDIT_REQUIRED) <= set(bandit.columns)
    # two policies x three seeds, each logged every 50 of its 200 steps
    assert sorted(bandit.agent.unique()) == ["egreedy", "linucb"]
    assert len(bandit) == 2 * 3 * 4 and set(bandit.step) == {50, 100, 150, 200}
    for _, run in bandit.groupby(["agent", "seed"]):
        regret = run.sort_values("step").cumulative_regret.to_numpy()
        assert regret[0] >= 0 and np.all(np.diff(regret) >= 0)  # per-step regret is >= 0
    assert printed.count("best action") == 6


def test_every_shell_line_is_a_command_this_test_knows():
    for page in PAGES:
        for line in _shell_lines(page):
            known = line.startswith("decision-bench ") or _not_run_reason(line) is not None
            assert known, f"{page.name}: {line!r} is neither run by this test nor listed in NOT_RUN"


def test_every_block_said_to_run_elsewhere_is_on_a_page_once():
    # A block whose text changed (a new docstring) would otherwise fall back to the slow
    # test below, which runs it here: the PyTorch agent then fails where torch is absent.
    blocks = [block for page in PAGES for block in _blocks(page, "python")]
    for piece in RUN_ELSEWHERE:
        assert sum(piece in block for block in blocks) == 1, f"{piece!r} is in no block, or in several"


def test_every_documented_command_parses(tmp_path):
    from decision_bench.cli.program import build_parser

    commands = _documented_commands()
    assert len(commands) >= 15  # the command-line section alone has 15
    assert any("tune sgmcmc_quick" in c for c in commands) and any("--activation tanh" in c for c in commands)
    for command in commands:
        try:
            args = build_parser().parse_args(_argv(command, tmp_path))
        except SystemExit:
            pytest.fail(f"does not parse as written: {command}")
        assert args.command == command.split()[1]


def test_the_parse_check_catches_a_command_without_its_required_out(capsys):
    from decision_bench.cli.program import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "sgmcmc_quick", "--grid", "prior_variance=0.05,0.1,0.2"])
    assert "--out" in capsys.readouterr().err


def _results_for_analyze(directory: Path) -> None:
    """testbed.csv and bandit.csv of 3 agents x 3 seeds for `analyze DIR`."""
    directory.mkdir(parents=True, exist_ok=True)
    testbed, bandit = [], []
    for i, agent in enumerate(("mlp", "ensemble", "epinet")):
        for seed in range(3):
            for tau, kl in ((1, 0.1 + 0.02 * i + 0.01 * seed), (10, 1.0 + 0.2 * i + 0.1 * seed)):
                testbed.append(dict(agent=agent, seed=seed, tau=tau, kappa=np.nan, kl=kl))
            bandit.append(dict(agent=agent, seed=seed, step=10, cumulative_regret=5.0 + i + seed))
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)


@pytest.mark.slow  # every command at small size: minutes
def test_every_documented_command_runs_at_small_size(tmp_path, monkeypatch):
    from decision_bench import cli

    monkeypatch.chdir(tmp_path)
    # Commands with --agent-file load the agent files the docs define.
    for file_name, text in _documented_agent_files().items():
        (tmp_path / file_name).write_text(text)
    redirections = _redirections()
    assert redirections, "no documented command writes a file any more: drop _redirections"
    for i, command in enumerate(_documented_commands()):
        # Printing a preset's file is instant, though running the preset is not (NOT_RUN):
        # a later documented command reads the file.
        prints_a_file = command in redirections and "--print-config" in command.split()
        if _not_run_reason(command) is not None and not prints_a_file:
            continue
        run_dir = tmp_path / f"command{i}"
        argv = _argv(command, run_dir)
        if argv[0] == "analyze":
            _results_for_analyze(Path(argv[1]))
        # An experiment file sets the sizes itself (the command refuses them beside it).
        shrink = [] if "--config" in argv else SHRINK.get(argv[0], [])
        with contextlib.ExitStack() as stack:
            if command in redirections:
                stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(redirections[command], "w"))))
            status = cli.main([*argv, *shrink])
        assert status == 0, command


@pytest.mark.slow  # trains agents and runs bandits: a minute or more
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_runs_at_small_size(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for block in _blocks(page, "python"):
        if block.startswith(MY_AGENT_START):
            # my_agent.py: later blocks on the page load it from the working directory.
            (tmp_path / "my_agent.py").write_text(block)
        if _run_elsewhere(block):
            continue
        for old, new in SMALL.items():
            block = block.replace(old, new)
        script = tmp_path / "snippet.py"
        script.write_text(block)
        runpy.run_path(str(script))
