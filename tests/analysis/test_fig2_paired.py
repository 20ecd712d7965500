"""Fig. 2's ratios to mlp carry paired standard errors when the problems are shared."""

import numpy as np
import pandas as pd
import pytest

from decision_bench.analysis.figures import normalised_kl_table


def _rows(agent, kls, seeds, num_train=10):
    return pd.DataFrame({"agent": agent, "input_dim": 2, "num_train": num_train, "temperature": 0.1,
                         "tau": 10, "kappa": np.nan, "seed": seeds, "kl": kls})


def test_shared_problems_give_the_delta_method_paired_error():
    rng = np.random.default_rng(1)
    mlp = rng.lognormal(0.0, 0.8, 30)  # problems differ a lot in difficulty ...
    agent = 0.7 * mlp * rng.lognormal(0.0, 0.05, 30)  # ... and the agent tracks them closely
    testbed = pd.concat([_rows("mlp", mlp, range(30)), _rows("ens", agent, range(30))])
    row = normalised_kl_table(testbed).set_index(["metric", "agent"]).loc[("dkl_10", "ens")]
    ratio = agent.mean() / mlp.mean()
    expected_se = np.std(agent - ratio * mlp, ddof=1) / np.sqrt(30) / mlp.mean()
    assert row.normalised == pytest.approx(ratio)
    assert row.normalised_stderr == pytest.approx(expected_se)
    assert row.paired and row.n == 30
    # The unpaired error (each mean's own spread) would be many times larger here.
    unpaired = np.hypot(agent.std(ddof=1), ratio * mlp.std(ddof=1)) / np.sqrt(30) / mlp.mean()
    assert unpaired > 5 * row.normalised_stderr


def test_only_the_shared_problems_enter_the_ratio():
    mlp = _rows("mlp", [1.0, 2.0, 3.0, 100.0], [0, 1, 2, 3])
    agent = _rows("ens", [0.5, 1.0, 1.5], [0, 1, 2])  # seed 3 missing: mlp's 100 is left out
    row = normalised_kl_table(pd.concat([mlp, agent])).set_index("agent").loc["ens"]
    assert row.normalised == pytest.approx(0.5)
    assert row.normalised_stderr == pytest.approx(0.0)
    assert row.n == 3


def test_an_agent_without_shared_problems_gets_the_unpaired_ratio_marked_unpaired():
    mlp = _rows("mlp", [1.0, 3.0], [0, 1])
    agent = _rows("ens", [2.0, 2.0], [0, 1], num_train=100)  # another setting: nothing shared
    row = normalised_kl_table(pd.concat([mlp, agent])).set_index("agent").loc["ens"]
    assert row.normalised == pytest.approx(1.0)
    assert not row.paired
    assert row.normalised_stderr == pytest.approx(np.hypot(0.0, 1.0 * np.std([1.0, 3.0], ddof=1) / np.sqrt(2)) / 2.0)
