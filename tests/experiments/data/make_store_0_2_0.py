"""Writes store_0_2_0/: result files as decision-bench 0.2.0 (main before issue 23)
stored them. Run it with that version's code on the path, never with a later one:

    PYTHONPATH=/path/to/0.2.0/checkout python tests/experiments/data/make_store_0_2_0.py

The cells are the ones that version's ``reproduce`` planned for the robustness-quick
preset (two agents; default and other generative families, and its bandit cells)
and one cell its ``testbed`` command planned; the rows are small stand-ins (a
cell's rows are stored as given, whatever computed them).
"""

import pathlib
import shutil

import pandas as pd

from decision_bench.cli.testbed import testbed_cells
from decision_bench.evaluation.sweeps import custom_sweep
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells
from decision_bench.experiments.store import FORMAT, ResultsStore

assert FORMAT == "decision_bench.cell/1", "run this with decision-bench 0.2.0"
OUT = pathlib.Path(__file__).resolve().parent / "store_0_2_0"
shutil.rmtree(OUT, ignore_errors=True)
store = ResultsStore(OUT)
preset = get_preset("robustness-quick")
cells = list(build_cells(preset, ("mlp", "ensemble+")))
cells += testbed_cells(["mlp"], custom_sweep(2, 3, 0.1, taus=[1], num_seeds=1), (0,), 20, 20, "auto")
for cell in cells:
    store.write(cell, pd.DataFrame({"agent": cell.agent, "seed": list(cell.seeds), "value": 0.5}))
(OUT / "ids.txt").write_text("".join(f"{cell.id}\n" for cell in cells))
