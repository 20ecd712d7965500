"""The ``bandit`` command's printed summary: statistics over seeds, not logged rows; failed seeds named with their reason."""

import math

import pandas as pd

from decision_bench.analysis.tables import seed_summary


def test_summary_standard_error_is_over_seeds_not_rows():
    # Two seeds with 200 logged rows each; per-seed finals 0.03 and 26210.
    rows = []
    for seed, final in ((0, 0.03), (1, 26210.0)):
        for step in range(1, 201):
            rows.append(
                {"agent": "mlp", "seed": seed, "step": step * 150,
                 "cumulative_regret": final * step / 200, "final_regret": final}
            )
    summary = seed_summary(pd.DataFrame(rows))
    mean = (0.03 + 26210.0) / 2
    sem = abs(26210.0 - 0.03) / 2  # std (ddof 1) of two values / sqrt(2)
    assert summary.loc["mlp", "count"] == 2
    assert math.isclose(summary.loc["mlp", "mean"], mean, rel_tol=1e-12)
    assert math.isclose(summary.loc["mlp", "sem"], sem, rel_tol=1e-12)


def test_a_failed_seed_is_named_with_its_reason_under_the_summary():
    from decision_bench.analysis.tables import failed_seed_lines

    reason = "agent parameters became non-finite at step 40; seed stopped"
    rows = pd.DataFrame({
        "agent": ["mlp"] * 4 + ["bbb"] * 2,
        "seed": [0, 0, 1, 1, 0, 0],
        "final_regret": [3.0, 3.0, float("nan"), float("nan"), 1.0, 1.0],
        "error": ["", "", reason, reason, "", None],
    })
    assert failed_seed_lines(rows) == [
        f"note: mlp seed 1 failed: {reason} (left out of the summary; see the error column of bandit.csv)"
    ]
    assert failed_seed_lines(rows.drop(columns="error")) == []


def test_the_command_prints_each_failed_seed_with_its_reason(tmp_path, capsys, monkeypatch):
    # A real tiny run whose seed 1 is then marked failed, as run_bandit marks a seed
    # whose parameters became non-finite: the console must say so, not only the CSV.
    from decision_bench import cli
    from decision_bench.experiments import bandit_cell

    real = bandit_cell.run_bandit
    reason = "agent parameters became non-finite at step 10; seed stopped"

    def one_seed_fails(*args, **kwargs):
        rows = real(*args, **kwargs)
        failed = rows["seed"] == 1
        rows.loc[failed, "error"] = reason
        rows.loc[failed, "final_regret"] = float("nan")
        return rows

    monkeypatch.setattr(bandit_cell, "run_bandit", one_seed_fails)
    argv = ["bandit", "--env", "BernoulliBandit-v0", "--agents", "uniform", "--num-actions", "3", "--steps", "20",
            "--seeds", "2", "--batch-size", "4", "--log-every", "10", "--no-progress", "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"note: uniform seed 1 failed: {reason}" in out
    assert "seed 0 failed" not in out


def test_replay_flags_for_an_agent_that_updates_online_are_refused_before_any_work(tmp_path, capsys):
    # R3-102: --steps-per-obs / --batch-size with an online agent (knn here; host agents
    # too) ran with exit 0 and the flags silently unused.
    from decision_bench.cli.program import main as cli_main

    out = tmp_path / "b"
    tiny = ["--input-dim", "2", "--num-actions", "4", "--steps", "3", "--seeds", "1", "--no-progress"]
    assert cli_main(["bandit", "--agents", "mlp,knn", *tiny, "--steps-per-obs", "3", "--batch-size", "8",
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--steps-per-obs 3 and --batch-size 8: agent 'knn' updates online" in err[0]
    assert not out.exists()  # refused before the run folder was claimed
