"""decision-bench leaderboard: stored baselines, paired on the very same problems."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decision_bench.analysis.leaderboard import paired_differences
from decision_bench.cli.program import main as cli_main
from decision_bench.experiments import baselines as baselines_module
from decision_bench.experiments.baselines import load_baselines, stale_reasons, store_baselines

# A tiny grid: 2 settings, tau 1 / 10 iid / 10 dyadic, 2 seeds.
GRID = [
    "--num-train", "2,5", "--temperature", "0.5", "--tau", "1,10", "--kappa", "2",
    "--seeds", "2", "--num-test", "20", "--num-models", "20", "--no-progress",
]
# The registered mlp under another name: the same agent on the same problems.
TWIN = (
    "from decision_bench.agents import registry\n"
    "NAME = 'mlp_twin'\n\n\n"
    "def make_agent(spec):\n"
    "    return registry.make('mlp', spec)\n"
)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Baselines 'tiny' stored from a real testbed run of mlp (one agent keeps it cheap)."""
    root = tmp_path_factory.mktemp("baselines")
    run = root / "run"
    assert cli_main(["testbed", "--agents", "mlp", *GRID, "--out", str(run)]) == 0
    path = store_baselines(run, root / "stored", "tiny", "decision-bench testbed --agents mlp (tiny grid)")
    return path


def test_stored_baselines_round_trip_with_their_record(stored):
    loaded = load_baselines(stored)
    assert loaded.agents == ("mlp",)
    assert len(loaded.problems) == 2 and all(seeds == (0, 1) for _, seeds in loaded.problems)
    assert set(loaded.rows["agent"]) == {"mlp"}
    assert len(loaded.rows) == 2 * 3 * 2  # settings x designs x seeds
    meta = json.loads(stored.read_text())
    assert meta["agents"]["mlp"]["wall_seconds"] > 0 and meta["agents"]["mlp"]["rows"] == 12
    assert stale_reasons(loaded) == {}


def test_a_twin_of_a_baseline_differs_from_it_by_exactly_zero(stored, tmp_path):
    # Same agent, same problems, same keys: every paired difference is 0, which only
    # holds if the leaderboard really reruns the stored problems.
    twin = tmp_path / "twin.py"
    twin.write_text(TWIN)
    out = tmp_path / "board"
    assert cli_main(["leaderboard", "--agent-file", str(twin), "--baselines", str(stored), "--out", str(out),
                     "--no-progress"]) == 0
    paired = pd.read_csv(out / "leaderboard_paired.csv")
    against_mlp = paired[paired["baseline"] == "mlp"]
    assert set(against_mlp["metric"]) == {"dkl_1", "dkl_10", "dkl_10_kappa2", "accuracy", "ece"}
    np.testing.assert_array_equal(against_mlp["difference"], 0.0)
    assert (against_mlp["problems"] == 4).all()
    board = pd.read_csv(out / "leaderboard.csv")
    assert list(board["agent"]) == ["mlp_twin", "mlp"]
    assert list(board["source"]) == ["yours", "stored"]
    assert "Paired differences" in (out / "leaderboard.md").read_text()


def test_a_stale_baseline_is_reported_and_left_out(stored, tmp_path, capsys):
    meta = json.loads(stored.read_text())
    meta["agents"]["mlp"]["fingerprint"] = "0" * 16
    edited = tmp_path / "tiny.json"
    edited.write_text(json.dumps(meta))
    for suffix in (".csv", ".csv.sha256"):
        (tmp_path / f"tiny{suffix}").write_bytes(stored.with_name(f"tiny{suffix}").read_bytes())
    assert stale_reasons(load_baselines(edited)) == {
        "mlp": "its default config changed since the rows were stored"
    }
    twin = tmp_path / "twin.py"
    twin.write_text(TWIN)
    out = tmp_path / "board"
    assert cli_main(["leaderboard", "--agent-file", str(twin), "--baselines", str(edited), "--out", str(out),
                     "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "baseline mlp is stale" in text and "left out" in text
    assert list(pd.read_csv(out / "leaderboard.csv")["agent"]) == ["mlp_twin"]
    assert pd.read_csv(out / "leaderboard_paired.csv").empty


def test_another_package_version_makes_every_baseline_stale(stored, monkeypatch):
    loaded = load_baselines(stored)
    monkeypatch.setitem(loaded.meta["versions"], "decision-bench", "0.0.1")
    reasons = stale_reasons(loaded)
    assert set(reasons) == {"mlp"} and "0.0.1" in reasons["mlp"]


def test_paired_differences_refuse_unmatched_problems():
    rows = pd.DataFrame({
        "agent": ["a", "a", "b"], "input_dim": 2, "num_train": 10, "temperature": 0.1,
        "tau": 1, "kappa": np.nan, "seed": [0, 1, 0], "kl": [1.0, 2.0, 0.5],
        "accuracy": 0.5, "ece": 0.1,
    })
    with pytest.raises(ValueError, match="not scored on the same problems: only a has"):
        paired_differences(rows, ["a"], ["b"])


def test_paired_difference_is_the_stratified_mean_of_differences():
    # Two settings, two seeds each: differences (1, 3) and (0, 2): means 2 and 1,
    # se 1 and 1 -> mean 1.5, se sqrt(1 + 1) / 2.
    base = pd.DataFrame({
        "input_dim": 2, "num_train": [10, 10, 100, 100], "temperature": 0.1, "tau": 1,
        "kappa": np.nan, "seed": [0, 1, 0, 1], "accuracy": 0.5, "ece": 0.1,
    })
    rows = pd.concat([
        base.assign(agent="a", kl=[2.0, 5.0, 1.0, 4.0]),
        base.assign(agent="b", kl=[1.0, 2.0, 1.0, 2.0]),
    ], ignore_index=True)
    paired = paired_differences(rows, ["a"], ["b"]).set_index("metric")
    assert paired.loc["dkl_1", "difference"] == pytest.approx(1.5)
    assert paired.loc["dkl_1", "difference_se"] == pytest.approx(np.sqrt(2) / 2)
    assert paired.loc["dkl_1", "problems"] == 4 and paired.loc["accuracy", "difference"] == 0


def test_bad_arguments_are_one_line(stored, tmp_path, capsys):
    cases = [
        (["--agents", "mlp", "--baselines", "nope", "--out", str(tmp_path / "x")],
         "--baselines must be a stored baseline name"),
        (["--baselines", str(stored), "--out", str(tmp_path / "y")], "give the agents to score"),
        (["--agents", "mlp", "--baselines", str(stored)], "--out is required"),
        (["--agents", "nope", "--baselines", str(stored), "--out", str(tmp_path / "z")], "--agents"),
    ]
    for argv, message in cases:
        assert cli_main(["leaderboard", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1


def test_a_baselines_csv_without_its_checksum_is_refused(stored, tmp_path):
    (tmp_path / "tiny.json").write_bytes(stored.read_bytes())
    (tmp_path / "tiny.csv").write_bytes(stored.with_suffix(".csv").read_bytes())
    with pytest.raises(ValueError, match="no checksum file"):
        load_baselines(tmp_path / "tiny.json")


def test_stored_names_lists_json_records(tmp_path):
    (tmp_path / "standard.json").write_text("{}")
    assert baselines_module.stored_names(tmp_path) == ("standard",)


def test_list_skips_a_stray_json_file_with_one_line_naming_it(stored, tmp_path, capsys):
    from decision_bench.cli.leaderboard import _list

    for suffix in (".json", ".csv", ".csv.sha256"):
        shutil.copy(f"{stored.with_suffix('')}{suffix}", tmp_path / f"tiny{suffix}")
    (tmp_path / "notes.json").write_text('{"todo": "rerun"}')
    assert _list(tmp_path) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("tiny: 1 agents (mlp)")  # the stored set is still listed
    note = captured.err.strip().splitlines()
    assert len(note) == 1 and str(tmp_path / "notes.json") in note[0] and "not a" in note[0]


def test_baselines_stored_from_two_runs_hold_both_runs_agents(stored, tmp_path):
    # The Bayes floor is run after the core agents, in a run of its own: both runs'
    # agents become one set of baselines on the same problems.
    root = stored.parent.parent
    second = tmp_path / "uniform_run"
    assert cli_main(["testbed", "--agents", "uniform", *GRID, "--out", str(second)]) == 0
    path = store_baselines([root / "run", second], tmp_path / "stored", "both", ["first command", "second command"])
    loaded = load_baselines(path)
    assert loaded.agents == ("mlp", "uniform")
    assert len(loaded.rows) == 2 * 12
    assert loaded.meta["agents"]["uniform"]["command"] == "second command"
    assert loaded.meta["command"] == "first command ; second command"
    with pytest.raises(ValueError, match="ran in two of the given runs"):
        store_baselines([second, second], tmp_path / "again", "twice", ["a", "b"])
    with pytest.raises(ValueError, match="one command per run folder"):
        store_baselines([root / "run", second], tmp_path / "again", "short", "one command")


def test_baselines_from_runs_on_other_problems_are_refused(stored, tmp_path):
    other = tmp_path / "other_run"
    grid = [v if v != "2,5" else "3" for v in GRID]
    assert cli_main(["testbed", "--agents", "uniform", *grid, "--out", str(other)]) == 0
    with pytest.raises(ValueError, match="ran on other problems"):
        store_baselines([stored.parent.parent / "run", other], tmp_path / "stored", "mixed", ["a", "b"])


def _copy_run(stored, tmp_path):
    """A copy of the fixture's finished mlp run (2 problems), to damage."""
    run = tmp_path / "run"
    shutil.copytree(stored.parent.parent / "run", run)
    return run


def test_a_run_whose_second_agent_has_not_finished_is_refused_naming_it(stored, tmp_path, capsys):
    # A run started with mlp and uniform, stopped (or still running) before uniform's
    # first cell: its manifest names both agents, and it has no testbed.json yet.
    run = _copy_run(stored, tmp_path)
    (run / "testbed.json").unlink()
    manifest = json.loads((run / "run_manifest.json").read_text())
    manifest["arguments"]["--agents"] = ["mlp", "uniform"]
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError) as error:
        store_baselines(run, tmp_path / "stored", "partial", "a command")
    message = str(error.value)
    assert message.startswith(f"run folder {str(run)!r} is unfinished (no testbed.json")
    assert "problems done per agent: mlp 2 of 2, uniform 0 of 2; missing problems: uniform;" in message
    assert "\n" not in message and not (tmp_path / "stored").exists()
    assert cli_main(["store-baselines", str(run), "partial", "--command", "c", "--folder", str(tmp_path / "s")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == f"decision-bench: error: {message}"
    assert not (tmp_path / "s").exists()


def test_a_run_missing_a_listed_cell_is_refused(stored, tmp_path):
    run = _copy_run(stored, tmp_path)
    listed = json.loads((run / "testbed.json").read_text())["cells"]
    (run / "cells" / f"{listed[0]}.json").unlink()
    with pytest.raises(ValueError, match=r"is unfinished \(1 cells its testbed.json lists have no finished cell "
                       r"file\); problems done per agent: mlp 1 of 2; missing problems: mlp;"):
        store_baselines(run, tmp_path / "stored", "partial", "a command")


@pytest.mark.parametrize("name", ["../x", "sub/x", "ABSOLUTE", ".hidden", "", "a\\b", "x y", "x_bandit"])
def test_a_name_that_is_not_a_plain_file_name_is_refused(stored, tmp_path, name):
    folder = tmp_path / "deep" / "stored"
    name = str(tmp_path / "deep" / "x") if name == "ABSOLUTE" else name  # an absolute path, kept inside tmp_path
    with pytest.raises(ValueError, match=r"^the baselines' name must be a plain file name \(letters, digits") as error:
        store_baselines(stored.parent.parent / "run", folder, name, "a command")
    assert repr(name) in str(error.value) and not (tmp_path / "deep").exists()


def test_an_interrupted_store_leaves_the_old_set_or_none_never_a_mix(stored, tmp_path, monkeypatch):
    run = stored.parent.parent / "run"
    folder = tmp_path / "stored"
    first = load_baselines(store_baselines(run, folder, "tiny", "first command"))

    def interrupt_at(target):
        replace = os.replace

        def flaky(src, dst):
            if Path(dst) == folder / target:  # the move into place, not a write in the staging folder
                raise KeyboardInterrupt
            replace(src, dst)

        monkeypatch.setattr(baselines_module.os, "replace", flaky)

    interrupt_at("tiny.csv")  # the new files are written, the old NAME.json already removed
    with pytest.raises(KeyboardInterrupt):
        store_baselines(run, folder, "tiny", "second command")
    monkeypatch.undo()
    assert sorted(p.name for p in folder.iterdir()) == ["tiny.csv", "tiny.csv.sha256"]  # no set, no staging left
    assert load_baselines(store_baselines(run, folder, "tiny", "third command")).meta["command"] == "third command"

    def interrupted(path, text):
        raise KeyboardInterrupt

    # While the new NAME.json is written, before anything moves: the old set stands.
    monkeypatch.setattr(baselines_module, "atomic_write_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store_baselines(run, folder, "tiny", "fourth command")
    monkeypatch.undo()
    kept = load_baselines(folder / "tiny.json")
    assert kept.meta["command"] == "third command"
    pd.testing.assert_frame_equal(kept.rows, first.rows)


@pytest.mark.parametrize("extra, named", [
    (["--baselines", "no/such/set.json"], "--baselines"),
    (["--agents", "mlp", "--allow-stale"], "--agents, --allow-stale"),
    (["--bandit", "--estimate"], "--bandit, --estimate"),
])
def test_list_refuses_the_options_it_would_ignore(extra, named, capsys):
    # R3-29/R3-30/R3-73: `--list --baselines PATH` listed the package's sets, exit 0,
    # whether PATH existed or not.
    assert cli_main(["leaderboard", "--list", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--list" in err[0] and f"none of {named} " in err[0]


def test_list_alone_still_lists_the_stored_sets(capsys):
    assert cli_main(["leaderboard", "--list"]) == 0
    assert capsys.readouterr().out.startswith(baselines_module.stored_names()[0] + ":")
