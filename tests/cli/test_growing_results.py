"""Results files grow while a run goes on (issue 21, part 3): an interrupted run
keeps the rows of what finished, marks the rest unfinished, every version on disk
verifies, and the resumed run ends with the uninterrupted run's rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import decision_bench.cli.bandit as bandit_cli
from decision_bench._src.files import UNFINISHED_RUN
from decision_bench.analysis.inputs import read_bandit
from decision_bench.analysis.join import bandit_final_regret
from decision_bench.cli.program import main

BANDIT = ["bandit", "--agents", "uniform,prior", "--env", "BernoulliBandit-v0", "--num-actions", "4",
          "--batch-size", "8", "--steps", "150", "--chunk-size", "50", "--seeds", "2", "--log-every", "25",
          "--no-progress"]
SAME_ROWS = ["agent", "seed", "step", "cumulative_regret", "final_regret", "error"]


def _interrupt_agent_at(monkeypatch, agent: str, step: int) -> list[pd.DataFrame]:
    """Makes the bandit command's run of ``agent`` stop with Ctrl-C after ``step``
    steps; returns the bandit.csv versions read (verified) after each of its chunks."""
    real_run_bandit = bandit_cli.run_bandit
    versions = []

    def run_bandit(name, *args, **kwargs):
        out = kwargs["out_dir"].parent.parent

        def after_chunk(t):
            versions.append(read_bandit(out / "bandit.csv"))
            if name == agent and t >= step:
                raise KeyboardInterrupt

        return real_run_bandit(name, *args, callback=after_chunk, **kwargs)

    monkeypatch.setattr(bandit_cli, "run_bandit", run_bandit)
    return versions


def test_an_interrupted_bandit_command_leaves_the_finished_agent_and_the_chunks_done(tmp_path, monkeypatch):
    assert main(BANDIT + ["--out", str(tmp_path / "fresh")]) == 0
    fresh = pd.read_csv(tmp_path / "fresh" / "bandit.csv")

    versions = _interrupt_agent_at(monkeypatch, "prior", 100)
    assert main(BANDIT + ["--out", str(tmp_path / "run")]) == 130
    # After every chunk the file verified and had grown: uniform's chunks, then prior's.
    assert [len(v) for v in versions] == [4, 8, 12, 16, 20]
    left = read_bandit(tmp_path / "run" / "bandit.csv")
    uniform, prior = left[left.agent == "uniform"], left[left.agent == "prior"]
    pd.testing.assert_frame_equal(uniform[SAME_ROWS].reset_index(drop=True),
                                  fresh[fresh.agent == "uniform"][SAME_ROWS].reset_index(drop=True),
                                  check_dtype=False)
    assert sorted(prior.step.unique()) == [25, 50, 75, 100]
    assert (prior.error == f"{UNFINISHED_RUN} 100 of 150 steps").all() and prior.final_regret.isna().all()
    expected = fresh[(fresh.agent == "prior") & (fresh.step <= 100)]
    np.testing.assert_array_equal(prior.cumulative_regret.to_numpy(), expected.cumulative_regret.to_numpy())
    # `analyze`'s regret per (agent, seed) leaves the running agent out, saying so.
    with pytest.warns(RuntimeWarning, match=r"dropping 2 unfinished bandit runs \(still running\)"):
        regret = bandit_final_regret(left)
    assert regret.agent.unique().tolist() == ["uniform"]

    monkeypatch.undo()
    assert main(BANDIT + ["--out", str(tmp_path / "run")]) == 0
    resumed = pd.read_csv(tmp_path / "run" / "bandit.csv")
    pd.testing.assert_frame_equal(resumed.drop(columns="wall_seconds"), fresh.drop(columns="wall_seconds"))
