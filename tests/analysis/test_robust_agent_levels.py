"""The agent levels that a few heavy-tailed seeds cannot dominate (median regret, mean log
regret) and the rule naming agents whose mean regret rests on a few seeds, on hand-made
frames with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from decision_bench.analysis.join import agent_level_points, top_seeds_share
from decision_bench.analysis.pipeline import (
    HEAVY_TAIL_MIN_SEEDS,
    correlation_levels,
    heavy_tail_section,
    heavy_tailed_agents,
    render_report,
    robust_agent_points,
)

AGENTS = ("a", "b", "c", "d", "e")
AGENT_KL = np.array([0.1, 0.2, 0.3, 0.4, 0.5])  # d_KL^10 per agent, rising
TYPICAL_REGRET = np.array([10.0, 20.0, 40.0, 80.0, 160.0])  # each agent's regret on 4 of its 5 seeds
OUTLIER = 10_000.0  # agent a's regret on its last seed: one stuck run


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """testbed rows (tau 10, one per agent and seed) and joined (agent, seed) points.

    Every agent's regret is TYPICAL_REGRET on seeds 0-3; on seed 4 it is the same,
    except for agent a (the best predictor), which has OUTLIER there.
    """
    testbed, joined = [], []
    for i, agent in enumerate(AGENTS):
        for seed in range(5):
            testbed.append(dict(agent=agent, tau=10, kappa=np.nan, seed=seed, kl=AGENT_KL[i]))
            regret = OUTLIER if (agent == "a" and seed == 4) else TYPICAL_REGRET[i]
            joined.append(dict(metric="dkl_10", agent=agent, seed=seed, kl=AGENT_KL[i], regret=regret,
                               seed_matched=True))  # fmt: skip
    return pd.DataFrame(testbed), pd.DataFrame(joined)


def test_agent_points_carry_the_median_and_mean_log_regret_that_the_outlier_cannot_move():
    testbed, joined = _frames()
    agents = agent_level_points(testbed, joined).set_index("agent")
    # The mean follows the outlier; the median does not move at all.
    assert agents.loc["a", "regret"] == pytest.approx((4 * 10.0 + OUTLIER) / 5)
    np.testing.assert_array_equal(agents["regret_median"].to_numpy(), TYPICAL_REGRET)
    # Mean log regret: log(10) on 4 seeds and log(10_000) on one.
    assert agents.loc["a", "regret_log_mean"] == pytest.approx((4 * np.log(10.0) + np.log(OUTLIER)) / 5, rel=1e-12)
    np.testing.assert_allclose(agents["regret_log_mean"].to_numpy()[1:], np.log(TYPICAL_REGRET[1:]), rtol=1e-12)
    assert agents.loc["a", "top2_share"] == pytest.approx((OUTLIER + 10.0) / (OUTLIER + 40.0))
    np.testing.assert_allclose(agents["top2_share"].to_numpy()[1:], 0.4)  # five equal seeds: 2 / 5


def test_the_median_level_keeps_the_ordering_that_the_mean_level_loses():
    testbed, joined = _frames()
    agents = agent_level_points(testbed, joined)
    table, levels = correlation_levels(joined, agents, num_resamples=400, seed=0)
    assert set(table["level"]) == {"agent_seed", "agent", "agent_median_regret", "agent_log_regret"}
    median = levels["agent_median_regret"]["dkl_10"]
    # The medians rank the agents exactly as d_KL does.
    assert median.spearman == pytest.approx(1.0, abs=1e-12)
    assert median.pearson_log == pytest.approx(stats.pearsonr(np.log(AGENT_KL), np.log(TYPICAL_REGRET)).statistic,
                                               abs=1e-12)  # fmt: skip
    mean = levels["agent"]["dkl_10"]
    means = agents["regret"].to_numpy()
    assert mean.spearman == pytest.approx(stats.spearmanr(AGENT_KL, means).statistic, abs=1e-12)
    assert mean.spearman < 0.5  # agent a's one stuck seed makes it the worst by its mean
    log_level = levels["agent_log_regret"]["dkl_10"]
    expected = stats.pearsonr(np.log(AGENT_KL), agents["regret_log_mean"].to_numpy()).statistic
    assert log_level.pearson_log == pytest.approx(expected, abs=1e-12)
    assert log_level.n == mean.n == median.n == len(AGENTS)


def test_robust_points_exponentiate_the_mean_log_regret_only():
    agents = pd.DataFrame({"metric": "dkl_10", "agent": ["a", "b"], "kl": [0.1, 0.2],
                           "regret_median": [3.0, 4.0], "regret_log_mean": [0.0, np.log(5.0)]})  # fmt: skip
    assert robust_agent_points(agents, "agent_median_regret")["regret"].tolist() == [3.0, 4.0]
    np.testing.assert_allclose(robust_agent_points(agents, "agent_log_regret")["regret"], [1.0, 5.0], rtol=1e-12)


def test_a_seed_with_zero_regret_has_no_log_and_leaves_the_agent_out_of_the_log_level():
    testbed, joined = _frames()
    joined.loc[(joined["agent"] == "b") & (joined["seed"] == 0), "regret"] = 0.0
    agents = agent_level_points(testbed, joined).set_index("agent")
    assert np.isnan(agents.loc["b", "regret_log_mean"])
    assert agents.loc["b", "regret_median"] == 20.0
    with pytest.warns(RuntimeWarning, match=r"agent_log_regret level\): dropping 1 points"):
        _, levels = correlation_levels(joined, agents.reset_index(), num_resamples=400, seed=0)
    assert levels["agent_log_regret"]["dkl_10"].n == len(AGENTS) - 1
    assert levels["agent_median_regret"]["dkl_10"].n == len(AGENTS)


@pytest.mark.parametrize(
    "regrets, share",
    [([1.0, 1.0, 1.0, 1.0, 6.0], 0.7), ([5.0, 5.0, 5.0, 5.0], 0.5), ([3.0, 1.0], 1.0), ([2.0], 1.0)],
)
def test_top_seeds_share_by_hand(regrets, share):
    assert top_seeds_share(regrets) == pytest.approx(share)


def test_top_seeds_share_of_no_regret_is_undefined():
    assert np.isnan(top_seeds_share([0.0, 0.0, 0.0]))


def test_heavy_tailed_agents_names_only_judged_agents_over_the_share():
    agents = pd.DataFrame({
        "metric": ["dkl_1", "dkl_10", "dkl_10", "dkl_10", "dkl_10"],
        "agent": ["stuck", "stuck", "even", "edge", "few"],
        "num_bandit_seeds": [6, 6, 5, HEAVY_TAIL_MIN_SEEDS, HEAVY_TAIL_MIN_SEEDS - 1],
        "top2_share": [0.9, 0.9, 0.4, 0.5, 0.99],
    })  # fmt: skip
    table = heavy_tailed_agents(agents).set_index("agent")
    assert list(table.index) == ["edge", "even", "few", "stuck"]  # one row per agent
    # > 0.5 strictly; an agent with too few seeds is never named.
    assert table["dominated"].to_dict() == {"edge": False, "even": False, "few": False, "stuck": True}


def test_report_states_the_rule_and_names_the_dominated_agent():
    testbed, joined = _frames()
    # The headline needs d_KL^1 too: the same points as a marginal metric.
    testbed = pd.concat([testbed, testbed.assign(tau=1)], ignore_index=True)
    joined = pd.concat([joined, joined.assign(metric="dkl_1")], ignore_index=True)
    agents = agent_level_points(testbed, joined)
    _, levels = correlation_levels(joined, agents, num_resamples=400, seed=0)
    report = render_report(levels, joined, testbed.assign(input_dim=2, num_train=10, temperature=0.1), [], 400, 0,
                           agents=agents)  # fmt: skip
    section = report.split("## Agents whose mean regret rests on a few seeds")[1].split("\n## ")[0]
    assert "its 2 seeds with the most regret hold more than 50% of its total regret" in section
    assert "chosen before results were seen" in section
    assert "Dominated by a few seeds: a (100% of its regret on 2 of 5 seeds)" in section
    for other in AGENTS[1:]:
        assert f" {other} (" not in section
    assert "## Level `agent_median_regret`" in report and "## Level `agent_log_regret`" in report
    # The headline stays at the agent level (the mean).
    assert report.splitlines()[2].startswith("**Headline (agent points, n = 5).**")


def test_heavy_tail_section_says_no_agent_only_when_some_agent_was_judged():
    few = pd.DataFrame({"agent": ["a", "b"], "num_bandit_seeds": 3, "top2_share": [0.9, 0.7]})
    text = "\n".join(heavy_tail_section(few))
    assert "Not judged (fewer than 5 bandit seeds): a, b." in text and "No judged agent" not in text
    even = pd.DataFrame({"agent": ["a", "b"], "num_bandit_seeds": [5, 3], "top2_share": [0.4, 0.9]})
    text = "\n".join(heavy_tail_section(even))
    assert "No judged agent's mean regret is dominated" in text and "Not judged (fewer than 5 bandit seeds): b." in text
