"""The ``bandit`` command's printed summary: statistics over seeds, not logged rows."""

import math

import pandas as pd

from decision_bench.cli.bandit import seed_summary


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
