"""The leaderboard's decision side: a reproduce run's bandit rows stored with its testbed
rows, and ``leaderboard --bandit`` pairing a user's final regret with them seed by seed."""

import dataclasses
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from decision_bench._src.extras import plotting_available
from decision_bench.analysis.leaderboard import MIN_TREND_POINTS, regret_trend
from decision_bench.bandit import run_bandit
from decision_bench.cli.program import main as cli_main
from decision_bench.experiments.baselines import (
    bandit_stale_reasons, load_baselines, reusable_rows, stale_reasons, store_baselines,
)
from decision_bench.experiments.cells import Cell, agent_fingerprint
from decision_bench.experiments.presets import Preset, sorted_items
from decision_bench.experiments.reproduce import build_cells, run_preset

SMALL_MLP = {"mlp": {"hidden_sizes": (8,), "num_steps": 20}}
ENV_KWARGS = {"input_dim": 2, "num_actions": 4, "temperature": 0.5}
STEPS, SEEDS = 20, (0, 1, 2)


def _tiny_preset() -> Preset:
    return Preset(
        name="tiny",
        agents=("mlp", "uniform"),
        testbed_sweeps=("demo",),
        testbed_seeds=2,
        num_test=20,
        num_models=10,
        testbed_overrides=sorted_items(SMALL_MLP),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=tuple(ENV_KWARGS.items()),
        bandit_steps=STEPS,
        bandit_seeds=len(SEEDS),
        bandit_overrides=sorted_items(SMALL_MLP),
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """(the tiny reproduce run's folder, the JSON of the set 'tiny' stored from it)."""
    root = tmp_path_factory.mktemp("bandit_baselines")
    run = root / "run"
    run_preset(_tiny_preset(), run, progress=False)
    return run, store_baselines(run, root / "stored", "tiny", "decision-bench reproduce (tiny preset)")


def _finals(frame: pd.DataFrame, agent: str) -> np.ndarray:
    """Final regret per seed, in seed order."""
    mine = frame[frame["agent"] == agent]
    return mine.groupby("seed")["final_regret"].last().reindex(list(SEEDS)).to_numpy(float)


def test_a_reproduce_run_stores_both_sides_and_loads_back(stored):
    run, path = stored
    loaded = load_baselines(path)
    assert loaded.has_bandit and loaded.bandit_agents == ("mlp", "uniform")
    problem = {"env": "NeuralBandit-v0", "num_steps": STEPS, **ENV_KWARGS}
    assert loaded.bandit_problems == ((tuple(sorted(problem.items())), SEEDS),)
    assert (path.parent / "tiny_bandit.csv.sha256").is_file()
    # The rows are the run's bandit.csv, columns and all.
    pd.testing.assert_frame_equal(loaded.bandit_rows, pd.read_csv(run / "bandit.csv"))
    # Overrides and fingerprints: the run's bandit cells, which a comparison must use too.
    cells = {c.agent: c for c in build_cells(_tiny_preset(), ("mlp", "uniform")) if c.kind == "bandit"}
    record = json.loads(path.read_text())["bandit"]
    assert record["agents"]["mlp"]["agent_config"] == {"hidden_sizes": [8], "num_steps": 20}
    assert record["agents"]["uniform"]["agent_config"] == {}
    for agent in ("mlp", "uniform"):
        assert record["agents"][agent]["fingerprint"] == agent_fingerprint(cells[agent])
        assert record["agents"][agent]["rows"] == len(SEEDS) * STEPS
        # The bandit run's own clock (its rows' wall_seconds), not cell creation times.
        run_seconds = pd.read_csv(run / "bandit.csv").query("agent == @agent")["wall_seconds"].iloc[0]
        assert record["agents"][agent]["wall_seconds"] == round(run_seconds)
        assert loaded.bandit_cells(agent, agent_config=loaded.agent_config(agent, "bandit"))[0] == cells[agent]
    assert record["command"] == "decision-bench reproduce (tiny preset)" and record["versions"]["decision-bench"]
    # The testbed side records the run's testbed overrides, so the set is current.
    assert loaded.agent_config("mlp") == {"hidden_sizes": [8], "num_steps": 20}
    assert stale_reasons(loaded) == {} and bandit_stale_reasons(loaded) == {}
    # mlp's stored testbed rows are the small mlp's: never reused as the default mlp's rows.
    # (The problems without reproduce's sweep key, as a testbed run's cells have them.)
    plain = dataclasses.replace(loaded, problems=tuple(
        (tuple((k, v) for k, v in problem if k != "sweep"), seeds) for problem, seeds in loaded.problems
    ))
    problem, seeds = plain.problems[0]
    assert reusable_rows(plain, Cell("testbed", "uniform", (), problem, seeds)) is not None
    assert reusable_rows(plain, Cell("testbed", "mlp", (), problem, seeds)) is None


def _testbed_only_copy(path, folder):
    """The set with its bandit side removed: the record of a set stored before bandit rows."""
    folder.mkdir()
    for name in ("tiny.csv", "tiny.csv.sha256"):
        shutil.copy(path.parent / name, folder / name)
    meta = json.loads(path.read_text())
    del meta["bandit"]
    for record in meta["agents"].values():
        record.pop("agent_config")
    (folder / "tiny.json").write_text(json.dumps(meta))
    return folder / "tiny.json"


def test_a_testbed_only_set_loads_as_before(stored, tmp_path):
    old = load_baselines(_testbed_only_copy(stored[1], tmp_path / "old"))
    assert not old.has_bandit and old.bandit_rows is None and old.bandit_cells("mlp") == ()
    assert old.agent_config("mlp") == {} and bandit_stale_reasons(old) == {}
    assert len(old.rows) == len(load_baselines(stored[1]).rows)


@pytest.mark.parametrize("damage", ["bandit cell", "run.json"])
def test_an_unfinished_reproduce_run_is_refused(stored, tmp_path, damage):
    run = tmp_path / "run"
    shutil.copytree(stored[0], run)
    if damage == "run.json":  # a first session stopped before its end writes none
        (run / "run.json").unlink()
        message = "unfinished \\(no run.json"
    else:
        cell = next(c for c in build_cells(_tiny_preset(), ("mlp", "uniform")) if c.kind == "bandit")
        next((run / "cells").glob(f"{cell.id}*")).unlink()
        message = r"unfinished \(1 planned cells .* mlp bandit 0 of 1"
    with pytest.raises(ValueError, match=message):
        store_baselines(run, tmp_path / "stored", "tiny", "x")
    assert not (tmp_path / "stored" / "tiny.json").exists()


def test_the_store_baselines_command_stores_both_sides_of_a_reproduce_run(stored, tmp_path, capsys):
    folder = tmp_path / "mine"
    argv = ["store-baselines", str(stored[0]), "lab", "--command", "decision-bench reproduce (tiny preset)",
            "--folder", str(folder)]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == f"and {len(SEEDS) * STEPS * 2} bandit rows of mlp, uniform in {folder / 'lab_bandit.csv'}"
    assert printed[2].endswith(f"--baselines {folder / 'lab.json'} --agent-file FILE --out DIR [--bandit]")
    mine, theirs = load_baselines(folder / "lab.json"), load_baselines(stored[1])
    pd.testing.assert_frame_equal(mine.bandit_rows, theirs.bandit_rows)
    assert mine.bandit_problems == theirs.bandit_problems and mine.problems == theirs.problems


def test_leaderboard_bandit_pairs_final_regret_seed_by_seed(stored, tmp_path, capsys):
    out = tmp_path / "board"
    argv = ["leaderboard", "--agents", "mlp", "--set", "mlp.hidden_sizes=8", "--set", "mlp.num_steps=10",
            "--baselines", str(stored[1]), "--bandit", "--out", str(out), "--no-progress"]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("--bandit: estimate: ") and "1 bandit runs (60 seed-steps)" in printed.splitlines()[0]
    mine = "mlp (hidden_sizes=8 num_steps=10)"
    # A fresh run of the same agent on the stored env kwargs, steps and seeds ...
    fresh = run_bandit("mlp", "NeuralBandit-v0", STEPS, list(SEEDS), env_kwargs=dict(ENV_KWARGS),
                       agent_kwargs={"hidden_sizes": (8,), "num_steps": 10}, progress=False)
    np.testing.assert_array_equal(_finals(pd.read_csv(out / "bandit.csv"), "mlp"), _finals(fresh, "mlp"))
    # ... minus the stored rows, by hand: mean and standard error over seeds.
    rows = load_baselines(stored[1]).bandit_rows
    paired = pd.read_csv(out / "leaderboard_bandit_paired.csv").set_index("baseline")
    assert list(paired.index) == ["mlp", "uniform"] and (paired["agent"] == mine).all()
    for baseline in ("mlp", "uniform"):
        difference = _finals(fresh, "mlp") - _finals(rows, baseline)
        assert paired.at[baseline, "difference"] == pytest.approx(difference.mean(), abs=1e-12)
        assert paired.at[baseline, "difference_se"] == pytest.approx(difference.std(ddof=1) / np.sqrt(3), abs=1e-12)
        assert paired.at[baseline, "problems"] == 3
    scores = pd.read_csv(out / "leaderboard_bandit.csv").set_index("agent")
    assert list(scores.index) == [mine, "mlp", "uniform"]
    assert list(scores["source"]) == ["yours", "stored", "stored"]
    uniform = _finals(rows, "uniform")
    assert scores.at["uniform", "final_regret_mean"] == pytest.approx(uniform.mean(), abs=1e-12)
    assert scores.at["uniform", "final_regret_mean_se"] == pytest.approx(uniform.std(ddof=1) / np.sqrt(3), abs=1e-12)
    assert scores.at["uniform", "final_regret_median"] == pytest.approx(np.median(uniform), abs=1e-12)
    assert scores.at["uniform", "log_final_regret_mean"] == pytest.approx(np.log(uniform).mean(), abs=1e-12)
    text = (out / "leaderboard.md").read_text()
    assert "## Decision side" in text and "## Paired differences" in text  # beside the d_KL tables
    assert "baseline mlp ran with hidden_sizes=8 num_steps=20 (the set's overrides)" in text
    # Two baselines: no trend is fitted, and the sentence says so.
    assert "the baselines give 2 points with both" in text and f"needs at least {MIN_TREND_POINTS}" in text
    if plotting_available():
        assert (out / "leaderboard_regret_vs_dkl10.png").stat().st_size > 0
        assert "Figure: leaderboard_regret_vs_dkl10.png" in text


def test_estimate_states_both_sides_costs_and_runs_nothing(stored, tmp_path, capsys):
    out = tmp_path / "never"
    argv = ["leaderboard", "--agents", "mlp", "--baselines", str(stored[1]), "--bandit", "--estimate",
            "--out", str(out)]
    assert cli_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    testbed_cells = len(load_baselines(stored[1]).cells("mlp"))
    assert lines[0].startswith(f"testbed: estimate: {testbed_cells} testbed cells")
    assert lines[1].startswith("--bandit: estimate: 1 bandit runs (60 seed-steps)")
    assert not out.exists()
    # Without --bandit, the testbed line alone; --out is not needed to ask.
    assert cli_main(["leaderboard", "--agents", "mlp", "--baselines", str(stored[1]), "--estimate"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_bandit_with_a_set_without_bandit_rows_is_one_line(stored, tmp_path, capsys):
    old = _testbed_only_copy(stored[1], tmp_path / "old")
    argv = ["leaderboard", "--agents", "mlp", "--baselines", str(old), "--bandit", "--out", str(tmp_path / "b")]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"the baselines {str(old)!r} hold no bandit rows; stored sets with bandit rows:" in err
    assert not (tmp_path / "b").exists()


def _points(regrets, dkls, names):
    return pd.DataFrame({"agent": names, "dkl_10": dkls, "regret": regrets})


def test_the_trend_sentence_places_the_agent_by_residual_standard_deviations():
    names = [f"b{i}" for i in range(MIN_TREND_POINTS)]
    x = np.array([0.5, 1.0, 1.5, 2.0, 3.0])
    residuals = np.array([0.1, -0.2, 0.1, 0.05, -0.05])
    y = 0.3 + 0.8 * np.log(x) + residuals
    # By hand: least squares of log regret on log d_KL^10, residual sd with n - 2.
    lx = np.log(x)
    slope = np.sum((lx - lx.mean()) * (y - y.mean())) / np.sum((lx - lx.mean()) ** 2)
    intercept = y.mean() - slope * lx.mean()
    sd = np.sqrt(np.sum((y - intercept - slope * lx) ** 2) / 3)
    yours = intercept + slope * np.log(1.2) + 2.5 * sd  # 2.5 residual sds above
    points = _points(np.exp(np.append(y, yours)), np.append(x, 1.2), names + ["mine"])
    sentence, fit = regret_trend(points, "mine", names)
    assert fit["slope"] == pytest.approx(slope) and fit["residual_sd"] == pytest.approx(sd)
    assert fit["z"] == pytest.approx(2.5)
    assert sentence.startswith("mine lies above the baselines' trend") and "by 2.5 of the baselines' residual" in sentence
    below = _points(np.exp(np.append(y, yours - 4 * sd)), np.append(x, 1.2), names + ["mine"])
    assert "mine lies below" in regret_trend(below, "mine", names)[0]
    assert fit["extrapolated"] is False and "extrapolated" not in sentence  # 1.2 lies in [0.5, 3]
    # Far outside the baselines' d_KL^10 the line is extrapolated, and the sentence says so.
    outside = _points(np.exp(np.append(y, yours)), np.append(x, 9.0), names + ["mine"])
    sentence, fit = regret_trend(outside, "mine", names)
    assert fit["extrapolated"] is True
    assert "Its d_KL^10 (9) lies outside the baselines' range [0.5, 3]: the trend is extrapolated" in sentence
    # One baseline fewer: refused, saying so.
    sentence, fit = regret_trend(points, "mine", names[:-1])
    assert fit is None and sentence.startswith("No trend of regret on d_KL^10 fitted: the baselines give 4 points")


def test_the_figure_is_drawn_with_the_trend(tmp_path):
    pytest.importorskip("matplotlib")
    from decision_bench.analysis.figures import plot_leaderboard_regret_vs_dkl10

    names = ["mlp", "ensemble", "ensemble+", "epinet", "bbb"]
    points = _points([30.0, 25.0, 12.0, 15.0, 40.0, 20.0], [1.5, 1.3, 0.9, 1.1, 1.6, 1.0], names + ["mine"])
    _, fit = regret_trend(points, "mine", names)
    paths = plot_leaderboard_regret_vs_dkl10(points, ["mine"], fit, tmp_path)
    assert [p.name for p in paths] == ["leaderboard_regret_vs_dkl10.png", "leaderboard_regret_vs_dkl10.pdf"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_an_agent_whose_seeds_ran_a_cell_each_is_stored_with_its_groups_and_its_cells_are_reusable(tmp_path):
    from decision_bench.experiments.baselines import reusable_bandit_rows
    from decision_bench.experiments.store import ResultsStore

    preset = dataclasses.replace(_tiny_preset(), bandit_seeds_per_cell=(("uniform", 1),))
    run = tmp_path / "run"
    run_preset(preset, run, progress=False)
    loaded = load_baselines(store_baselines(run, tmp_path / "stored", "split", "decision-bench reproduce (split)"))
    record = loaded.meta["bandit"]["agents"]
    assert record["uniform"]["seeds_per_cell"] == 1 and "seeds_per_cell" not in record["mlp"]
    problem = {"env": "NeuralBandit-v0", "num_steps": STEPS, **ENV_KWARGS}
    assert loaded.bandit_problems == ((tuple(sorted(problem.items())), SEEDS),)  # the union of the groups
    cells = [c for c in build_cells(preset, preset.agents) if c.kind == "bandit"]
    uniform = [c for c in cells if c.agent == "uniform"]
    assert [c.seeds for c in uniform] == [(0,), (1,), (2,)]
    assert loaded.bandit_cells("uniform") == tuple(uniform)
    assert [c.seeds for c in loaded.bandit_cells("mlp")] == [SEEDS]  # and a user's agent: all seeds at once
    store = ResultsStore(run / "cells")
    for cell in uniform:  # a stored cell's rows are its cell file's, as run_bandit returned them
        reused = reusable_bandit_rows(loaded, cell)
        kept = store.read(cell)
        assert list(reused.columns) == list(kept.columns)
        np.testing.assert_array_equal(reused["seed"], kept["seed"])
        np.testing.assert_array_equal(reused["step"], kept["step"])
        np.testing.assert_array_equal(reused["cumulative_regret"], kept["cumulative_regret"])
    mlp = next(c for c in cells if c.agent == "mlp")
    assert reusable_bandit_rows(loaded, mlp) is None  # stored with overrides: never the defaults' rows
    other_seeds = dataclasses.replace(uniform[0], seeds=(0, 1))
    assert reusable_bandit_rows(loaded, other_seeds) is None  # not a cell the set ran
