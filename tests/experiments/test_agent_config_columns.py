"""Every override source reaches the results files' agent_config, and analyze says when
one agent name joins two configurations (issue 34, item 5)."""

import warnings

import pandas as pd
import pytest

from decision_bench.analysis.join import join_regret, warn_config_mismatch
from decision_bench.experiments.cells import Cell, config_label
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells, with_agent_config


def test_config_label_reads_like_the_set_flag():
    assert config_label({"num_ensemble": 30, "l2": 0.5}) == "l2=0.5 num_ensemble=30"
    assert config_label({"hidden_sizes": (5, 5)}) == "hidden_sizes=5,5"
    assert config_label({}) == ""


def test_a_presets_overrides_reach_its_tables():
    preset = get_preset("demo")  # 30-member ensembles by the preset, not by --set
    cells = [c for c in build_cells(preset, preset.agents) if c.kind == "bandit"]
    rows = pd.DataFrame({"agent": [c.agent for c in cells], "final_regret": 1.0})
    labelled = with_agent_config(rows, cells)
    by_agent = dict(zip(labelled["agent"], labelled["agent_config"]))
    assert by_agent["ensemble"] == by_agent["ensemble+"] == "num_ensemble=30"
    assert by_agent["mlp"] == ""
    assert list(labelled.columns[:2]) == ["agent", "agent_config"]


def test_tables_of_a_run_without_overrides_keep_their_columns():
    cells = [Cell("bandit", "mlp", {}, {"env": "x"}, (0,))]
    rows = pd.DataFrame({"agent": ["mlp"], "final_regret": [1.0]})
    assert list(with_agent_config(rows, cells).columns) == ["agent", "final_regret"]


def _tables(testbed_config, bandit_config):
    testbed = pd.DataFrame({
        "agent": ["ensemble"] * 2, "agent_config": [testbed_config] * 2, "tau": [1, 10], "kappa": [None, None],
        "seed": [0, 0], "kl": [0.1, 1.0],
    })
    bandit = pd.DataFrame({
        "agent": ["ensemble"], "agent_config": [bandit_config], "seed": [0], "step": [10],
        "final_regret": [5.0], "error": [""],
    })
    return testbed, bandit


def test_joining_two_configs_under_one_name_is_said():
    testbed, bandit = _tables("num_ensemble=3", "num_ensemble=5")
    with pytest.warns(RuntimeWarning, match=r"agent 'ensemble' ran with 'num_ensemble=3' on the testbed but 'num_ensemble=5' in the bandit"):
        assert warn_config_mismatch(testbed, bandit) == ["ensemble"]


def test_the_same_config_on_both_sides_joins_quietly():
    testbed, bandit = _tables("num_ensemble=3", "num_ensemble=3")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_config_mismatch(testbed, bandit) == []
        assert warn_config_mismatch(testbed.drop(columns="agent_config"), bandit) == []
