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
