"""The paper presets are paper 000's experiment, and their testbed cells come from the
stored paper2d baselines only where the rows are this code's rows."""

import dataclasses
import json

import numpy as np
import pytest

from decision_bench.experiments import baselines as stored_baselines
from decision_bench.experiments.baselines import load_baselines, reusable_rows, reuse_stored_rows
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.experiment_file import preset_from_toml, preset_to_toml
from decision_bench.experiments.presets import CORE_AGENTS, get_preset
from decision_bench.experiments.reproduce import _run_order, build_cells
from decision_bench.experiments.store import ResultsStore
from decision_bench.experiments.testbed_cell import compute_testbed_cell
from rounding import rtol_for_testbed

PAPER_BANDIT = {"mlp", "ensemble", "dropout", "bbb", "ensemble+", "hypermodel"}  # paper 000 App. E.2


def _cells(name):
    preset = get_preset(name)
    return preset, build_cells(preset, preset.agents)


def test_paper_preset_runs_the_papers_bandit_agents_and_sgmcmc_on_the_testbed_only():
    preset, cells = _cells("paper")
    bandit = [c for c in cells if c.kind == "bandit"]
    assert {c.agent for c in bandit} == PAPER_BANDIT | {"epinet"}
    assert {c.agent for c in cells if c.kind == "testbed"} == set(CORE_AGENTS) | {"sgmcmc"}
    for cell in bandit:
        problem = dict(cell.problem)
        assert (problem["input_dim"], problem["num_actions"], problem["temperature"]) == (50, 1000, 0.1)
        assert problem["num_steps"] == 50_000
        assert cell.agent_config == ()  # paper defaults: 100-member ensembles
    for agent in PAPER_BANDIT | {"epinet"}:
        seeds = [c.seeds for c in bandit if c.agent == agent]
        # The 100-member ensembles run a seed per cell (hours each otherwise); the rest all 20 at once.
        assert seeds == ([(s,) for s in range(20)] if agent.startswith("ensemble") else [tuple(range(20))])
    assert preset.testbed_sweeps == ("paper2d",) and preset.testbed_seeds == 10


def test_testbed_only_agents_come_last_in_the_grid_and_in_the_run_order():
    preset, cells = _cells("paper")
    kinds = [(c.kind, c.agent == "sgmcmc") for c in cells]
    first_sgmcmc = kinds.index(("testbed", True))
    assert all(is_sgmcmc for _, is_sgmcmc in kinds[first_sgmcmc:first_sgmcmc + 21])
    ordered = sorted(cells, key=lambda c: _run_order(preset, c), reverse=True)
    assert [c.agent for c in ordered[-21:]] == ["sgmcmc"] * 21
    assert all(c.agent != "sgmcmc" for c in ordered[:-21])


def test_paper_dims_is_the_paper_preset_at_d_2_and_10_with_the_same_testbed_cells():
    _, paper = _cells("paper")
    preset, dims = _cells("paper-dims")
    settings = {(dict(s)["input_dim"], dict(s)["num_actions"]) for s in preset.bandit_settings}
    assert settings == {(2, 40), (10, 200)}
    assert [c.id for c in dims if c.kind == "testbed"] == [c.id for c in paper if c.kind == "testbed"]


def test_experiment_file_round_trips_testbed_only_and_refuses_strangers():
    preset = get_preset("paper")
    assert preset_from_toml(preset_to_toml(preset)) == preset
    assert "testbed_only" not in preset_to_toml(get_preset("standard"))
    text = preset_to_toml(preset).replace('testbed_only = ["sgmcmc"]', 'testbed_only = ["sgmcmcc"]')
    with pytest.raises(ValueError, match=r"testbed_only names \['sgmcmcc'\], neither among agents"):
        preset_from_toml(text)


def test_an_override_table_for_an_agent_not_in_the_file_is_refused():
    # Issue 34, R43 / C13 / S18: a typo in an override table was dropped without a word.
    text = preset_to_toml(get_preset("demo")) + "\n[testbed.overrides.ensembel]\nnum_ensemble = 3\n"
    with pytest.raises(ValueError, match=r"\[testbed.overrides\] names \['ensembel'\], neither among agents .* nor a registered agent"):
        preset_from_toml(text)


def test_every_core_agent_cell_of_paper2d_is_taken_from_the_stored_baselines(tmp_path):
    _, cells = _cells("paper")
    store = ResultsStore(tmp_path / "cells")
    # The bandit agents of the stored paper set come from it too (its bandit cells: one per
    # agent, or one per seed for the ensembles, which run a seed per cell).
    stored_bandit = load_baselines("paper").bandit_agents
    num_stored_cells = sum(c.kind == "bandit" and c.agent in stored_bandit for c in cells)
    assert num_stored_cells >= len(stored_bandit)
    assert reuse_stored_rows(store, cells) == {"paper2d": 7 * 21, "paper": num_stored_cells}
    testbed = [c for c in cells if c.kind == "testbed"]
    assert all(store.is_done(c) == (c.agent != "sgmcmc") for c in testbed)
    assert all(store.is_done(c) == (c.agent in stored_bandit) for c in cells if c.kind == "bandit")
    cell = testbed[0]
    payload = json.loads(store.path(cell).read_text())
    assert payload["source"] == "stored baselines 'paper2d'"
    assert payload["versions"] == load_baselines("paper2d").meta["versions"]
    rows = store.load([cell])
    assert len(rows) == 10 * 2 and set(rows["sweep"]) == {"paper2d"}
    assert reuse_stored_rows(store, cells) == {}  # nothing left to take: a resumed run writes nothing


def test_rows_are_not_reused_for_another_config_seed_set_or_stale_record():
    stored = load_baselines("paper2d")
    cell = stored.cells("mlp")[0]
    assert reusable_rows(stored, cell) is not None
    assert reusable_rows(stored, dataclasses.replace(cell, agent_config={"num_steps": 10})) is None
    assert reusable_rows(stored, dataclasses.replace(cell, seeds=(0, 1))) is None
    assert reusable_rows(stored, Cell("testbed", "mlp", (), cell.problem, cell.seeds, agent_file_sha256="ab" * 32)) is None
    older = dataclasses.replace(stored, meta={**stored.meta, "versions": {**stored.meta["versions"], "decision-bench": "0.1.0"}})
    assert reusable_rows(older, cell) is None
    other_jax = dataclasses.replace(stored, meta={**stored.meta, "versions": {**stored.meta["versions"], "jax": "0.0.1"}})
    assert reusable_rows(other_jax, cell) is None


def test_a_reused_cell_equals_the_cell_computed_now():
    _, cells = _cells("paper")
    cell = min((c for c in cells if c.kind == "testbed" and c.agent == "mlp"), key=lambda c: dict(c.problem)["num_train"])
    reused = reusable_rows(load_baselines("paper2d"), cell)
    fresh = compute_testbed_cell(cell)
    assert list(reused["sweep"]) == list(fresh["sweep"])
    rtol = rtol_for_testbed(load_baselines("paper2d").meta["versions"])  # bit for bit on the CPU that stored them
    for column in ("seed", "tau", "kl", "kl_stderr", "accuracy", "ece"):
        np.testing.assert_allclose(fresh[column].to_numpy(float), reused[column].to_numpy(float), rtol=rtol, atol=1e-9)


def test_an_agent_split_into_seed_groups_gets_one_cell_per_group_and_the_others_keep_theirs():
    preset = dataclasses.replace(get_preset("demo"), bandit_seeds_per_cell=(("mlp", 2),))
    bandit = [c for c in build_cells(preset, ("mlp", "bbb")) if c.kind == "bandit"]
    assert [(c.agent, c.seeds) for c in bandit] == [("mlp", (0, 1)), ("mlp", (2,)), ("bbb", (0, 1, 2))]
    unsplit = [c for c in build_cells(get_preset("demo"), ("bbb",)) if c.kind == "bandit"]
    assert bandit[-1].id == unsplit[0].id  # an agent not split keeps its cell (and its stored rows)
    assert preset_from_toml(preset_to_toml(preset)) == preset


@pytest.mark.parametrize("split, message", [
    ((("mlp", 0),), "bandit_seeds_per_cell\\['mlp'\\]"),
    ((("mlp", 1), ("mlp", 2)), "names an agent twice"),
    (("mlp",), "must be \\(\\(agent, seeds per cell\\), ...\\)"),
])
def test_bad_seeds_per_cell_is_refused_in_one_line(split, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(get_preset("demo"), bandit_seeds_per_cell=split)


def test_an_experiment_file_refuses_a_seeds_per_cell_entry_for_an_unknown_agent():
    text = preset_to_toml(get_preset("demo")) + '\n[bandit.seeds_per_cell]\nensembel = 1\n'
    with pytest.raises(ValueError, match=r"\[bandit.seeds_per_cell\] names \['ensembel'\]"):
        preset_from_toml(text)


def test_the_stored_paper_sets_bandit_cells_are_taken_from_it_and_any_agent_not_in_it_is_computed(tmp_path):
    from decision_bench.bandit.loop import COLUMNS
    from decision_bench.experiments.baselines import reusable_bandit_rows

    stored = load_baselines("paper")
    preset, cells = _cells("paper")
    bandit = [c for c in cells if c.kind == "bandit"]
    for cell in bandit:
        rows = reusable_bandit_rows(stored, cell)
        if cell.agent not in stored.bandit_agents:
            assert rows is None  # not in the set: computed
            continue
        assert tuple(rows.columns) == COLUMNS and set(rows["agent"]) == {cell.agent}
        assert sorted(set(rows["seed"])) == list(cell.seeds) and rows["step"].max() == preset.bandit_steps
    # A seed-cell of an ensemble (seeds_per_cell 1) takes its own seed's rows, not the agent's 20.
    split = [c for c in bandit if c.agent in stored.bandit_agents and len(c.seeds) == 1]
    assert split, "the stored paper set holds the ensembles' seed-cells"
    assert set(reusable_bandit_rows(stored, split[0])["seed"]) == set(split[0].seeds)
    in_set = [c for c in bandit if c.agent in stored.bandit_agents]
    store = ResultsStore(tmp_path / "cells")
    written = reuse_stored_rows(store, bandit, names=["paper"])
    assert written == {"paper": len(in_set)}
    assert [c for c in bandit if store.is_done(c)] == in_set
    # A bandit cell whose agent the set lacks is computed: a stored agent under another config.
    other = dataclasses.replace(in_set[0], agent_config={"num_steps": 10})
    assert reusable_bandit_rows(stored, other) is None
