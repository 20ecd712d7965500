"""What a run will cost, before it starts: cells, bandit steps and an estimated wall time.

The figures come from ``cost_table.json`` beside this module: per-agent CPU seconds
measured by ``python bench/costs.py`` on one machine, which the table names
(CPU model, cores, load average, date). An estimate is only that: it scales those
measurements to the run's sizes with the simple rules below and divides by the
cores the run keeps busy; another machine, or other work on this one, changes it.

Rules (each an assumption, stated so it can be checked):

- testbed, per (agent, setting, seed): fit CPU seconds, scaled by the agent's SGD
  steps (``num_steps``, times epinet's ``high_data_step_factor`` when T / d is
  above its ``high_data_ratio``) against the measured agent's, plus evaluation CPU
  seconds per design, scaled by num_test x num_models against 1000 x 1000;
- bandit, per seed-step: CPU seconds measured at d = 2 (40 actions) and d = 50
  (1000 actions), linear in d between and beyond them;
- ensembles (``num_ensemble``) scale linearly from the measured size;
- compilation, on a cold cache: the measured compile CPU seconds once per
  (agent, generative family, training-set bucket) for the testbed and per
  (agent, bandit setting) for the bandit; a second run of a command loads most
  programs from the persistent cache and takes less;
- wall time = CPU seconds / the cores kept busy: min(worker processes, cores), as if
  the run had them to itself; where other work already keeps every core busy (the
  1-minute load average at or above the cores), the line says so, unscaled.

An agent without a measured figure (a user's agent file, say) is counted as the
closest measured one (sgmcmc as sgmcmc_quick with its steps; anything else as
mlp), and the estimate says so. A host agent (an agent file whose make_agent returns
``agent(data, spec) -> sampler``, agents/host_agent.py) runs its own code for every
fit and draw: its cost cannot be estimated, so its cells are left out of the total
and the estimate says that instead.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from pathlib import Path
from typing import Any, Collection, Sequence

from decision_bench._src.devices import usable_cores
from decision_bench._src.memory import check_fits, testbed_memory
from decision_bench.agents import registry
from decision_bench.agents.training import bucket_size
from decision_bench.evaluation.sweeps import Sweep
from decision_bench.experiments.cells import Cell

COST_TABLE = Path(__file__).with_name("cost_table.json")
# Measured agents stand in for these (their steps are scaled by the rules above).
STAND_INS = {"sgmcmc": "sgmcmc_quick"}
FALLBACK_AGENT = "mlp"
MEASURED_DIMS = (2, 50)
# Commands that run agents print their estimate before a run estimated at least this long.
LONG_RUN_SECONDS = 60.0
# How the estimates compared with measured runs on the 2-core machine (wall / estimate),
# said beside every estimate: demo 2m12s against 2.0 min; standard 14.7 min against 17.3
# on an otherwise idle machine (2026-11-25; 42.5-60 min earlier, under a load of 15-26).
# The figure is not scaled to agree, it is reported.
# Measured against the linear rule (bench/bandit_scaling.py, docs/performance.md, 2026-11-28):
# bandit ensembles of 100 members with 20 seeds at d = 50 cost 1.51x (ensemble) and 1.35x
# (ensemble+) what the rule predicts from 30 members and 3 seeds; one seed alone (the paper
# preset's ensemble cells, 2026-12-07, another machine, idle) 1.74x and 1.96x; said, not scaled.
LARGE_ENSEMBLE_NOTE = ("bandit over {members} members: 100 members measured 1.35-1.5x (20 seeds) and "
                       "1.7-2.0x (1 seed) the linear rule (docs/performance.md)")
CHECKED_AGAINST_RUNS = (
    "measured on an otherwise idle machine: demo 1.1x, standard 0.85x the estimate; other jobs on "
    "the same cores stretch the wall time, not the estimate"
)


@functools.lru_cache(maxsize=None)
def load_cost_table(path: str | None = None) -> dict:
    """The cost table (see ``bench/costs.py`` for its fields)."""
    return json.loads(Path(path or COST_TABLE).read_text(encoding="utf-8"))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A run's size and estimated cost. Seconds are CPU seconds unless named wall."""

    testbed_cells: int
    bandit_cells: int
    testbed_problems: int  # (agent, setting, seed) fits
    bandit_seed_steps: int
    compute_seconds: float  # CPU seconds of fitting, evaluating and stepping
    compile_seconds: float  # CPU seconds of compiling, on a cold cache
    parallel: int  # cores the run keeps busy
    machine: str
    notes: tuple[str, ...] = ()
    # This machine's 1-minute load average and cores when the estimate was made (None:
    # not known): work already running shares the cores the estimate counts as the run's.
    load: float | None = None
    cores: int | None = None

    @property
    def wall_seconds(self) -> float:
        return (self.compute_seconds + self.compile_seconds) / self.parallel

    def line(self) -> str:
        """One line for the console: what the run holds and how long it should take."""
        parts = []
        if self.testbed_cells:
            parts.append(f"{self.testbed_cells} testbed cells ({self.testbed_problems:,} fits)")
        if self.bandit_cells:
            parts.append(f"{self.bandit_cells} bandit runs ({self.bandit_seed_steps:,} seed-steps)")
        busy = busy_note(self.load, self.cores)
        notes = "".join(f"; {note}" for note in self.notes + ((busy,) if busy else ()))
        return (
            f"estimate: {', '.join(parts) or 'nothing to run'}; about {format_duration(self.wall_seconds)} "
            f"on {self.parallel} core{'s' if self.parallel > 1 else ''} with a cold compilation cache "
            f"(compiling {format_duration(self.compile_seconds / self.parallel)} of it), an estimate from CPU "
            f"costs measured on {self.machine} ({CHECKED_AGAINST_RUNS}){notes}"
        )


def format_duration(seconds: float) -> str:
    """45 -> "45 s", 150 -> "2.5 min", 7200 -> "2.0 h"."""
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def machine_load() -> float | None:
    """The 1-minute load average (runnable processes), or None where the OS has none."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def busy_note(load: float | None, cores: int | None) -> str | None:
    """What the estimate says when other work already keeps every core busy.

    The estimate divides CPU seconds by the cores the run keeps busy, as if it had them
    to itself; on a machine already loaded the run gets a share of them, and jobs sharing
    cores also slow each other's CPU time (caches, memory bandwidth; docs/performance.md
    measured mlp's bandit step at 2.1-2.3x its CPU time beside 4 other jobs). No
    factor is guessed: the load is reported.
    """
    if load is None or not cores or load < cores:
        return None
    return (f"this machine is busy now (load {load:.1f} on {cores} cores before the run): other jobs "
            "share its cores, so expect the run to take longer than this")


def cores_available() -> int:
    """The cores this process may use (``_src.devices.usable_cores``)."""
    return usable_cores()


def _machine(table: dict) -> str:
    machine = table["machine"]
    low, high = machine.get("load_average", [float("nan")] * 2)
    return (f"{machine['cpu']}, {machine['cores']} cores, load {low:g}-{high:g}, {table['measured']} "
            f"(bench/costs.py)")


def _config(name: str, overrides: dict) -> Any | None:
    try:
        return registry.config(name, **overrides)
    except (ValueError, TypeError):
        return None


class _Costs:
    """Cost lookups for one table, remembering which agents had to stand in."""

    def __init__(self, table: dict):
        self.table = table
        self.stand_ins: dict[str, str] = {}

    def measured(self, agent: str) -> str:
        agents = self.table["agents"]
        if agent in agents:
            return agent
        chosen = STAND_INS.get(agent, FALLBACK_AGENT)
        if chosen not in agents:
            chosen = FALLBACK_AGENT
        self.stand_ins[agent] = chosen
        return chosen

    def _scale(self, agent: str, overrides: dict, measured: str, num_train: int | None, input_dim: int) -> float:
        """The agent's work against the measured agent's: SGD steps and ensemble members."""
        mine, theirs = _config(agent, overrides), _config(measured, self._measured_overrides(measured))
        if mine is None or theirs is None:
            return 1.0
        scale = 1.0
        for field in ("num_ensemble",):
            if hasattr(mine, field) and hasattr(theirs, field):
                scale *= getattr(mine, field) / getattr(theirs, field)
        if num_train is not None and hasattr(mine, "num_steps") and hasattr(theirs, "num_steps"):
            scale *= _steps(mine, num_train, input_dim) / max(_steps(theirs, 100, 2), 1)
        return scale

    def _measured_overrides(self, measured: str) -> dict:
        members = self.table.get("ensemble_members")
        config = _config(measured, {})
        return {"num_ensemble": members} if members and hasattr(config, "num_ensemble") else {}

    def beyond_measured_members(self, agent: str, overrides: dict) -> bool:
        """Whether the agent is an ensemble larger than the table's measured one."""
        members, config = self.table.get("ensemble_members"), _config(agent, overrides)
        return bool(members) and getattr(config, "num_ensemble", 0) > members

    def testbed_seed(self, agent: str, overrides: dict, problem: dict, designs: int) -> float:
        measured = self.measured(agent)
        costs = self.table["agents"][measured]["testbed"]
        num_train, input_dim = int(problem.get("num_train") or 100), int(problem.get("input_dim") or 2)
        fit = costs["fit_cpu_seconds_per_seed"] * self._scale(agent, overrides, measured, num_train, input_dim)
        members = self._scale(agent, overrides, measured, None, input_dim)
        size = problem.get("num_test", 1000) * problem.get("num_models", 1000) / 1e6
        evaluation = costs["eval_cpu_seconds_per_seed_design_1000_test"] * designs * size * members
        return fit + evaluation

    def testbed_compile(self, agent: str) -> float:
        return self.table["agents"][self.measured(agent)]["testbed"]["compile_cpu_seconds"]

    def bandit_seed_step(self, agent: str, overrides: dict, input_dim: int) -> float:
        measured = self.measured(agent)
        by_dim = self.table["agents"][measured]["bandit"]
        (d0, d1) = MEASURED_DIMS
        c0, c1 = by_dim[str(d0)]["cpu_seconds_per_seed_step"], by_dim[str(d1)]["cpu_seconds_per_seed_step"]
        per_step = max(c0, c0 + (c1 - c0) * (input_dim - d0) / (d1 - d0))
        return per_step * self._scale(agent, overrides, measured, None, input_dim)

    def bandit_compile(self, agent: str, input_dim: int) -> float:
        by_dim = self.table["agents"][self.measured(agent)]["bandit"]
        return by_dim[str(MEASURED_DIMS[0] if input_dim < 10 else MEASURED_DIMS[1])]["compile_cpu_seconds"]


def _steps(config: Any, num_train: int, input_dim: int) -> float:
    steps = float(config.num_steps)
    factor, ratio = getattr(config, "high_data_step_factor", None), getattr(config, "high_data_ratio", None)
    if factor is not None and ratio is not None and num_train / input_dim > ratio:
        steps *= factor
    return steps


def estimate_cells(
    cells: Sequence[Cell], parallel: int = 1, table: dict | None = None, host_agents: Collection[str] = ()
) -> Estimate:
    """The cost of computing ``cells`` (testbed, realdata and bandit cells as the
    commands build them) with ``parallel`` cores kept busy. host_agents: the names of
    host agents (``agent_files.host_agent_names``), whose cells are counted but not costed."""
    table = load_cost_table() if table is None else table
    costs = _Costs(table)
    compute = compile_ = 0.0
    testbed_cells = bandit_cells = problems = seed_steps = 0
    compiled: set = set()
    unestimated: list[str] = []
    large: list[str] = []
    for cell in cells:
        if cell.agent in host_agents:
            if cell.agent not in unestimated:
                unestimated.append(cell.agent)
            if cell.kind == "bandit":
                bandit_cells += 1
                seed_steps += int(dict(cell.problem)["num_steps"]) * len(cell.seeds)
            else:
                testbed_cells += 1
                problems += len(cell.seeds)
            continue
        problem, overrides = dict(cell.problem), dict(cell.agent_config)
        seeds = len(cell.seeds)
        if cell.kind == "bandit":
            bandit_cells += 1
            steps = int(problem["num_steps"])
            input_dim = int(problem.get("input_dim") or 2)
            seed_steps += steps * seeds
            compute += costs.bandit_seed_step(cell.agent, overrides, input_dim) * steps * seeds
            if costs.beyond_measured_members(cell.agent, overrides) and cell.agent not in large:
                large.append(cell.agent)
            key = ("bandit", cell.agent, tuple(sorted(problem.items())))
            if key not in compiled:
                compiled.add(key)
                compile_ += costs.bandit_compile(cell.agent, input_dim)
        else:
            testbed_cells += 1
            problems += seeds
            compute += costs.testbed_seed(cell.agent, overrides, problem, len(problem["designs"])) * seeds
            family = (problem.get("activation"), str(problem.get("hidden_sizes")), problem.get("dataset"))
            key = ("testbed", cell.agent, family, bucket_size(int(problem.get("num_train") or 0)))
            if key not in compiled:
                compiled.add(key)
                compile_ += costs.testbed_compile(cell.agent)
    by_stand_in: dict[str, list[str]] = {}
    for agent, measured in costs.stand_ins.items():
        by_stand_in.setdefault(measured, []).append(agent)
    notes = tuple(f"{', '.join(agents)} counted as {measured} (no measured cost)"
                  for measured, agents in by_stand_in.items())
    if large:
        notes += (f"{', '.join(large)}: {LARGE_ENSEMBLE_NOTE.format(members=table['ensemble_members'])}",)
    if unestimated:
        notes += (f"{', '.join(unestimated)}: a host agent (agent(data, spec) -> sampler), whose cost "
                  "cannot be estimated: its own code runs every fit and draw; left out of the time",)
    return Estimate(testbed_cells, bandit_cells, problems, seed_steps, compute, compile_, max(1, parallel),
                    _machine(table), notes, load=machine_load(), cores=cores_available())


def bandit_seed_step_seconds(agent: str, overrides: dict, input_dim: int, table: dict | None = None) -> float:
    """The estimate's CPU seconds per bandit seed-step of ``agent`` with ``overrides`` at
    ``input_dim`` (the rules above applied to the cost table; bench/bandit_scaling.py
    checks them against measured steps)."""
    return _Costs(load_cost_table() if table is None else table).bandit_seed_step(agent, overrides, input_dim)


def cell_seconds(cell: Cell, table: dict | None = None) -> float:
    """The estimated CPU seconds of one cell, its compilation included (cells' order
    for ``run_cells(cost=...)``)."""
    estimate = estimate_cells([cell], table=table)
    return estimate.compute_seconds + estimate.compile_seconds


def check_testbed_memory(
    sweep: Sweep, num_agents: int, num_seeds: int, num_test: int, points: int = 1, what: str = "this testbed run"
) -> None:
    """Refuses, before anything is allocated (the seeds' list included), a run whose
    largest setting or whose rows cannot fit in this machine's memory
    (``_src.memory.check_fits``). points: grid points run together with every seed in
    one program (``tune``)."""
    rows = num_agents * points * len(sweep.settings) * len(sweep.designs) * num_seeds
    max_tau = max(design.tau for design in sweep.designs)
    for setting in sweep.settings:
        check_fits(what, testbed_memory(points * num_seeds, setting.num_train, num_test, max_tau,
                                        setting.input_dim, rows))
