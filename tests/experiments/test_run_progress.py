"""How far a run is (``reproduce --status``): finished cells per kind and each bandit run's
saved steps, read without claiming the folder; another run's folder is refused."""

import numpy as np
import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.bandit.checkpoints import saved_progress, save_checkpoint
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells, claim_preset_dir, run_progress
from decision_bench.experiments.store import ResultsStore

AGENTS = ("mlp", "bbb")


def _save(folder, t, num_steps, seconds):
    folder.mkdir(parents=True, exist_ok=True)
    carry = {"params": np.zeros(3, np.float32)}  # what is saved beside the progress does not matter here
    save_checkpoint(folder, {"num_steps": num_steps}, carry, t, seconds, np.zeros((2, 4)))


def _run_folder(tmp_path):
    """A demo run of mlp and bbb: one testbed cell and mlp's bandit run finished, bbb's
    bandit run saved at step 500 of its steps after 75 s."""
    out = tmp_path / "run"
    with claim_preset_dir("demo", out, AGENTS):
        pass  # the manifest, as the run writes it
    cells = build_cells(get_preset("demo"), AGENTS)
    store = ResultsStore(out / "cells")
    testbed = [c for c in cells if c.kind == "testbed"]
    mlp, bbb = [c for c in cells if c.kind == "bandit"]
    store.write(testbed[0], pd.DataFrame({"agent": ["mlp"], "kl": [0.1]}))
    store.write(mlp, pd.DataFrame({"agent": ["mlp"], "cumulative_regret": [1.0]}))
    _save(out / "bandit_runs" / mlp.id, 10, 10, 1.0)  # finished: its saved state is not "started"
    steps = dict(bbb.problem)["num_steps"]
    _save(out / "bandit_runs" / bbb.id, 500, steps, 75.0)
    return out, cells, bbb, steps


def test_progress_counts_finished_cells_per_kind_and_each_started_bandit_runs_saved_steps(tmp_path):
    out, cells, bbb, steps = _run_folder(tmp_path)
    progress = run_progress("demo", out, AGENTS)
    assert progress.total == {"testbed": sum(c.kind == "testbed" for c in cells), "bandit": 2}
    assert progress.finished == {"testbed": 1, "bandit": 1}
    assert progress.started == ((bbb, 500, steps, 75.0),)
    lines = progress.lines()
    assert lines[0] == f"{out}: 2 of {len(cells)} cells finished (testbed 1 of {progress.total['testbed']}, bandit 1 of 2)"
    assert lines[2] == f"  bbb seeds {','.join(map(str, bbb.seeds))}: 500 of {steps:,} steps saved (75 s of running so far)"


def test_a_damaged_newest_state_falls_back_to_the_one_before_and_none_is_none(tmp_path):
    folder = tmp_path / "one"
    _save(folder, 100, 1000, 10.0)
    _save(folder, 200, 1000, 20.0)
    assert saved_progress(folder) == (200, 1000, 20.0)
    newest = folder / "bandit_state.npz"
    newest.write_bytes(newest.read_bytes()[:-20])
    assert saved_progress(folder) == (100, 1000, 10.0)
    assert saved_progress(tmp_path / "empty") is None


def test_progress_refuses_a_folder_with_no_run_or_another_runs(tmp_path):
    with pytest.raises(ValueError, match="holds no run yet"):
        run_progress("demo", tmp_path / "nothing", AGENTS)
    out, *_ = _run_folder(tmp_path)
    with pytest.raises(ValueError, match=r"holds another run \(--agents: saved \['mlp', 'bbb'\], now \['mlp'\]\)"):
        run_progress("demo", out, ("mlp",))


def test_the_status_flag_prints_the_progress_and_runs_nothing(tmp_path, capsys):
    out, cells, *_ = _run_folder(tmp_path)
    before = sorted(p.name for p in (out / "cells").iterdir())
    argv = ["reproduce", "--preset", "demo", "--agents", ",".join(AGENTS), "--out", str(out), "--status"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{out}: 2 of {len(cells)} cells finished")
    assert printed[-1].startswith("the cells not finished (a started bandit run counted whole), estimate: ")
    assert sorted(p.name for p in (out / "cells").iterdir()) == before
