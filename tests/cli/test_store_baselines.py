"""decision-bench store-baselines: a user's finished runs as a set that leaderboard --baselines reads."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.experiments.baselines import STORED_DIR, load_baselines

# A tiny grid: 2 settings, tau 1 / 10 iid / 10 dyadic, 2 seeds; uniform trains nothing.
GRID = [
    "--num-train", "2,5", "--temperature", "0.5", "--tau", "1,10", "--kappa", "2",
    "--seeds", "2", "--num-test", "20", "--num-models", "20", "--no-progress",
]
COMMAND = "decision-bench testbed --agents uniform (tiny grid)"
# The registered uniform under another name: the same agent on the same problems.
TWIN = (
    "from decision_bench.agents import registry\n"
    "NAME = 'uniform_twin'\n\n\n"
    "def make_agent(spec):\n"
    "    return registry.make('uniform', spec)\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished testbed run of uniform on the tiny grid."""
    folder = tmp_path_factory.mktemp("store") / "run"
    assert cli.main(["testbed", "--agents", "uniform", *GRID, "--out", str(folder)]) == 0
    return folder


def _package_files() -> set[str]:
    return {p.name for p in STORED_DIR.iterdir()}


def test_a_set_is_stored_in_the_current_folder_and_leaderboard_reads_it_by_path(run, tmp_path, monkeypatch, capsys):
    before = _package_files()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["store-baselines", str(run), "lab", "--command", COMMAND]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("stored 12 rows of uniform in lab.json; wall seconds {'uniform': ")
    assert printed[-1] == "compare with it: decision-bench leaderboard --baselines lab.json --agent-file FILE --out DIR"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.csv", "lab.csv.sha256", "lab.json"]
    assert _package_files() == before  # nothing written into the installed package
    stored = load_baselines(tmp_path / "lab.json")
    assert stored.agents == ("uniform",) and stored.meta["command"] == COMMAND
    pd.testing.assert_frame_equal(
        stored.rows.drop(columns=["wall_seconds"], errors="ignore"),
        pd.read_csv(run / "testbed.csv").drop(columns=["wall_seconds"], errors="ignore"),
        check_like=True,
    )

    # The leaderboard scores an agent file on the set's very problems, read from the path.
    (tmp_path / "twin.py").write_text(TWIN)
    assert cli.main(["leaderboard", "--agent-file", "twin.py", "--baselines", "lab.json", "--out", "board",
                     "--no-progress"]) == 0
    board = pd.read_csv(tmp_path / "board" / "leaderboard.csv")
    assert list(board["agent"]) == ["uniform_twin", "uniform"] and list(board["source"]) == ["yours", "stored"]
    paired = pd.read_csv(tmp_path / "board" / "leaderboard_paired.csv")
    assert (paired["baseline"] == "uniform").all() and (paired["problems"] == 4).all()
    assert (paired["difference"] == 0.0).all()  # the same agent on the same problems: no difference at all
    assert "baselines 'lab.json': " + COMMAND in (tmp_path / "board" / "leaderboard.md").read_text()


def test_folder_takes_the_set_elsewhere_creating_it(run, tmp_path, capsys):
    folder = tmp_path / "shared" / "baselines"
    assert cli.main(["store-baselines", str(run), "lab", "--command", COMMAND, "--folder", str(folder)]) == 0
    assert f"in {folder / 'lab.json'};" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["lab.csv", "lab.csv.sha256", "lab.json"]


def _unfinished(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "unfinished"
    shutil.copytree(run, copy)
    (copy / "testbed.json").unlink()  # what a run writes after its last cell
    return copy


@pytest.mark.parametrize(
    "case, message",
    [
        ("unfinished", "is unfinished (no testbed.json, which a run writes after its last cell); problems done "
                       "per agent: uniform 2 of 2;"),
        ("missing", "RUN_DIR must be the folder of a finished testbed or reproduce run, got "),
        ("name", "the baselines' name must be a plain file name (letters, digits"),
        ("bandit_name", "the baselines' name must be a plain file name"),
        ("commands", "give one command per run folder: 1 folders, 2 commands"),
        ("empty_folder", "--folder must name a folder ('.' for the current one), got ''"),
        ("empty_run", "RUN_DIR must name the folder of a finished testbed or reproduce run"),
        # R3-95: an empty --command was stored as the set's "made by"
        ("empty_command", "--command 1 of 1 must be the command that made its run folder, got '  '"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_is_stored(run, tmp_path, monkeypatch, capsys, case, message):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run_dir, name, extra, command = str(run), "lab", [], COMMAND
    if case == "unfinished":
        run_dir = str(_unfinished(run, tmp_path))
    elif case == "missing":
        run_dir = str(tmp_path / "no_such_run")
    elif case == "name":
        name = "../lab"
    elif case == "bandit_name":
        name = "lab_bandit"
    elif case == "commands":
        extra = ["--command", "a second command"]
    elif case == "empty_folder":
        extra = ["--folder", ""]
    elif case == "empty_run":
        run_dir = ""
    elif case == "empty_command":
        command = "  "
    assert cli.main(["store-baselines", run_dir, name, "--command", command, *extra]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert captured.out == "" and len(lines) == 1, lines
    assert lines[0].startswith("decision-bench: error: ") and message in lines[0], lines[0]
    assert list(work.iterdir()) == [] and not (tmp_path / "lab.json").exists()


def test_a_damaged_cell_file_is_one_line_and_nothing_is_stored(run, tmp_path, capsys):
    copy = tmp_path / "damaged"
    shutil.copytree(run, copy)
    cell = sorted((copy / "cells").glob("*.json"))[0]
    record = json.loads(cell.read_text())
    table = record["table"]
    kl = table["columns"].index("kl")
    table["data"][kl][0] = 0.0  # an edit of a result, which the cell's checksum does not allow
    cell.write_text(json.dumps(record))
    folder = tmp_path / "stored"
    assert cli.main(["store-baselines", str(copy), "lab", "--command", COMMAND, "--folder", str(folder)]) == 2
    # The store's own warning about the file, then the one error line.
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("decision-bench: error: ")]
    assert len(lines) == 1 and "did not verify" in lines[0] and cell.name in lines[0], lines
    assert not (folder / "lab.json").exists()


def test_the_command_is_required_once_per_run(run, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["store-baselines", str(run), "lab"])
    assert stop.value.code == 2 and "--command" in capsys.readouterr().err
