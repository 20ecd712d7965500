"""scripts/paper_dims_analysis.py: the stored sets behind Figs. 16-17 combine into one
table of three bandit dimensions, and sets that do not fit together are refused."""

from __future__ import annotations


import pytest



@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_dims_analysis")


def test_the_stored_paper_sets_give_every_agent_at_three_dimensions(script):
    testbed, bandit, agents = script.combined_rows(["paper", "paper-dims"])
    assert sorted(bandit["input_dim"].unique()) == [2, 10, 50]
    assert agents == sorted(set(bandit["agent"])) and len(agents) >= 5
    seeds = bandit.groupby(["agent", "input_dim"])["seed"].nunique()
    assert (seeds == 20).all()
    # N = 20 d actions at every dimension, as paper 000's Figs. 16-17
    assert ((bandit["num_actions"] == 20 * bandit["input_dim"])).all()
    assert set(testbed["agent"]) == set(agents) and (testbed["input_dim"] == 2).all()


def test_sets_with_other_testbed_rows_are_refused(script):
    with pytest.raises(ValueError, match="different testbed rows"):
        script.combined_rows(["paper", "standard-reproduce"])


def test_a_set_given_twice_is_refused(script):
    with pytest.raises(ValueError, match="same \\(agent, input_dim\\)"):
        script.combined_rows(["paper", "paper"])
