"""The baselines shipped with the package are this code's rows: a sample is recomputed."""

import numpy as np
import pytest

from decision_bench.experiments.testbed_cell import compute_testbed_cell
from decision_bench.experiments.baselines import load_baselines, stale_reasons, stored_names

STORED = stored_names()
COMPARED = ["kl", "kl_stderr", "accuracy", "ece"]


def _cheapest_cell(stored, agent):
    """The agent's cell with the fewest training points (the cheapest to recompute)."""
    return min(stored.cells(agent), key=lambda cell: dict(cell.problem)["num_train"])


def _check_recomputed(stored, agent):
    cell = _cheapest_cell(stored, agent)
    problem = dict(cell.problem)
    fresh = compute_testbed_cell(cell)
    rows = stored.rows
    kept = rows[
        (rows["agent"] == agent)
        & (rows["num_train"] == problem["num_train"])
        & np.isclose(rows["temperature"], problem["temperature"])
        & (rows["input_dim"] == problem["input_dim"])
    ]
    assert len(kept) == len(fresh) > 0
    for column in COMPARED:
        # Bit-for-bit on the machine that stored them; rtol 1e-6 leaves room only for
        # another CPU's float rounding in XLA's kernels, not for another result.
        np.testing.assert_allclose(fresh[column].to_numpy(), kept[column].to_numpy(), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{agent} {column}")


def test_the_package_ships_the_standard_baselines():
    assert "standard" in STORED


@pytest.mark.parametrize("name", STORED)
def test_stored_baselines_are_not_stale(name):
    assert stale_reasons(load_baselines(name)) == {}


@pytest.mark.parametrize("name", STORED)
def test_a_stored_mlp_cell_recomputes_to_the_same_rows(name):
    _check_recomputed(load_baselines(name), "mlp")


@pytest.mark.slow
@pytest.mark.parametrize("name", STORED)
def test_one_stored_cell_of_every_agent_recomputes_to_the_same_rows(name):
    stored = load_baselines(name)
    for agent in stored.agents:
        _check_recomputed(stored, agent)
