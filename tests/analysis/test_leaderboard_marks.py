"""The leaderboard marks differences beyond noise, and says what many comparisons do (issue 34, item 4)."""

import numpy as np
import pandas as pd

from decision_bench.analysis.leaderboard import markdown, with_significance


def _paired(differences, ses):
    return pd.DataFrame({
        "agent": "mine", "baseline": [f"b{i}" for i in range(len(differences))], "metric": "dkl_10",
        "difference": differences, "difference_se": ses, "settings": 3, "problems": 30,
    })


def test_marks_follow_z_and_the_bonferroni_threshold_of_the_table():
    table = with_significance(_paired([0.01, 0.025, 0.05, 0.01], [0.01, 0.01, 0.01, np.nan]))
    assert list(table["z"].round(3)[:3]) == [1.0, 2.5, 5.0]
    assert list(table["beyond_2se"]) == [False, True, True, False]
    # 3 defined differences: |z| > z_{1 - 0.05 / 6} = 2.394; 2.5 passes, as 5 does.
    assert list(table["beyond_bonferroni"]) == [False, True, True, False]
    many = with_significance(_paired([0.025] * 40, [0.01] * 40))  # 40 comparisons: threshold 3.02
    assert many["beyond_2se"].all() and not many["beyond_bonferroni"].any()


def test_the_markdown_shows_the_marks_and_the_multiple_comparison_note():
    paired = with_significance(_paired([0.01, 0.025, 0.05], [0.01, 0.01, 0.01]))
    scores = pd.DataFrame({"agent": ["mine"], "dkl_10": [0.2], "dkl_10_se": [0.01]})
    text = markdown(scores, paired, [])
    assert "+0.0100 +- 0.0100 |" in text and "+0.0500 +- 0.0100** |" in text
    assert "Bonferroni threshold for all 3 differences" in text and "1 in 20" in text


def _bandit_rows(finals: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([
        {"agent": agent, "env": "NeuralBandit-v0", "seed": seed, "step": 100, "final_regret": value}
        for agent, values in finals.items() for seed, value in enumerate(values)
    ])


def test_a_run_with_zero_regret_makes_the_mean_log_undefined_and_the_table_says_why():
    from decision_bench.analysis.leaderboard import bandit_markdown, bandit_scores

    scores = bandit_scores(_bandit_rows({"bbb": [0.0, 5.0, 7.0], "mlp": [2.0, 4.0, 8.0]}))
    by_agent = scores.set_index("agent")
    assert by_agent.at["bbb", "zero_regret_runs"] == 1 and by_agent.at["mlp", "zero_regret_runs"] == 0
    assert np.isnan(by_agent.at["bbb", "log_final_regret_mean"])
    assert by_agent.at["mlp", "log_final_regret_mean"] == np.log([2.0, 4.0, 8.0]).mean()
    text = bandit_markdown(scores, pd.DataFrame(), [], [])
    bbb_line = next(line for line in text.splitlines() if line.startswith("| bbb |"))
    assert "undefined (1 run with regret 0)" in bbb_line and "nan" not in bbb_line
    mlp_line = next(line for line in text.splitlines() if line.startswith("| mlp |"))
    assert f"{np.log([2.0, 4.0, 8.0]).mean():.3f} +- " in mlp_line
