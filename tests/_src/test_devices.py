"""Seeds spread over devices (_src/devices.py): which devices, and that a seed's numbers
do not depend on how many devices the process has."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from decision_bench._src import devices

# Runs a small bandit (straight through, and interrupted then resumed) and a small testbed in a fresh process with the given number of
# CPU devices and prints their numbers (exactly, as float hex) and the placement.
_CHILD = r"""
import json, sys
import decision_bench  # importing the package starts no computation: the count can still be set
count = decision_bench.use_cpu_cores(int(sys.argv[1]))
from decision_bench.bandit.run import run_bandit
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import custom_sweep
bandit = run_bandit("mlp", "NeuralBandit-v0", num_steps=30, seeds=4, chunk_size=10, progress=False,
                    env_kwargs={"input_dim": 2, "num_actions": 8, "temperature": 0.1})
# 3 seeds: on 2 devices padded to 4, the copy never saved or reported. Interrupted after
# its second chunk and resumed from the checkpoint: the same numbers.
import tempfile
out = tempfile.mkdtemp()
def stop(t):
    if t == 20:
        raise KeyboardInterrupt
kwargs = dict(num_steps=30, seeds=3, chunk_size=10, progress=False, out_dir=out,
              env_kwargs={"input_dim": 2, "num_actions": 8, "temperature": 0.1})
interrupted = False
try:
    run_bandit("mlp", "NeuralBandit-v0", callback=stop, **kwargs)
except KeyboardInterrupt:
    interrupted = True
resumed = run_bandit("mlp", "NeuralBandit-v0", resume=True, **kwargs)
# 3 seeds: on 2 devices padded to 4 (a copy of the last), the copy's rows dropped
sweep = custom_sweep(input_dims=(2,), num_trains=(10,), temperatures=(0.1,), taus=(1, 10), num_seeds=3, name="d")
testbed = run_testbed("mlp", sweep=sweep, seeds=3, num_test=20, num_models=20, progress=False)
print(json.dumps({
    "devices": count,
    "interrupted": interrupted,
    "regret": [float(v).hex() for v in bandit.cumulative_regret],
    "resumed": [float(v).hex() for v in resumed.cumulative_regret],
    "resumed_seeds": sorted(set(resumed.seed.tolist())),
    "kl": [float(v).hex() for v in testbed.kl],
    "testbed_seeds": sorted(set(testbed.seed.tolist())),
}))
"""


def _children(*counts: int) -> list[dict]:
    """_CHILD's output for each device count, the processes run at once."""
    running = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for count in counts
    ]
    outputs = []
    for process in running:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def test_a_runs_numbers_are_the_same_on_one_device_and_on_two():
    one, two = _children(1, 2)
    assert (one["devices"], two["devices"]) == (1, 2)
    assert one["interrupted"] and two["interrupted"]
    assert len(one["regret"]) == 4 * 30 and len(one["kl"]) == 3 * 2
    assert one["testbed_seeds"] == two["testbed_seeds"] == [0, 1, 2]
    assert two["regret"] == one["regret"]
    # 3 seeds (padded to 4 on two devices), interrupted and resumed: the same numbers
    # as one device, and as the first 3 seeds of the 4-seed run (a seed's own numbers)
    assert one["resumed_seeds"] == two["resumed_seeds"] == [0, 1, 2]
    assert two["resumed"] == one["resumed"] == one["regret"][: 3 * 30]
    assert two["kl"] == one["kl"]


@pytest.mark.parametrize(
    "available, num_seeds, expected",
    [(1, 20, 1), (2, 20, 2), (2, 5, 1), (2, 1, 1), (4, 6, 3), (4, 20, 4), (4, 2, 2), (16, 20, 10)],
)
def test_seeds_go_to_the_most_devices_that_divide_them(monkeypatch, available, num_seeds, expected):
    monkeypatch.setattr(jax, "local_device_count", lambda: available)
    assert devices.seed_devices(num_seeds) == expected


def test_one_device_leaves_arrays_where_they_are():
    assert jax.local_device_count() == 1  # the test process keeps JAX's default
    tree = {"x": np.arange(6.0).reshape(3, 2)}
    assert devices.seed_sharding(3) is None
    assert devices.shard_seeds(tree, 3) is tree


def test_after_the_first_computation_the_device_count_stays():
    jax.numpy.zeros(()).block_until_ready()  # the backend is running
    assert devices.use_cpu_cores(4) == jax.local_device_count() == 1


@pytest.mark.parametrize(
    "available, num_seeds, expected", [(1, 5, 5), (2, 5, 6), (2, 6, 6), (2, 1, 1), (4, 5, 8), (4, 3, 3)]
)
def test_seeds_are_padded_to_a_multiple_of_the_devices(monkeypatch, available, num_seeds, expected):
    monkeypatch.setattr(jax, "local_device_count", lambda: available)
    assert devices.padded_seed_count(num_seeds) == expected
    padded = devices.pad_seeds({"k": np.arange(num_seeds)}, num_seeds)["k"]
    # the seeds themselves first, then copies of the last
    np.testing.assert_array_equal(padded, [min(i, num_seeds - 1) for i in range(expected)])


def test_a_device_count_below_one_is_refused():
    with pytest.raises(ValueError, match="count must be >= 1"):
        devices.use_cpu_cores(0)


def test_the_program_asks_for_one_cpu_device_per_core():
    # main() as the decision-bench program runs it (argv None), then the count JAX has.
    code = (
        "import os, sys; sys.argv = ['decision-bench', 'reproduce', '--estimate']\n"
        "from decision_bench.cli.program import main\n"
        "assert main() == 0\n"
        "import jax; print(jax.local_device_count(), len(os.sched_getaffinity(0)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got, cores = done.stdout.strip().splitlines()[-1].split()
    assert int(got) == int(cores)


_DEVICE_COUNT_MODULE = """
import jax, pandas as pd

def devices_of_worker(cell):
    return pd.DataFrame({"devices": [jax.local_device_count()]})
"""

_POOL = r"""
import sys
import jax
jax.config.update("jax_num_cpu_devices", int(sys.argv[2]))
sys.path.insert(0, sys.argv[1])
from device_count_module import devices_of_worker
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.store import ResultsStore
cells = [Cell("testbed", "mlp", {}, {"num_train": t}, (0,)) for t in (1, 2, 3, 4)]
rows = run_cells(cells, devices_of_worker, ResultsStore(sys.argv[1] + "/store"), progress=False,
                 workers=int(sys.argv[3]))
print(sorted(set(rows["devices"].tolist())))
"""


@pytest.mark.parametrize(
    "parent, workers, each", [(4, 2, 2), (2, 2, 1), pytest.param(3, 2, 1, marks=pytest.mark.slow)]
)
def test_worker_processes_share_the_parents_cpu_devices(tmp_path, parent, workers, each):
    (tmp_path / "device_count_module.py").write_text(_DEVICE_COUNT_MODULE)
    done = subprocess.run(
        [sys.executable, "-c", _POOL, str(tmp_path), str(parent), str(workers)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == f"[{each}]"


# A host agent whose fit takes longer than XLA:CPU's collective limit (lowered here to
# 1 s to warn, 2 s to abort), on two CPU devices, in the testbed and the bandit. Its seeds
# used to be split over both devices, and XLA gathered them to the device running the
# callback; the other device's collective waited out the limit and aborted the process.
_SLOW_HOST = r"""
import json, sys, time
import numpy as np
import decision_bench
count = decision_bench.use_cpu_cores(2)
from decision_bench.agents.host_agent import host_agent
from decision_bench.bandit.run import run_bandit
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import custom_sweep

def slow(data, spec):
    time.sleep(3.0)  # over the lowered limit
    return lambda x, seed: np.zeros((len(x), spec.num_classes), np.float32)

def factory(spec, **_):
    return host_agent(slow, spec, name="slow")

sweep = custom_sweep(input_dims=(2,), num_trains=(3,), temperatures=(0.1,), taus=(1,), num_seeds=2, name="d")
testbed = run_testbed({"slow": factory}, sweep=sweep, seeds=2, num_test=2, num_models=1, progress=False)
bandit = run_bandit(factory, "NeuralBandit-v0", num_steps=1, seeds=2, progress=False,
                    env_kwargs={"input_dim": 2, "num_actions": 2, "temperature": 0.1})
print(json.dumps({"devices": count, "testbed_seeds": sorted(set(testbed.seed.tolist())),
                  "bandit_seeds": sorted(set(bandit.seed.tolist()))}))
"""


def test_a_slow_host_agent_runs_its_seeds_on_one_device_with_no_collective_to_time_out():
    env = dict(os.environ, XLA_FLAGS="--xla_cpu_collective_call_warn_stuck_timeout_seconds=1 "
               "--xla_cpu_collective_call_terminate_timeout_seconds=2")
    done = subprocess.run([sys.executable, "-c", _SLOW_HOST], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "may be stuck" not in done.stderr  # no device waited on the callback
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "devices": 2, "testbed_seeds": [0, 1], "bandit_seeds": [0, 1]}


def test_host_agents_seeds_are_neither_padded_nor_split(monkeypatch):
    monkeypatch.setattr(jax, "local_device_count", lambda: 2)
    assert devices.padded_seed_count(5, max_devices=1) == 5
    assert devices.seed_devices(4, max_devices=1) == 1
    assert devices.seed_sharding(4, max_devices=1) is None
