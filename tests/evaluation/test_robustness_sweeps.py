"""Robustness sweeps across generative models (issue 14, testbed side; paper 000 Sec. 6).

Settings carry the random-MLP prior's activation and hidden sizes; the named
sweeps robustness_activation, robustness_width and robustness_quick list the
families; rows and the testbed cells keep families apart (the command's --sweep:
tests/cli/test_testbed_command.py).
"""

import jax
import numpy as np
import pytest

from decision_bench._src.keys import problem_key
from decision_bench.envs.testbed import sample_environment
from decision_bench.evaluation.runner import COLUMNS, run_testbed
from decision_bench.evaluation.sweeps import (
    SWEEP_NAMES,
    Sweep,
    TestbedSetting,
    TestDesign,
    get_sweep,
    hidden_sizes_label,
    paper2d,
    robustness_quick,
)
from decision_bench.priors import ACTIVATIONS
from decision_bench.experiments import testbed_cell
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.testbed_cell import sweep_cells

ALL_DESIGNS = (TestDesign(1), TestDesign(10), TestDesign(10, 2))
SLICE = {(t, beta) for t in (10, 100, 1000) for beta in (0.01, 0.1, 0.5)}


def _families(sweep):
    return list(dict.fromkeys((s.activation, s.hidden_sizes) for s in sweep.settings))


def _grid(sweep):
    return {(s.num_train, s.temperature) for s in sweep.settings}


def test_robustness_sweeps_are_registered():
    for name in ("robustness_activation", "robustness_width", "robustness_quick"):
        assert name in SWEEP_NAMES and get_sweep(name).name == name


def test_robustness_activation_lists_every_activation_at_width_50():
    sweep = get_sweep("robustness_activation")
    assert _families(sweep) == [
        (a, (50, 50)) for a in ("tanh", "swish", "sigmoid", "selu", "relu", "leaky_relu", "gelu")
    ]
    assert set(ACTIVATIONS) == {a for a, _ in _families(sweep)}
    assert len(sweep.settings) == 7 * 9 and len(set(sweep.settings)) == len(sweep.settings)
    assert _grid(sweep) == SLICE
    assert {s.input_dim for s in sweep.settings} == {2} and {s.prior for s in sweep.settings} == {"mlp"}
    assert sweep.designs == ALL_DESIGNS and sweep.num_seeds == 5
    # Every family has the whole slice, which is a slice of paper2d's settings.
    for family in _families(sweep):
        assert {(s.num_train, s.temperature) for s in sweep.settings
                if (s.activation, s.hidden_sizes) == family} == SLICE
    assert SLICE <= _grid(paper2d())


def test_robustness_width_lists_relu_at_five_widths_two_layers():
    sweep = get_sweep("robustness_width")
    assert _families(sweep) == [("relu", (w, w)) for w in (5, 10, 20, 50, 100)]
    assert len(sweep.settings) == 5 * 9 and _grid(sweep) == SLICE
    assert sweep.designs == ALL_DESIGNS and sweep.num_seeds == 5


def test_robustness_quick_is_a_small_slice():
    sweep = get_sweep("robustness_quick")
    assert set(_families(sweep)) == {
        ("relu", (50, 50)), ("tanh", (50, 50)), ("sigmoid", (50, 50)), ("gelu", (50, 50)), ("relu", (10, 10))
    }
    assert _grid(sweep) == {(10, 0.1), (100, 0.1)} and len(sweep.settings) == 10
    assert sweep.designs == ALL_DESIGNS and sweep.num_seeds == 3
    assert "quick preset" in robustness_quick.__doc__


def test_setting_defaults_and_normalisation():
    setting = TestbedSetting(2, 10, 0.1)
    assert (setting.activation, setting.hidden_sizes) == ("relu", (50, 50)) and setting.is_default_family
    explicit = TestbedSetting(2, 10, 0.1, activation="relu", hidden_sizes=[50, np.int64(50)])
    assert explicit == setting and hash(explicit) == hash(setting)
    assert TestbedSetting(2, 10, 0.1, hidden_sizes=(20,)).hidden_sizes == (20,)
    assert hidden_sizes_label((50, 50)) == "50-50" and hidden_sizes_label((7,)) == "7"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"activation": "softplus"}, "activation must be one of ["),
        ({"activation": None}, "activation must be one of ["),
        ({"hidden_sizes": (50, 0)}, "hidden_sizes must be a non-empty sequence of positive integers"),
        ({"hidden_sizes": (-5,)}, "hidden_sizes must be a non-empty sequence of positive integers"),
        ({"hidden_sizes": ()}, "hidden_sizes must be a non-empty sequence of positive integers"),
        ({"hidden_sizes": 50}, "hidden_sizes must be a non-empty sequence of positive integers"),
        ({"hidden_sizes": (50, 2.5)}, "hidden_sizes must be a non-empty sequence of positive integers"),
    ],
)
def test_bad_family_is_a_one_line_error_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError) as error:
        TestbedSetting(2, 10, 0.1, **kwargs)
    text = str(error.value)
    assert text.startswith(message) and "\n" not in text
    if "activation" in kwargs:
        assert all(name in text for name in ACTIVATIONS)


@pytest.mark.parametrize("prior", ["logistic", "coins"])
def test_non_mlp_priors_refuse_a_family(prior):
    TestbedSetting(2, 10, 0.1, prior=prior)  # the defaults are fine
    TestbedSetting(2, 10, 0.1, prior=prior, activation="relu", hidden_sizes=(50, 50))
    for kwargs in ({"activation": "tanh"}, {"hidden_sizes": (10, 10)}):
        with pytest.raises(ValueError, match=f"only apply to prior 'mlp', got prior '{prior}'") as error:
            TestbedSetting(2, 10, 0.1, prior=prior, **kwargs)
        assert "\n" not in str(error.value)


def test_families_share_the_problem_key():
    """Paired environments: equal widths give the same weights and inputs, only labels differ."""
    pk = problem_key(0, 2, 10, 0.1)
    relu = TestbedSetting(2, 10, 0.1).build_prior()
    tanh = TestbedSetting(2, 10, 0.1, activation="tanh").build_prior()
    narrow = TestbedSetting(2, 10, 0.1, hidden_sizes=(10, 10)).build_prior()
    assert (tanh.activation, narrow.hidden_sizes) == ("tanh", (10, 10))
    sample = jax.jit(sample_environment, static_argnums=(1, 2))
    (p_relu, d_relu), (p_tanh, d_tanh), (_, d_narrow) = (sample(pk, prior, 10) for prior in (relu, tanh, narrow))
    for a, b in zip(jax.tree.leaves(p_relu), jax.tree.leaves(p_tanh)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(d_relu.x, d_tanh.x)
    np.testing.assert_array_equal(d_relu.x, d_narrow.x)


def test_column_order_keeps_the_old_columns_in_order():
    assert COLUMNS.index("activation") == COLUMNS.index("prior") + 1
    assert COLUMNS.index("hidden_sizes") == COLUMNS.index("activation") + 1
    old = tuple(c for c in COLUMNS if c not in ("activation", "hidden_sizes"))
    assert old[:3] == ("agent", "prior", "input_dim") and old[-1] == "num_test"


TINY = {"num_test": 20, "num_models": 5, "overrides": {"mlp": {"num_steps": 10}}, "progress": False}


@pytest.fixture(scope="module")
def two_families():
    settings = (TestbedSetting(2, 10, 0.1), TestbedSetting(2, 10, 0.1, activation="tanh"))
    sweep = Sweep("tiny", settings, (TestDesign(1),), num_seeds=2)
    return run_testbed("mlp", sweep, 2, **TINY)


def test_rows_carry_the_family_and_differ_across_activations(two_families):
    frame = two_families
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 2 * 2  # families x seeds
    assert set(zip(frame["activation"], frame["hidden_sizes"])) == {("relu", "50-50"), ("tanh", "50-50")}
    relu = frame[frame["activation"] == "relu"].reset_index(drop=True)
    tanh = frame[frame["activation"] == "tanh"].reset_index(drop=True)
    keys = ["input_dim", "num_train", "temperature", "tau", "seed"]
    assert relu[keys].equals(tanh[keys])
    assert frame["kl"].notna().all()
    assert not np.any(relu["kl"].to_numpy() == tanh["kl"].to_numpy())


def test_default_family_rows_do_not_depend_on_spelling_out_the_defaults(two_families):
    explicit = TestbedSetting(2, 10, 0.1, activation="relu", hidden_sizes=(50, 50))
    sweep = Sweep("tiny", (explicit,), (TestDesign(1),), num_seeds=2)
    again = run_testbed("mlp", sweep, 2, **TINY)
    default = two_families[two_families["activation"] == "relu"].reset_index(drop=True)
    np.testing.assert_array_equal(again["kl"].to_numpy(), default["kl"].to_numpy())
    assert (again["activation"] == "relu").all() and (again["hidden_sizes"] == "50-50").all()


def test_command_cells_keep_families_apart(monkeypatch):
    sweep = get_sweep("robustness_quick")
    cells = sweep_cells(["mlp"], sweep, (0, 1, 2), num_test=20, num_models=5)
    assert len({c.id for c in cells}) == len(cells) == len(sweep.settings)
    base = Sweep("s", (TestbedSetting(2, 10, 0.1),), ALL_DESIGNS, 1)
    ids = {
        sweep_cells(["mlp"], Sweep("s", (setting,), ALL_DESIGNS, 1), (0,), num_test=20, num_models=5)[0].id
        for setting in (
            base.settings[0],
            TestbedSetting(2, 10, 0.1, activation="tanh"),
            TestbedSetting(2, 10, 0.1, activation="gelu"),
            TestbedSetting(2, 10, 0.1, hidden_sizes=(10, 10)),
            TestbedSetting(2, 10, 0.1, hidden_sizes=(10,)),
        )
    }
    assert len(ids) == 5
    # A cell read back from its JSON form computes its own family.
    seen = []
    monkeypatch.setattr(testbed_cell, "run_testbed", lambda agent, sweep, *a, **k: seen.append(sweep))
    for cell in cells:
        testbed_cell.compute_testbed_cell(Cell.from_dict(cell.to_dict()))
    assert [s.settings[0] for s in seen] == list(sweep.settings)
    assert all(s.designs == sweep.designs for s in seen)


def test_logistic_rows_have_no_family():
    sweep = Sweep("tiny", (TestbedSetting(2, 3, 0.1, prior="logistic"),), (TestDesign(1),), num_seeds=1)
    frame = run_testbed("uniform", sweep, 1, num_test=5, num_models=2, progress=False)
    assert frame["activation"].isna().all() and frame["hidden_sizes"].isna().all()
