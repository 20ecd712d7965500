"""The bootstrap's size rule and the skewed-interval rule (issue 20, case 2): an
interval is either backed by enough resamples or refused, and one that excludes
its own estimate is marked and never gives a significance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.analysis import analyze
from decision_bench.analysis.correlation import (
    MIN_VERDICT_POINTS,
    SKEWED_NOTE,
    CorrelationResult,
    check_num_resamples,
    correlate,
    interval_text,
    min_resamples,
    percentile_interval,
)
from decision_bench.analysis.pipeline import POSITIVE, SKEWED, UNDECIDED, headline, too_few_for_verdict, verdict
from decision_bench.analysis.robustness import bootstrap_model_correlations
from decision_bench.cli.reproduce import reproduce


def test_min_resamples_puts_ten_draws_beyond_each_bound():
    assert min_resamples() == 200  # 90%: 5% tails
    assert min_resamples((2.5, 97.5)) == 400
    assert min_resamples((10.0, 95.0)) == 200  # the smaller tail decides
    with pytest.raises(ValueError, match="percentiles"):
        min_resamples((0.0, 100.0))


@pytest.mark.parametrize("bad", [1, 199, 0, -5, 200.0, True])
def test_correlate_refuses_a_bootstrap_too_small_for_its_interval(bad):
    x = np.arange(1.0, 11.0)
    with pytest.raises(ValueError, match=r"^num_resamples must be an integer >= 200 for a 90% percentile interval") as err:
        correlate(x, x**2, num_resamples=bad)
    assert "\n" not in str(err.value)


def test_the_level_sets_the_minimum():
    x = np.arange(1.0, 11.0)
    correlate(x, x**2, num_resamples=200)  # enough for 90%
    with pytest.raises(ValueError, match=">= 400 for a 95% percentile interval"):
        correlate(x, x**2, num_resamples=200, percentiles=(2.5, 97.5))
    assert check_num_resamples(np.int64(400), (2.5, 97.5)) == 400


def test_an_interval_from_too_few_defined_draws_is_undefined():
    draws = np.r_[np.linspace(-1, 1, 199), [np.nan] * 100]
    assert all(np.isnan(percentile_interval(draws)))
    low, high = percentile_interval(np.r_[draws, 0.5])  # 200 finite draws
    assert -1 < low < high < 1


def test_points_with_too_many_degenerate_resamples_are_undecided():
    # Four tied x values of five: a resample misses the fifth, so has constant x (no
    # correlation), with chance (4/5)^5 = 1/3, so 200 resamples leave fewer than 200 defined draws.
    result = correlate([1.0, 1.0, 1.0, 1.0, 2.0], [1.0, 3.0, 2.0, 4.0, 5.0], num_resamples=200, rng=0)
    assert np.isnan(result.pearson_ci_low) and verdict(result) == UNDECIDED


def _result(estimate, low, high):
    return CorrelationResult(estimate, low, high, 0.1, -0.5, 0.6, 7)


def test_an_interval_excluding_its_estimate_is_marked_and_gives_no_significance():
    skewed = _result(-0.852, 0.999, 0.999)  # the report line
    assert verdict(skewed) == SKEWED
    assert verdict(_result(0.5, 0.2, 0.8)) == POSITIVE
    assert verdict(_result(0.9, 0.2, 0.8)) == SKEWED  # above its interval: still not significant
    assert interval_text(-0.852, 0.999, 0.999) == f"-0.852 [0.999, 0.999] ({SKEWED_NOTE})"
    assert interval_text(0.5, 0.2, 0.8) == "0.500 [0.200, 0.800]"
    text = headline({"agent": {"dkl_10": skewed, "dkl_1": _result(0.1, -0.3, 0.4)}})
    assert "significantly positive" not in text.split("**")[2].split("This run")[0]
    assert SKEWED_NOTE in text


def test_model_correlations_refuse_a_bootstrap_too_small_for_their_level():
    with pytest.raises(ValueError, match=">= 400 for a 95% percentile interval"):
        bootstrap_model_correlations(None, "dkl_10", "spearman", num_resamples=300, level=0.95)


def test_analyze_command_refuses_too_few_resamples_in_one_line(tmp_path, capsys):
    assert cli.main(["analyze", str(tmp_path), "--resamples", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resamples must be an integer in [200, " in err[0]


def test_reproduce_refuses_too_few_resamples_before_running_anything(tmp_path):
    with pytest.raises(ValueError, match=r"^num_resamples must be an integer >= 200"):
        reproduce("demo", tmp_path / "run", num_resamples=1, progress=False)
    assert not (tmp_path / "run").exists()


def test_the_printed_table_notes_an_interval_that_excludes_its_estimate(capsys):
    from decision_bench.cli.analyze import print_skewed_intervals

    table = pd.DataFrame([
        {"metric": "dkl_10", "level": "agent", **dataclasses.asdict(_result(-0.852, 0.999, 0.999))},
        {"metric": "dkl_1", "level": "agent", **dataclasses.asdict(_result(0.5, 0.2, 0.8))},
    ])  # fmt: skip
    print_skewed_intervals(table)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"note: agent dkl_10 pearson_log: {SKEWED_NOTE} (see report.md)"]


def _perfect_points(num_agents: int) -> CorrelationResult:
    kl = np.linspace(0.5, 2.0, num_agents)
    return correlate(kl, 10 * kl**2, num_resamples=1000, rng=0)  # an exact power law: Pearson (log) 1


def test_three_perfectly_correlated_points_get_no_verdict_and_eight_do():
    few = _perfect_points(3)
    assert few.pearson_ci_low == pytest.approx(1.0)  # the interval says [1, 1] ...
    assert verdict(few) == too_few_for_verdict(3) == f"too few points for a verdict (n = 3 < {MIN_VERDICT_POINTS})"
    text = headline({"agent": {"dkl_10": few, "dkl_1": few}})  # ... and decides nothing
    assert "significant" not in text and "does NOT show" not in text
    assert text.count(too_few_for_verdict(3)) == 2
    assert verdict(_perfect_points(8)) == POSITIVE
    assert verdict(_perfect_points(MIN_VERDICT_POINTS)) == POSITIVE  # the minimum itself is enough


def _write_run(directory, num_agents: int, num_seeds: int = 2) -> None:
    """testbed.csv and bandit.csv where regret = 10 d_KL^2 for every agent and seed (one problem)."""
    testbed, bandit = [], []
    for i in range(num_agents):
        for seed in range(num_seeds):
            kl = 0.5 + 0.25 * i + 0.01 * seed
            common = dict(agent=f"agent{i}", input_dim=2, temperature=0.1, seed=seed)
            for tau in (1, 10):
                testbed.append({**common, "num_train": 10, "tau": tau, "kappa": np.nan, "kl": kl * tau})
            bandit.append({**common, "env": "nb", "num_actions": 4, "step": 10, "cumulative_regret": 10 * kl**2,
                           "final_regret": 10 * kl**2, "error": ""})  # fmt: skip
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # no mlp, no priors: figures skipped
def test_analyze_gives_three_agents_no_verdict_in_table_report_and_headline(tmp_path, monkeypatch):
    monkeypatch.setattr("decision_bench.analysis.pipeline.plotting_available", lambda: False)  # tables only
    _write_run(tmp_path, num_agents=3)
    result = analyze(tmp_path, num_resamples=1000)  # 1000: the interval of 3 points is defined, [1, 1]
    table = pd.read_csv(tmp_path / "correlations.csv").set_index(["level", "metric"])
    agent_row = table.loc[("agent", "dkl_10")]
    assert agent_row["n"] == 3 and agent_row["pearson_ci_low"] == pytest.approx(1.0)  # was "significantly positive"
    assert agent_row["verdict"] == too_few_for_verdict(3)
    assert table.loc[("agent_seed", "dkl_10"), "verdict"] == POSITIVE  # 6 points: enough
    report = result.report.read_text()
    headline_text = report.split("\n\n")[1]
    assert headline_text.startswith("**Headline (agent points, n = 3)") and "significant" not in headline_text
    assert f"d_KL^10, tau = 10, iid inputs)**: {too_few_for_verdict(3)}: Pearson (log)" in report
    assert "agent points (n = 3 agents): marginal d_KL^1 too few points" in report


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_analyze_gives_eight_agents_a_verdict(tmp_path, monkeypatch):
    monkeypatch.setattr("decision_bench.analysis.pipeline.plotting_available", lambda: False)
    _write_run(tmp_path, num_agents=8)
    analyze(tmp_path, num_resamples=200)
    table = pd.read_csv(tmp_path / "correlations.csv").set_index(["level", "metric"])
    assert table.loc[("agent", "dkl_10"), "verdict"] == POSITIVE
    assert "reproduces the papers' headline" not in (tmp_path / "report.md").read_text()  # marginal positive too
