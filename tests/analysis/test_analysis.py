"""Tests for decision_bench.analysis: correlations, bootstrap, join, analyze, command."""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from decision_bench.analysis import (
    CORRELATION_COLUMNS,
    LEVELS,
    CorrelationResult,
    agent_level_points,
    analyze,
    bandit_final_regret,
    bootstrap_correlations,
    correlate,
    join_regret,
    pearson,
    pearson_log,
    relative_points,
    spearman,
)
from decision_bench import cli
from decision_bench.cli.analyze import register
from decision_bench.analysis.pipeline import NEGATIVE, POSITIVE, INSIGNIFICANT, render_report, verdict

# ----------------------------------------------------------------------------- correlations


def test_correlations_match_scipy_on_known_data():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=40)
    y = x**1.5 * rng.lognormal(sigma=0.5, size=40)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert pearson_log(x, y) == pytest.approx(stats.pearsonr(np.log(x), np.log(y)).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    # Ties get average ranks, as in scipy.
    xt, yt = np.round(x, 0) + 1, np.round(y, 0) + 1
    assert spearman(xt, yt) == pytest.approx(stats.spearmanr(xt, yt).statistic, abs=1e-12)


def test_correlations_of_exact_relations():
    x = np.array([0.1, 0.5, 1.0, 2.0, 5.0])
    assert pearson_log(x, 3 * x**2) == pytest.approx(1.0, abs=1e-12)
    assert pearson_log(x, 1 / x) == pytest.approx(-1.0, abs=1e-12)
    assert spearman(x, np.exp(x)) == 1.0
    # ranks (2, 4, 1, 3) against (1, 2, 3, 4): sum of squared rank differences 10 = (n^3 - n)/12
    assert spearman([1, 2, 3, 4], [2, 4, 1, 3]) == 0.0
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_bootstrap_resamples_points_with_a_seedable_generator():
    rng = np.random.default_rng(1)
    x, y = rng.lognormal(size=15), rng.lognormal(size=15)
    draws = bootstrap_correlations(x, y, num_resamples=50, rng=7)
    assert draws["pearson_log"].shape == draws["spearman"].shape == (50,)
    # The same Generator stream gives the same resamples; check each against scipy.
    idx = np.random.default_rng(7).integers(0, 15, size=(50, 15))
    for b in (0, 17, 49):
        xs, ys = x[idx[b]], y[idx[b]]
        assert draws["pearson_log"][b] == pytest.approx(stats.pearsonr(np.log(xs), np.log(ys)).statistic, abs=1e-12)
        assert draws["spearman"][b] == pytest.approx(stats.spearmanr(xs, ys).statistic, abs=1e-12)
    again = bootstrap_correlations(x, y, num_resamples=50, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(again["spearman"], draws["spearman"])
    other = bootstrap_correlations(x, y, num_resamples=50, rng=8)
    assert not np.array_equal(other["spearman"], draws["spearman"])


def test_correlate_interval_is_the_5th_and_95th_percentile():
    rng = np.random.default_rng(2)
    x, y = rng.lognormal(size=30), rng.lognormal(size=30)
    result = correlate(x, y, num_resamples=200, rng=3)
    draws = bootstrap_correlations(x, y, num_resamples=200, rng=3)
    assert (result.pearson_ci_low, result.pearson_ci_high) == tuple(np.percentile(draws["pearson_log"], [5, 95]))
    assert (result.spearman_ci_low, result.spearman_ci_high) == tuple(np.percentile(draws["spearman"], [5, 95]))
    assert result.n == 30
    assert result.pearson_ci_low <= result.pearson_ci_high


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: correlate([1, 2], [1, 2]), "at least 3 points"),
        (lambda: correlate([1, 2, 3], [1, 2]), "equal length"),
        (lambda: correlate([1, 2, 3], [1, 2, 3], num_resamples=0), "num_resamples"),
        (lambda: correlate([1, 2, 3], [1, -2, 3]), "y > 0"),
        (lambda: correlate([1, 2, np.nan], [1, 2, 3]), "finite"),
        (lambda: correlate([1, 2, 3], [1, 2, 3], percentiles=(95, 5)), "percentiles"),
    ],
)
def test_correlate_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bootstrap_intervals_cover_a_known_correlation_at_about_the_nominal_rate():
    # (log x, log y) bivariate normal with correlation rho: the Pearson-log target
    # is rho and the Spearman target is (6 / pi) arcsin(rho / 2).
    rho, n, reps, resamples = 0.5, 80, 300, 400
    targets = {"pearson_log": rho, "spearman": 6 / np.pi * np.arcsin(rho / 2)}
    rng = np.random.default_rng(123)
    covered = {k: 0 for k in targets}
    cov = [[1.0, rho], [rho, 1.0]]
    for _ in range(reps):
        z = rng.multivariate_normal([0.0, 0.0], cov, size=n)
        result = correlate(np.exp(z[:, 0]), np.exp(z[:, 1]), num_resamples=resamples, rng=rng)
        covered["pearson_log"] += result.pearson_ci_low <= targets["pearson_log"] <= result.pearson_ci_high
        covered["spearman"] += result.spearman_ci_low <= targets["spearman"] <= result.spearman_ci_high
    # If the intervals had exactly nominal 90% coverage, the count would be
    # Binomial(reps, 0.9); accept the central 99.8% of that distribution. (The
    # percentile bootstrap slightly under-covers at small n; at n = 80 the bias is
    # well inside this band.)
    low, high = stats.binom.ppf(0.001, reps, 0.9), stats.binom.isf(0.001, reps, 0.9)
    for name, count in covered.items():
        assert low <= count <= high, (name, count, (low, high))


# ----------------------------------------------------------------------------- hand-made results

AGENTS = ("mlp", "ensemble", "ensemble+", "dropout", "hypermodel")
SEEDS = (0, 1, 2, 3)


def _zero_spearman_permutation(n: int) -> np.ndarray:
    """A permutation of 0..n-1 whose Spearman correlation with 0..n-1 is exactly 0."""
    target = (n**3 - n) // 6  # sum of squared rank differences at rho = 0
    rng = np.random.default_rng(0)
    while True:
        perm = rng.permutation(n)
        if int(np.sum((perm - np.arange(n)) ** 2)) == target:
            return perm


def _handmade(directory):
    """testbed.csv and bandit.csv where regret = 50 * (d_KL^10)^2 per agent and seed,
    d_KL^{10,kappa=2} = 2 d_KL^10, and d_KL^1 has Spearman correlation exactly 0 with regret.

    Returns the per-(agent, seed) truth: columns agent, seed, dkl_1, dkl_10, regret.
    """
    points = list(itertools.product(AGENTS, SEEDS))
    n = len(points)
    dkl10 = 0.5 + 0.1 * np.arange(n)  # distinct, increasing with the point index
    regret = 50 * dkl10**2
    dkl1 = 0.1 + 0.01 * _zero_spearman_permutation(n)
    testbed, bandit = [], []
    for i, (agent, seed) in enumerate(points):
        # Two problems whose kl average to the per-point value.
        for num_train, factor in ((10, 1.25), (100, 0.75)):
            common = dict(agent=agent, input_dim=2, num_train=num_train, temperature=0.1, seed=seed,
                          kl_stderr=0.01, accuracy=0.8, ece=0.05, fraction_finite=1.0,
                          fit_seconds=1.0, eval_seconds=1.0)  # fmt: skip
            testbed.append({**common, "tau": 1, "kappa": np.nan, "kl": dkl1[i] * factor})
            testbed.append({**common, "tau": 10, "kappa": np.nan, "kl": dkl10[i] * factor})
            testbed.append({**common, "tau": 10, "kappa": 2, "kl": 2 * dkl10[i] * factor})
        for step in (100, 200, 300):
            bandit.append(dict(agent=agent, env="neural_bandit", input_dim=2, num_actions=40, temperature=0.1,
                               seed=seed, step=step, cumulative_regret=regret[i] * step / 300,
                               final_regret=regret[i], wall_seconds=2.0, error=""))  # fmt: skip
    # A failed run (agent in the testbed, seed 9): must be left out, not joined
    # to the agent's testbed average.
    bandit.append(dict(agent="mlp", env="neural_bandit", input_dim=2, num_actions=40, temperature=0.1, seed=9,
                       step=300, cumulative_regret=np.nan, final_regret=np.nan, wall_seconds=0.1,
                       error="FloatingPointError: nan loss"))  # fmt: skip
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)
    return pd.DataFrame({"agent": [p[0] for p in points], "seed": [p[1] for p in points],
                         "dkl_1": dkl1, "dkl_10": dkl10, "regret": regret})  # fmt: skip


def test_join_averages_problems_and_takes_one_regret_per_run(tmp_path):
    truth = _handmade(tmp_path)
    testbed, bandit = pd.read_csv(tmp_path / "testbed.csv"), pd.read_csv(tmp_path / "bandit.csv")
    with pytest.warns(RuntimeWarning, match="failed bandit runs"):
        regret = bandit_final_regret(bandit)
    assert len(regret) == len(truth) and set(regret["num_runs"]) == {1}
    with pytest.warns(RuntimeWarning, match="failed bandit runs"):
        joined = join_regret(testbed, bandit)
    assert sorted(joined["metric"].unique()) == ["dkl_1", "dkl_10", "dkl_10_kappa2"]
    assert joined["seed_matched"].all()
    for metric in ("dkl_1", "dkl_10"):
        got = joined[joined["metric"] == metric].merge(truth, on=["agent", "seed"])
        assert len(got) == len(truth)
        np.testing.assert_allclose(got["kl"], got[metric], rtol=1e-12)
        np.testing.assert_allclose(got["regret_x"], got["regret_y"], rtol=1e-12)


def test_join_falls_back_to_the_agent_average_for_unmatched_seeds():
    testbed = pd.DataFrame({"agent": ["a", "a"], "input_dim": 2, "num_train": 10, "temperature": 0.1,
                            "tau": 10, "kappa": np.nan, "seed": [0, 1], "kl": [1.0, 3.0]})  # fmt: skip
    bandit = pd.DataFrame({"agent": "a", "env": "nb", "input_dim": 2, "num_actions": 4, "temperature": 0.1,
                           "seed": [0, 5], "step": 10, "cumulative_regret": [1.0, 2.0],
                           "final_regret": [1.0, 2.0]})  # fmt: skip
    joined = join_regret(testbed, bandit, metrics=["dkl_10"])
    assert joined[["seed", "kl", "seed_matched"]].values.tolist() == [[0, 1.0, True], [5, 2.0, False]]


def test_analyze_writes_the_expected_correlations_figures_and_report(tmp_path):
    truth = _handmade(tmp_path)
    with pytest.warns(RuntimeWarning, match="failed bandit runs"):
        result = analyze(tmp_path, num_resamples=200, seed=0)
    table = pd.read_csv(tmp_path / "correlations.csv")
    assert tuple(table.columns) == CORRELATION_COLUMNS
    assert CORRELATION_COLUMNS[:8] == ("metric", "pearson_log", "pearson_ci_low", "pearson_ci_high",
                                       "spearman", "spearman_ci_low", "spearman_ci_high", "n")  # fmt: skip
    assert list(table["level"]) == [level for level in LEVELS for _ in range(3)]
    assert set(table.loc[table["level"] == "agent", "n"]) == {len(AGENTS)}
    assert set(table.loc[table["level"] == "agent_seed_relative", "n"]) == {len(truth)}
    rows = table[table["level"] == "agent_seed"].set_index("metric")
    assert list(rows.index) == ["dkl_1", "dkl_10", "dkl_10_kappa2"]
    assert set(rows["n"]) == {len(truth)}
    # Joint metrics: regret is a monotone power of d_KL^10, so both coefficients
    # and every bootstrap resample are exactly 1.
    for metric in ("dkl_10", "dkl_10_kappa2"):
        for col in ("pearson_log", "pearson_ci_low", "pearson_ci_high", "spearman", "spearman_ci_low", "spearman_ci_high"):
            assert rows.loc[metric, col] == pytest.approx(1.0, abs=1e-9), (metric, col)
    # Marginal metric: built to have Spearman 0 with regret.
    marginal = rows.loc["dkl_1"]
    assert marginal["spearman"] == pytest.approx(0.0, abs=1e-12)
    expected = stats.pearsonr(np.log(truth["dkl_1"]), np.log(truth["regret"])).statistic
    assert marginal["pearson_log"] == pytest.approx(expected, abs=1e-12)
    assert marginal["spearman_ci_low"] < 0 < marginal["spearman_ci_high"]
    assert marginal["pearson_ci_low"] < 0 < marginal["pearson_ci_high"]
    pd.testing.assert_frame_equal(result.correlations, table, check_dtype=False)

    stems = ["fig2_normalised_kl", "fig5_prior_functions", "fig7_regret_curves",
             "fig8_regret_vs_dkl1", "fig9_regret_vs_dkl10", "fig9b_regret_vs_dkl10_kappa2",
             "fig10_agent_regret_vs_kl"]  # fmt: skip
    for stem in stems:
        for fmt in ("png", "pdf"):
            path = tmp_path / f"{stem}.{fmt}"
            assert path.stat().st_size > 1000, path
    assert (tmp_path / "fig2_normalised_kl.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "fig2_normalised_kl.pdf").read_bytes()[:5] == b"%PDF-"
    report = (tmp_path / "report.md").read_text()
    assert "**Joint prediction quality (d_KL^10, tau = 10, iid inputs)**: significantly positive: " in report
    assert "**Marginal prediction quality (d_KL^1, tau = 1)**: not significant: " in report
    assert "- (agent, seed) points (n = 20 points): marginal d_KL^1 not significant" in report
    assert "joint d_KL^10 significantly positive" in report
    assert "Pearson (log) 1.000 [1.000, 1.000]" in report
    assert "![fig9_regret_vs_dkl10](fig9_regret_vs_dkl10.png)" in report
    assert "![fig10_agent_regret_vs_kl](fig10_agent_regret_vs_kl.png)" in report
    agents = pd.read_csv(tmp_path / "joined_agents.csv")
    assert len(agents) == 3 * len(AGENTS) and set(agents["num_bandit_seeds"]) == {len(SEEDS)}
    assert "## Data notes" in report and "failed bandit runs" in report  # the failed mlp seed-9 run

    # Same seed, same numbers; the bootstrap seed is honoured.
    with pytest.warns(RuntimeWarning):
        again = analyze(tmp_path, num_resamples=200, seed=0).correlations
    pd.testing.assert_frame_equal(again, result.correlations)
    with pytest.warns(RuntimeWarning):
        other = analyze(tmp_path, num_resamples=200, seed=1).correlations
    assert other.loc[0, "spearman_ci_low"] != result.correlations.loc[0, "spearman_ci_low"]


# ----------------------------------------------------------------------------- levels

SEED_AGENTS = ("a", "b", "c", "d", "e")
AGENT_KL = np.array([0.5, 0.6, 0.8, 1.0, 1.3])  # each agent's joint d_KL^10 before seed effects
TESTBED_SEED_EFFECT = np.array([4.0, 0.25, 2.0, 0.5])  # testbed seed s multiplies every agent's d_KL
BANDIT_SEED_EFFECT = TESTBED_SEED_EFFECT**-3.0  # bandit seed s multiplies every agent's regret


def _seed_effects(directory):
    """Tables where regret = 100 * k_a^2 * e_s and d_KL^10 = k_a * t_s for agent a, seed s.

    The shared seed effects (t_s, e_s) are anti-aligned and much larger than the
    agent spread, so the (agent, seed) correlation is strongly negative, while
    the agent means (k_a mean(t), 100 k_a^2 mean(e)) and the relative values
    (k_a / mean(k), k_a^2 / mean(k^2)) are exact power laws of each other:
    Pearson (log) and Spearman exactly 1. d_KL^1 = m_a * t_s with m_a ordered so
    the agents' Spearman correlation with regret is exactly 0.
    """
    marginal = 0.1 * (1 + 0.1 * _zero_spearman_permutation(len(SEED_AGENTS)))
    testbed, bandit = [], []
    for (i, agent), (s, seed) in itertools.product(enumerate(SEED_AGENTS), enumerate(range(len(TESTBED_SEED_EFFECT)))):
        for num_train, factor in ((10, 1.5), (100, 0.5)):  # two problems averaging to the point's value
            common = dict(agent=agent, input_dim=2, num_train=num_train, temperature=0.1, seed=seed)
            testbed.append({**common, "tau": 1, "kappa": np.nan, "kl": marginal[i] * TESTBED_SEED_EFFECT[s] * factor})
            testbed.append({**common, "tau": 10, "kappa": np.nan, "kl": AGENT_KL[i] * TESTBED_SEED_EFFECT[s] * factor})
        regret = 100 * AGENT_KL[i] ** 2 * BANDIT_SEED_EFFECT[s]
        bandit.append(dict(agent=agent, env="nb", input_dim=2, num_actions=4, temperature=0.1, seed=seed,
                           step=10, cumulative_regret=regret, final_regret=regret, error=""))  # fmt: skip
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)
    return marginal


@pytest.mark.filterwarnings("ignore:figure fig5_prior_functions skipped:RuntimeWarning")
def test_agent_and_relative_levels_remove_shared_seed_effects(tmp_path):
    marginal = _seed_effects(tmp_path)
    # 400 resamples: with few agents some resamples are degenerate, and an interval needs 200 defined draws.
    with pytest.warns(RuntimeWarning, match="figure fig2_normalised_kl skipped"):  # no mlp in these tables
        result = analyze(tmp_path, num_resamples=400, seed=0)
    table = result.correlations.set_index(["level", "metric"])
    assert list(table.index) == [(level, m) for level in LEVELS for m in ("dkl_1", "dkl_10")]

    # The level inputs, exactly.
    agents = result.agents[result.agents["metric"] == "dkl_10"].set_index("agent").loc[list(SEED_AGENTS)]
    np.testing.assert_allclose(agents["kl"], AGENT_KL * TESTBED_SEED_EFFECT.mean(), rtol=1e-12)
    np.testing.assert_allclose(agents["regret"], 100 * AGENT_KL**2 * BANDIT_SEED_EFFECT.mean(), rtol=1e-12)
    joint = result.joined[result.joined["metric"] == "dkl_10"].set_index(["agent", "seed"])
    for i, agent in enumerate(SEED_AGENTS):
        np.testing.assert_allclose(joint.loc[agent, "kl_relative"], AGENT_KL[i] / AGENT_KL.mean(), rtol=1e-12)
        np.testing.assert_allclose(
            joint.loc[agent, "regret_relative"], AGENT_KL[i] ** 2 / np.mean(AGENT_KL**2), rtol=1e-12
        )

    # agent_seed: the seed effects win, and the number is the plain Pearson of those points.
    points = [(AGENT_KL[i] * t, 100 * AGENT_KL[i] ** 2 * e)
              for i in range(len(SEED_AGENTS)) for t, e in zip(TESTBED_SEED_EFFECT, BANDIT_SEED_EFFECT)]  # fmt: skip
    x, y = np.array(points).T
    raw = table.loc[("agent_seed", "dkl_10")]
    assert raw["pearson_log"] == pytest.approx(stats.pearsonr(np.log(x), np.log(y)).statistic, abs=1e-12)
    assert raw["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert raw["pearson_ci_high"] < 0  # significantly negative
    # The robust agent levels' inputs: every agent's regrets share the seed effects, so the
    # median is 100 k^2 median(e) and the mean log regret log(100 k^2) + mean(log e).
    np.testing.assert_allclose(
        agents["regret_median"], 100 * AGENT_KL**2 * np.median(BANDIT_SEED_EFFECT), rtol=1e-12
    )
    np.testing.assert_allclose(
        agents["regret_log_mean"], np.log(100 * AGENT_KL**2) + np.log(BANDIT_SEED_EFFECT).mean(), rtol=1e-12
    )
    # agent, relative and robust agent levels: exact power laws, every resample gives 1.
    columns = ("pearson_log", "pearson_ci_low", "pearson_ci_high", "spearman", "spearman_ci_low", "spearman_ci_high")
    for level in ("agent", "agent_seed_relative", "agent_median_regret", "agent_log_regret"):
        row = table.loc[(level, "dkl_10")]
        for col in columns:
            assert row[col] == pytest.approx(1.0, abs=1e-9), (level, col)
    assert table.loc[("agent", "dkl_10"), "n"] == len(SEED_AGENTS)
    assert table.loc[("agent_seed_relative", "dkl_10"), "n"] == len(SEED_AGENTS) * len(TESTBED_SEED_EFFECT)
    # The marginal: Spearman exactly 0 at the agent level and (ties by agent) the relative level.
    assert table.loc[("agent", "dkl_1"), "spearman"] == pytest.approx(0.0, abs=1e-12)
    assert table.loc[("agent_seed_relative", "dkl_1"), "spearman"] == pytest.approx(0.0, abs=1e-12)
    expected = stats.pearsonr(np.log(marginal), np.log(AGENT_KL**2)).statistic
    assert table.loc[("agent", "dkl_1"), "pearson_log"] == pytest.approx(expected, abs=1e-12)

    report = result.report.read_text()
    levels = report.split("## Level ")[1:]
    assert [block.split("`")[1] for block in levels] == list(LEVELS)
    joint_bullet = "**Joint prediction quality (d_KL^10, tau = 10, iid inputs)**: "
    assert joint_bullet + NEGATIVE + ": Pearson (log)" in levels[0]
    assert joint_bullet + POSITIVE + ": Pearson (log) 1.000 [1.000, 1.000]" in levels[1]
    assert joint_bullet + POSITIVE + ": Pearson (log) 1.000 [1.000, 1.000]" in levels[2]
    short = report.split("## In short")[1].split("\n## ")[0]
    lines = [line for line in short.splitlines() if line.startswith("- ")]
    assert len(lines) == len(LEVELS)
    assert lines[0].startswith("- (agent, seed) points (n = 20 points):")
    assert f"joint d_KL^10 {NEGATIVE} (Pearson log" in lines[0]
    assert "does not reproduce paper 000" in lines[0]
    assert lines[1].startswith("- agent points (n = 5 agents):") and f"joint d_KL^10 {POSITIVE}" in lines[1]
    assert f"joint d_KL^10 {POSITIVE}" in lines[2]
    assert lines[3].startswith("- agent points, median regret over seeds (n = 5 agents):")
    assert lines[4].startswith("- agent points, mean log regret over seeds (n = 5 agents):")
    assert "chosen before any results were seen" in report
    # Seed 1 (effect 0.25^-3 = 64) holds 64 / (1/64 + 64 + 1/8 + 8) = 89% of every agent's regret:
    # with only 4 seeds the rule does not judge (HEAVY_TAIL_MIN_SEEDS = 5).
    assert "Not judged (fewer than 5 bandit seeds): a, b, c, d, e." in report
    assert "Which level answers the papers' question" in report
    assert (tmp_path / "fig10_agent_regret_vs_kl.png").stat().st_size > 1000


def _result(low: float, high: float, value: float = 0.5) -> CorrelationResult:
    return CorrelationResult(value, low, high, value, low, high, 10)


@pytest.mark.parametrize(
    "low, high, expected",
    [(0.1, 0.9, POSITIVE), (-0.9, -0.1, NEGATIVE), (-0.2, 0.6, INSIGNIFICANT), (0.0, 0.6, INSIGNIFICANT)],
)
def test_verdict_follows_the_pearson_interval(low, high, expected):
    assert verdict(_result(low, high)) == expected


@pytest.mark.parametrize(
    "joint, marginal, joint_word, marginal_word, agreement",
    [
        ((0.2, 0.8), (-0.3, 0.4), POSITIVE, INSIGNIFICANT, "This agrees with paper 000"),
        ((-0.8, -0.2), (-0.3, 0.4), NEGATIVE, INSIGNIFICANT, "This does not reproduce paper 000"),
        ((-0.1, 0.5), (-0.7, -0.1), INSIGNIFICANT, NEGATIVE, "This does not reproduce paper 000"),
        ((0.2, 0.8), (0.1, 0.4), POSITIVE, POSITIVE, "both significantly positive"),
    ],
)
def test_report_wording_is_the_same_in_bullets_and_summary(joint, marginal, joint_word, marginal_word, agreement):
    results = {"dkl_1": _result(*marginal), "dkl_10": _result(*joint)}
    joined = pd.DataFrame({"metric": "dkl_10", "agent": ["a", "b", "c"], "seed": 0, "kl": [1.0, 2.0, 3.0],
                           "regret": [1.0, 2.0, 3.0], "seed_matched": True})  # fmt: skip
    empty_testbed = pd.DataFrame(columns=["agent", "tau", "kappa", "kl", "temperature", "num_train", "input_dim"])
    for level in ("agent_seed", "agent"):
        report = render_report({level: results}, joined, empty_testbed, [], 100, 0)
        bullets = report.split("## In short")[0]
        summary = report.split("## In short")[1]
        assert f"**Joint prediction quality (d_KL^10, tau = 10, iid inputs)**: {joint_word}: " in bullets
        assert f"**Marginal prediction quality (d_KL^1, tau = 1)**: {marginal_word}: " in bullets
        assert f"joint d_KL^10 {joint_word} (Pearson log" in summary
        assert f"marginal d_KL^1 {marginal_word} (Pearson log" in summary
        assert agreement in summary
        # The old wording that contradicted itself is gone.
        assert "does not correlate" not in report and "negatively correlated" not in report
        for other in {POSITIVE, NEGATIVE, INSIGNIFICANT} - {joint_word}:
            assert f"joint d_KL^10 {other} " not in summary
    # A bare {metric: result} mapping is the agent_seed level.
    assert "## Level `agent_seed`" in render_report(results, joined, empty_testbed, [], 100, 0)


def test_relative_level_needs_every_agent_on_a_seed_and_agent_level_warns_on_unequal_seeds():
    joined = pd.DataFrame({"metric": "dkl_10", "agent": ["a", "b", "a", "b", "a"], "seed": [0, 0, 1, 1, 2],
                           "kl": [1.0, 3.0, 2.0, 2.0, 5.0], "regret": [10.0, 30.0, 1.0, 3.0, 7.0],
                           "seed_matched": True})  # fmt: skip
    with pytest.warns(RuntimeWarning, match=r"leaves out seeds \[2\]"):
        relative = relative_points(joined)
    assert relative["kl_relative"].tolist()[:4] == [0.5, 1.5, 1.0, 1.0]
    assert relative["regret_relative"].tolist()[:4] == [0.5, 1.5, 0.5, 1.5]
    assert np.isnan(relative["kl_relative"].iloc[4]) and np.isnan(relative["regret_relative"].iloc[4])
    testbed = pd.DataFrame({"agent": ["a", "a", "b"], "input_dim": 2, "num_train": 10, "temperature": 0.1,
                            "tau": 10, "kappa": np.nan, "seed": [0, 5, 0], "kl": [1.0, 4.0, 3.0]})  # fmt: skip
    with pytest.warns(RuntimeWarning, match="different bandit seeds"):
        agents = agent_level_points(testbed, joined)
    assert agents[["agent", "kl", "regret", "num_bandit_seeds"]].values.tolist() == [
        ["a", 2.5, 6.0, 3],  # testbed mean over all its seeds; regret mean over its bandit seeds
        ["b", 3.0, 16.5, 2],
    ]


def test_analyze_names_missing_files_and_columns(tmp_path):
    with pytest.raises(FileNotFoundError, match="testbed.csv"):
        analyze(tmp_path)
    _handmade(tmp_path)
    testbed = pd.read_csv(tmp_path / "testbed.csv")
    testbed.drop(columns=["kappa", "kl"]).to_csv(tmp_path / "testbed.csv", index=False)
    with pytest.raises(ValueError, match=r"testbed.csv is missing columns \['kappa', 'kl'\]"):
        analyze(tmp_path)
    testbed.to_csv(tmp_path / "testbed.csv", index=False)
    (tmp_path / "bandit.csv").unlink()
    with pytest.raises(FileNotFoundError, match="bandit.csv"):
        analyze(tmp_path)
    with pytest.raises(ValueError, match="num_resamples"):
        analyze(tmp_path, num_resamples=0)


def test_analyze_says_when_too_few_points_exist(tmp_path):
    _handmade(tmp_path)
    bandit = pd.read_csv(tmp_path / "bandit.csv")
    bandit[bandit["agent"].isin(["mlp"]) & (bandit["seed"] < 2)].to_csv(tmp_path / "bandit.csv", index=False)
    with pytest.warns(RuntimeWarning), pytest.raises(ValueError, match="too few .* points to correlate dkl_1"):
        analyze(tmp_path, num_resamples=200)


def test_analyze_command(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="decision-bench")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["analyze", str(tmp_path), "--resamples", "200", "--seed", "3"])
    assert (args.directory, args.seed) == (str(tmp_path), 3)
    assert args.func(args) == 2  # no files yet
    assert "testbed.csv" in capsys.readouterr().err
    _handmade(tmp_path)
    with pytest.warns(RuntimeWarning):
        assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "dkl_10" in out and "report.md" in out
    # --resamples is checked by the one rule every command shares (cli/arguments.parse_resamples).
    bad = parser.parse_args(["analyze", str(tmp_path), "--resamples", "0"])
    assert bad.func(bad) == 2
    assert "--resamples must be an integer in [200, " in capsys.readouterr().err


def _result(low, high, n=7):
    from decision_bench.analysis.correlation import CorrelationResult

    mid = (low + high) / 2
    return CorrelationResult(mid, low, high, mid, low, high, n)


@pytest.mark.parametrize(
    "joint, marginal, phrase",
    [
        ((0.2, 0.9), (-0.5, 0.6), "reproduces the papers' headline"),
        ((0.2, 0.9), (0.1, 0.8), "only half of the papers' headline"),
        ((-0.4, 0.7), (-0.5, 0.6), "does NOT show the papers' headline"),
        ((-0.9, -0.2), (0.1, 0.8), "does NOT show the papers' headline"),
    ],
)
def test_headline_states_plainly_whether_the_papers_finding_holds(joint, marginal, phrase):
    from decision_bench.analysis.pipeline import headline

    levels = {
        "agent_seed": {"dkl_1": _result(0.3, 0.9, 30), "dkl_10": _result(0.3, 0.9, 30)},
        "agent": {"dkl_1": _result(*marginal), "dkl_10": _result(*joint)},
    }
    text = headline(levels)
    assert phrase in text
    assert "agent points, n = 7" in text  # the agent level leads, not the agent_seed one
    # without the agent level the next level answers
    assert "n = 30" in headline({"agent_seed": levels["agent_seed"]})


def test_testbed_table_is_a_stratified_mean_with_hand_computed_standard_errors():
    from decision_bench.analysis.tables import table2_side_by_side

    rows = []
    # two settings with 2 seeds each; tau 1 rows carry accuracy and ece
    for t, kls in ((10, (1.0, 3.0)), (100, (0.5, 0.5))):
        for seed, kl in enumerate(kls):
            base = {"agent": "mlp", "input_dim": 2, "num_train": t, "temperature": 0.1, "seed": seed}
            rows.append({**base, "tau": 1, "kappa": np.nan, "kl": kl, "accuracy": 0.8, "ece": 0.1})
            rows.append({**base, "tau": 10, "kappa": np.nan, "kl": 10 * kl, "accuracy": 0.8, "ece": 0.1})
    table = table2_side_by_side(pd.DataFrame(rows)).set_index("agent")
    # setting means 2.0 and 0.5 -> 1.25; setting se: std(1, 3)/sqrt(2) = 1, 0 -> sqrt(1)/2
    assert table.loc["mlp", "dkl_1"] == pytest.approx(1.25)
    assert table.loc["mlp", "dkl_1_se"] == pytest.approx(0.5)
    assert table.loc["mlp", "dkl_10"] == pytest.approx(12.5)
    assert table.loc["mlp", "accuracy"] == pytest.approx(0.8)
    assert table.loc["mlp", "settings"] == 2
    assert table.loc["mlp", "paper_dkl_10"] == pytest.approx(1.367)
    assert "dkl_10_kappa2" not in table.columns  # not measured here


def test_a_testbed_run_without_bandit_results_gets_a_testbed_report(tmp_path, capsys):
    """A `decision-bench testbed` directory (testbed.json, no bandit.csv) is analysed
    without correlations: table2, Fig. 2 and a report that says why there is no regret."""
    truth = _handmade(tmp_path)
    (tmp_path / "bandit.csv").unlink()
    (tmp_path / "testbed.json").write_text("{}")
    result = analyze(tmp_path, num_resamples=200)
    assert result.correlations.empty and result.levels is None
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Testbed results") and "no bandit.csv" in report
    assert "## d_KL normalised to mlp (Fig. 2)" in report
    table2 = pd.read_csv(tmp_path / "table2.csv").set_index("agent")
    expected = truth.groupby("agent")["dkl_10"].mean()
    np.testing.assert_allclose(table2.loc[expected.index, "dkl_10"], expected, rtol=1e-9)
    assert (tmp_path / "fig2_normalised_kl.png").exists()
    assert not (tmp_path / "correlations.csv").exists()
    assert cli.main(["analyze", str(tmp_path)]) == 0
    assert "no correlation with regret" in capsys.readouterr().out
