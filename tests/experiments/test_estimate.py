"""Estimates of a run's cost (issue 21 part 3, issue 25): the scaling rules on a
made-up cost table, the packaged table, and `reproduce --estimate`."""

from __future__ import annotations

import argparse
import math

import pytest

from decision_bench.cli import bandit as bandit_cli
from decision_bench.cli.program import main
from decision_bench.experiments import estimate as estimate_module
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.estimate import estimate_cells, format_duration, load_cost_table
from decision_bench.experiments.presets import CORE_AGENTS

TABLE = {
    "measured": "2026-11-24",
    "machine": {"cpu": "Test CPU", "cores": 2, "load_average": [0.5, 1.0]},
    "ensemble_members": 30,
    "agents": {
        agent: {
            "testbed": {"fit_cpu_seconds_per_seed": fit, "eval_cpu_seconds_per_seed_design_1000_test": 0.5,
                        "compile_cpu_seconds": 10.0},
            "bandit": {"2": {"cpu_seconds_per_seed_step": 1e-4, "compile_cpu_seconds": 5.0},
                       "50": {"cpu_seconds_per_seed_step": 1e-3, "compile_cpu_seconds": 7.0}},
        }
        for agent, fit in (("mlp", 1.0), ("ensemble", 2.0), ("epinet", 3.0))
    },
}


def _testbed(agent="mlp", num_train=100, config=(), seeds=5, **problem):
    return Cell("testbed", agent, dict(config), {"input_dim": 2, "num_train": num_train, "temperature": 0.1,
                                                 "designs": ((1, None), (10, None), (10, 2)), "num_test": 1000,
                                                 "num_models": 1000, **problem}, tuple(range(seeds)))


def test_testbed_cells_cost_fits_and_evaluations_per_seed_and_compile_once_per_bucket():
    # 5 seeds x (fit 1.0 + 3 designs x 0.5); the two T in one decade bucket share a compilation.
    one = estimate_cells([_testbed()], table=TABLE)
    assert one.compute_seconds == pytest.approx(12.5) and one.compile_seconds == 10.0
    assert (one.testbed_cells, one.testbed_problems, one.bandit_cells) == (1, 5, 0)
    shared = estimate_cells([_testbed(num_train=30), _testbed(num_train=100, temperature=0.5)], table=TABLE)
    assert shared.compile_seconds == 10.0
    other_bucket = estimate_cells([_testbed(num_train=100), _testbed(num_train=1000)], table=TABLE)
    assert other_bucket.compile_seconds == 20.0
    # Half the evaluation samples halve the evaluation.
    assert estimate_cells([_testbed(num_test=500)], table=TABLE).compute_seconds == pytest.approx(5 * (1 + 0.75))


def test_ensembles_scale_with_members_and_epinet_with_its_high_data_steps():
    base = estimate_cells([_testbed("ensemble", config={"num_ensemble": 30})], table=TABLE).compute_seconds
    double = estimate_cells([_testbed("ensemble", config={"num_ensemble": 60})], table=TABLE).compute_seconds
    assert double == pytest.approx(2 * base)
    # epinet: T / d = 1000 > its high_data_ratio 500: ten times the fit steps, same evaluation.
    low = estimate_cells([_testbed("epinet", num_train=100)], table=TABLE).compute_seconds
    high = estimate_cells([_testbed("epinet", num_train=2000)], table=TABLE).compute_seconds
    assert low == pytest.approx(5 * (3.0 + 1.5)) and high == pytest.approx(5 * (30.0 + 1.5))


def test_bandit_steps_interpolate_in_d_and_wall_time_divides_by_the_busy_cores():
    cell = Cell("bandit", "mlp", {}, {"env": "NeuralBandit-v0", "num_steps": 1000, "input_dim": 26}, (0, 1, 2))
    estimate = estimate_cells([cell], parallel=2, table=TABLE)
    per_step = 1e-4 + (1e-3 - 1e-4) * (26 - 2) / 48
    assert estimate.bandit_seed_steps == 3000
    assert estimate.compute_seconds == pytest.approx(3000 * per_step)
    assert estimate.compile_seconds == 7.0  # d >= 10 compiles like the d = 50 program
    assert estimate.wall_seconds == pytest.approx((3000 * per_step + 7.0) / 2)
    line = estimate.line()
    assert "1 bandit runs (3,000 seed-steps)" in line and "on 2 cores" in line and "an estimate" in line
    assert "Test CPU, 2 cores, load 0.5-1, 2026-11-24" in line and "\n" not in line


def test_a_bandit_ensemble_larger_than_the_measured_one_is_said_to_cost_more_than_the_rule():
    def bandit(members):
        return Cell("bandit", "ensemble", {"num_ensemble": members},
                    {"env": "NeuralBandit-v0", "num_steps": 100, "input_dim": 50}, (0, 1))

    measured_size = estimate_cells([bandit(30)], table=TABLE)
    paper_size = estimate_cells([bandit(100), bandit(100)], table=TABLE)
    assert measured_size.notes == ()
    assert paper_size.notes == ("ensemble: " + estimate_module.LARGE_ENSEMBLE_NOTE.format(members=30),)
    # said, not scaled: the cost is still the linear rule's
    assert paper_size.compute_seconds == pytest.approx(2 * 100 / 30 * measured_size.compute_seconds)


def test_an_agent_without_a_measured_cost_is_counted_as_mlp_and_named():
    estimate = estimate_cells([_testbed("bbb"), _testbed("dropout")], table=TABLE)
    assert estimate.compute_seconds == pytest.approx(2 * 12.5)
    assert estimate.notes == ("bbb, dropout counted as mlp (no measured cost)",)


def test_a_machine_already_busy_is_said_beside_the_estimate_which_is_not_scaled(monkeypatch):
    cell = _testbed()
    monkeypatch.setattr(estimate_module.os, "getloadavg", lambda: (4.9, 3.0, 2.0))
    monkeypatch.setattr(estimate_module, "cores_available", lambda: 2)
    busy = estimate_cells([cell], parallel=2, table=TABLE)
    monkeypatch.setattr(estimate_module.os, "getloadavg", lambda: (1.2, 3.0, 2.0))
    idle = estimate_cells([cell], parallel=2, table=TABLE)
    assert (busy.load, busy.cores, idle.load) == (4.9, 2, 1.2)
    assert "busy now (load 4.9 on 2 cores before the run)" in busy.line() and "\n" not in busy.line()
    assert "busy" not in idle.line()
    assert busy.wall_seconds == idle.wall_seconds and busy.notes == idle.notes == ()
    # at the core count the cores are taken; unknown load or cores say nothing
    assert estimate_module.busy_note(2.0, 2) and not estimate_module.busy_note(1.99, 2)
    assert estimate_module.busy_note(None, 2) is None and estimate_module.busy_note(5.0, None) is None


def test_durations_read_in_seconds_minutes_or_hours():
    assert [format_duration(s) for s in (45, 150, 7200, math.inf)] == ["45 s", "2.5 min", "2.0 h", "unknown"]


def test_the_packaged_table_measures_every_core_agent_and_names_its_machine():
    table = load_cost_table()
    for agent in CORE_AGENTS + ("sgmcmc_quick",):
        costs = table["agents"][agent]
        assert costs["testbed"]["fit_cpu_seconds_per_seed"] > 0
        assert costs["testbed"]["compile_cpu_seconds"] > 0
        assert all(costs["bandit"][d]["cpu_seconds_per_seed_step"] > 0 for d in ("2", "50"))
    assert table["machine"]["cpu"] and table["machine"]["cores"] >= 1 and table["measured"]


def test_reproduce_estimate_prints_every_preset_and_runs_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["reproduce", "--preset", "demo", "--estimate", "--workers", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for preset in ("demo", "quick", "standard", "paper", "robustness", "robustness-quick"):
        assert any(line.split()[0] == preset for line in printed.splitlines()[1:])
    demo = next(line.split() for line in printed.splitlines() if line.split()[0] == "demo")
    # 7 agents x 1 setting, 5 seeds; 7 bandit runs of 3 seeds x 2000 steps.
    assert demo[1:5] == ["7", "35", "7", "42000"]
    assert "--preset demo: estimate: 7 testbed cells (35 fits), 7 bandit runs (42,000 seed-steps)" in printed
    assert not out.exists()


def test_the_bandit_command_announces_a_long_run_only(capsys, monkeypatch):
    args = argparse.Namespace(env="NeuralBandit-v0", steps=10_000, seeds=5)
    bandit_cli.announce_estimate(args, {"mlp": None}, 2)
    assert capsys.readouterr().err == ""  # mlp, 50,000 seed-steps: seconds
    monkeypatch.setattr(estimate_module, "LONG_RUN_SECONDS", 0.0)
    bandit_cli.announce_estimate(args, {"mlp": None, "ensemble+": None}, 2)
    err = capsys.readouterr().err
    assert err.startswith("estimate: 2 bandit runs (100,000 seed-steps); about ") and err.count("\n") == 1


def test_a_cells_cost_is_its_estimate_and_the_standard_presets_costliest_is_a_bandit_run():
    from decision_bench.experiments.presets import get_preset  # noqa: PLC0415
    from decision_bench.experiments.reproduce import build_cells  # noqa: PLC0415

    preset = get_preset("standard")
    cells = build_cells(preset, preset.agents)
    costs = {cell.id: estimate_module.cell_seconds(cell) for cell in cells}
    one = cells[0]
    alone = estimate_cells([one])
    assert costs[one.id] == pytest.approx(alone.compute_seconds + alone.compile_seconds)
    costliest = max(cells, key=lambda cell: costs[cell.id])
    assert costliest.kind == "bandit"
    # each cell compiles its own programs here, so the cells' sum is at least the whole run's
    whole = estimate_cells(cells)
    assert sum(costs.values()) >= whole.compute_seconds + whole.compile_seconds - 1e-6
