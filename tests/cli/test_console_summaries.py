"""What the commands print: the testbed summary in absolute d_KL with standard errors,
and the reproduce/demo console led by the per-agent table and the headline."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from decision_bench.analysis import agent_level_points, correlation_levels, join_regret, relative_points
from decision_bench.analysis.pipeline import AnalysisResult
from decision_bench.analysis.tables import design_summary
from decision_bench.cli import testbed as testbed_command
from decision_bench.cli.reproduce import _print_summary, agent_table


def _testbed(agents, kl_of):
    """Rows for two settings (T = 10, 100) x two seeds x tau 1 and 10; kl_of(agent, T, seed, tau)."""
    rows = []
    for agent, num_train, seed, tau in itertools.product(agents, (10, 100), (0, 1), (1, 10)):
        rows.append(dict(agent=agent, input_dim=2, num_train=num_train, temperature=0.1, seed=seed, tau=tau,
                         kappa=np.nan, kl=kl_of(agent, num_train, seed, tau)))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_summary_of_an_mlp_only_run_is_absolute_with_standard_errors(capsys):
    # Per setting the two seeds give (a, b); the stratified mean is the mean of the setting means
    # and its standard error sqrt(se_10^2 + se_100^2) / 2 with se = |a - b| / 2 (std / sqrt(2)).
    values = {(10, 0): 0.10, (10, 1): 0.30, (100, 0): 0.02, (100, 1): 0.06}
    frame = _testbed(["mlp"], lambda agent, t, seed, tau: values[(t, seed)] * (5 if tau == 10 else 1))
    table = design_summary(frame)
    assert list(table.columns) == ["mean", "stderr", "settings", "seeds"]  # no ratio column of 1s
    mean_1 = ((0.10 + 0.30) / 2 + (0.02 + 0.06) / 2) / 2
    se_1 = math.sqrt(((0.30 - 0.10) / 2) ** 2 + ((0.06 - 0.02) / 2) ** 2) / 2
    np.testing.assert_allclose(table.loc[("mlp", "d_KL^1"), ["mean", "stderr"]], [mean_1, se_1], rtol=1e-12)
    np.testing.assert_allclose(table.loc[("mlp", "d_KL^10"), ["mean", "stderr"]], [5 * mean_1, 5 * se_1], rtol=1e-12)
    assert table.loc[("mlp", "d_KL^1"), "settings"] == 2 and table.loc[("mlp", "d_KL^1"), "seeds"] == 2

    testbed_command.print_summary(frame, "custom")
    printed = capsys.readouterr().out
    assert f"{mean_1:.4g}" in printed and f"{5 * mean_1:.4g}" in printed and f"{se_1:.4g}" in printed
    assert "vs_mlp" not in printed


def test_the_ratio_to_mlp_is_an_extra_column_beside_other_agents():
    frame = _testbed(["mlp", "ensemble"], lambda agent, t, seed, tau: (0.2 if agent == "mlp" else 0.1) * tau)
    table = design_summary(frame)
    assert list(table.columns) == ["mean", "stderr", "settings", "seeds", "vs_mlp"]
    np.testing.assert_allclose(table.loc[("ensemble", "d_KL^10"), ["mean", "vs_mlp"]], [1.0, 0.5])
    np.testing.assert_allclose(table.loc[("mlp", "d_KL^1"), ["mean", "vs_mlp"]], [0.2, 1.0])
    assert table.loc[("mlp", "d_KL^1"), "stderr"] == 0.0  # equal seeds: no spread


def test_a_non_finite_kl_is_left_out_of_the_mean_and_an_all_nan_design_keeps_its_row():
    frame = _testbed(["mlp"], lambda agent, t, seed, tau: 0.1 if tau == 1 else np.nan)
    frame.loc[0, "kl"] = np.inf
    table = design_summary(frame)
    assert table.loc[("mlp", "d_KL^1"), "mean"] == 0.1
    assert np.isnan(table.loc[("mlp", "d_KL^10"), "mean"]) and table.loc[("mlp", "d_KL^10"), "seeds"] == 0


def _analysis_result(tmp_path):
    """An AnalysisResult computed as `analyze` does, from 4 agents x 4 seeds, without figures."""
    agents, seeds = ["mlp", "ensemble", "bbb", "dropout"], [0, 1, 2, 3]
    testbed, bandit = [], []
    for i, (agent, seed) in enumerate(itertools.product(agents, seeds)):
        for tau in (1, 10):
            testbed.append(dict(agent=agent, input_dim=2, num_train=100, temperature=0.1, seed=seed, tau=tau,
                                kappa=np.nan, kl=(0.1 + 0.01 * i) * tau))  # fmt: skip
        bandit.append(dict(agent=agent, seed=seed, step=100, cumulative_regret=10.0 + i, final_regret=10.0 + i,
                           error=""))  # fmt: skip
    testbed, bandit = pd.DataFrame(testbed), pd.DataFrame(bandit)
    joined = relative_points(join_regret(testbed, bandit))
    points = agent_level_points(testbed, joined)
    table, levels = correlation_levels(joined, points, 200, 0)
    return AnalysisResult(table, joined, (), tmp_path / "report.md", points, levels)


def test_the_demo_console_leads_with_the_agents_and_the_headline(tmp_path, capsys):
    result = _analysis_result(tmp_path)
    table = agent_table(result)
    assert list(table.index) == ["mlp", "bbb", "dropout", "ensemble"]
    # mlp's seeds are points 0-3: regret 10..13, mean 11.5, standard error std([10..13]) / 2.
    np.testing.assert_allclose(table.loc["mlp", ["regret", "regret_se"]], [11.5, np.std([10, 11, 12, 13], ddof=1) / 2])
    np.testing.assert_allclose(table.loc["mlp", "dkl_10"], 10 * np.mean([0.10, 0.11, 0.12, 0.13]))
    assert table.loc["mlp", "seeds"] == 4

    _print_summary(tmp_path, result, "demo")
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert lines[0].startswith("results in")
    assert lines[1].startswith("per agent:")
    assert lines[3].split() == ["agent", "dkl_1", "dkl_10", "regret", "regret_se", "seeds"]
    headline = next(i for i, line in enumerate(lines) if line.startswith("Headline"))
    assert "agent points, n = 4" in lines[headline]
    assert [line.split()[0] for line in lines[4:headline]] == list(table.index)  # only the agents' rows before it
    assert lines[4].split()[1:] == [f"{table.loc['mlp', 'dkl_1']:.4f}", f"{table.loc['mlp', 'dkl_10']:.4f}", "11.5",
                                    f"{table.loc['mlp', 'regret_se']:.1f}", "4"]  # fmt: skip
    # The correlation table of every level is not printed; the console says where it is.
    assert not any("pearson_ci_low" in line or line.split()[0] in ("agent_seed", "agent_seed_relative")
                   for line in lines)  # fmt: skip
    assert any("report.md and correlations.csv" in line for line in lines)
    assert lines[-1] == f"report: {tmp_path / 'report.md'}"
