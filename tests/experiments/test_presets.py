"""Presets: several bandit settings per preset, the robustness presets, unchanged ids of the old ones."""

import dataclasses
import hashlib

import pytest

from decision_bench.evaluation.sweeps import robustness_quick
from decision_bench.experiments import presets
from decision_bench.experiments.presets import CORE_AGENTS, get_preset, neural_bandit_setting
from decision_bench.experiments.bandit_cell import bandit_family
from decision_bench.experiments.reproduce import build_cells

# sha256 of the newline-joined cell ids of each preset, since its testbed cells have
# the one typed encoding (experiments/testbed_cell.py): stored runs of these presets
# must keep resuming. Files stored under 0.2.0's ids ("demo": e70c92d5a7efeed5,
# "quick": 58803e8d598d913a, "standard": 71bc50217e6c7cfd, "paper": 67352b93c3a2fe9c)
# are renamed to these by store.migrate_cell (tests/experiments/test_store_migration.py).
# "paper" was redefined as paper 000's own experiment before it was ever run (issue 33:
# 464 cells, ba7e2e26616ae335, before); its run folders resume from these ids. Its two
# 100-member ensembles then ran a seed per cell (175 cells, 45d93af8d82e0506, before: each
# ensemble's one 20-seed cell, never finished, became 20 cells); every other id is the same.
PINNED = {
    "demo": (14, "0f320c044f2043df"),
    "quick": (21, "a65bd657a37c9d50"),
    "standard": (91, "d117d74d830f14ed"),
    "paper": (213, "23139575c7da1cca"),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_existing_presets_keep_their_cells_and_ids(name):
    preset = get_preset(name)
    ids = [c.id for c in build_cells(preset, preset.agents)]
    assert (len(ids), hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]) == PINNED[name]
    assert len(preset.bandit_settings) == 1


def test_robustness_quick_runs_every_core_agent_on_every_family_and_dimension():
    preset = get_preset("robustness-quick")
    assert preset.agents == CORE_AGENTS
    assert preset.testbed_sweeps == ("robustness_quick",)
    cells = build_cells(preset, preset.agents)
    testbed = [c for c in cells if c.kind == "testbed"]
    bandit = [c for c in cells if c.kind == "bandit"]
    assert len(testbed) == len(CORE_AGENTS) * len(robustness_quick().settings) == 70
    # 5 families at d = 2 and the default family at d = 10 and 50, N = 20 d actions
    assert len(bandit) == len(CORE_AGENTS) * 7
    mlp = [dict(c.problem) for c in bandit if c.agent == "mlp"]
    assert [(p["input_dim"], p["num_actions"]) for p in mlp] == [(2, 40)] * 5 + [(10, 200), (50, 1000)]
    families = [(p.get("activation", "relu"), tuple(p.get("hidden_sizes", (50, 50)))) for p in mlp]
    assert families[:5] == [("relu", (50, 50)), ("tanh", (50, 50)), ("sigmoid", (50, 50)), ("gelu", (50, 50)), ("relu", (10, 10))]
    assert families[5:] == [("relu", (50, 50))] * 2
    assert len({c.id for c in cells}) == len(cells)
    # the default-family d = 2 bandit cell is the demo's, so both name the same run
    demo = get_preset("demo")
    assert {c.id for c in build_cells(demo, demo.agents) if c.kind == "bandit"} <= {c.id for c in bandit}


def test_robustness_preset_covers_both_figures_without_duplicates():
    preset = get_preset("robustness")
    sweep = presets.testbed_sweep("robustness")
    families = {(s.activation, s.hidden_sizes) for s in sweep.settings}
    assert len(families) == 7 + 4 and len(sweep.settings) == 11 * 9 == len(set(sweep.settings))
    assert len(preset.bandit_settings) == 11 + 2 and preset.bandit_steps == 50_000 and preset.bandit_seeds == 20


def test_bandit_family_columns_default_to_relu_50_50():
    preset = get_preset("robustness-quick")
    cells = [c for c in build_cells(preset, ("mlp",)) if c.kind == "bandit"]
    assert bandit_family(cells[0]) == {"activation": "relu", "hidden_sizes": "50-50"}
    assert bandit_family(cells[4]) == {"activation": "relu", "hidden_sizes": "10-10"}


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(bandit_env_kwargs=(("activation", "swoosh"),)), r"^activation must be one of \['gelu', .*'tanh'\], got 'swoosh'$"),
        (dict(bandit_env_kwargs=((("hidden_sizes", (0, 5)),), (("input_dim", 2),))), r"^hidden_sizes must be a non-empty sequence of positive integers, got \(0, 5\)$"),
        (dict(bandit_env_kwargs=(("input_dim", 2), ("input_dim", 3))), r"^a bandit setting names a key twice"),
        (dict(bandit_env_kwargs=((("input_dim", 2),), (("input_dim", 2),))), r"lists a bandit setting twice"),
        (dict(testbed_sweeps=("nope",)), r"^testbed sweep must be one of \[.*'robustness_quick'.*\], got 'nope'$"),
        (dict(bandit_env_kwargs=("input_dim", 2)), r"^bandit_env_kwargs must be"),
    ],
)
def test_bad_preset_settings_are_one_line_errors(change, match):
    base = get_preset("demo")
    with pytest.raises(ValueError, match=match) as info:
        dataclasses.replace(base, **change)
    assert "\n" not in str(info.value)


def test_neural_bandit_setting_names_the_family_only_when_not_default():
    assert neural_bandit_setting(10) == (("input_dim", 10), ("num_actions", 200), ("temperature", 0.1))
    assert dict(neural_bandit_setting(2, "tanh"))["activation"] == "tanh"
    with pytest.raises(ValueError, match=r"^hidden_sizes must be a non-empty sequence of positive integers"):
        neural_bandit_setting(2, "relu", (-1,))
    with pytest.raises(ValueError, match=r"^activation must be one of \["):
        neural_bandit_setting(2, "soft")
