"""Tests for decision_bench.experiments: cell ids, the results store, resumption, executors."""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np
import pandas as pd
import pytest

from decision_bench._src.versions import PACKAGES, environment_info
from decision_bench.experiments.cells import Cell, grid
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.store import ResultsStore


def _cells():
    return grid(
        "testbed",
        {"mlp": {}, "ensemble": {"num_members": 10}},
        {"num_train": [1, 10, 100], "temperature": [0.1]},
        seeds=[0, 1, 2, 3],
        seeds_per_cell=2,
    )


def _compute(cell: Cell) -> pd.DataFrame:
    """Deterministic rows for a cell: one per seed, with floats that need full precision."""
    problem = dict(cell.problem)
    rows = []
    for seed in cell.seeds:
        rng = np.random.default_rng([seed, problem["num_train"], len(cell.agent)])
        rows.append(
            {
                "agent": cell.agent,
                "num_train": problem["num_train"],
                "temperature": problem["temperature"],
                "kappa": np.nan,
                "seed": seed,
                "kl": float(rng.lognormal()),
                "finite": True,
                "note": "",
            }
        )
    return pd.DataFrame(rows)


def _expected(cells) -> pd.DataFrame:
    return pd.concat([_compute(c) for c in cells], ignore_index=True)


class _Counting:
    """compute_fn that records the cells it computed and can fail on the k-th call."""

    def __init__(self, fail_on_call: int | None = None):
        self.calls: list[str] = []
        self.fail_on_call = fail_on_call

    def __call__(self, cell):
        self.calls.append(cell.id)
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt("simulated interruption")
        return _compute(cell)


# ----------------------------------------------------------------------------- cells


def test_cell_id_is_a_function_of_parameters_only():
    a = Cell("testbed", "ensemble+", {"num_members": 10, "l2": 1.0}, {"tau": 10, "temperature": 0.1}, (0, 1))
    b = Cell(
        "testbed",
        "ensemble+",
        [("l2", np.float64(1.0)), ("num_members", np.int64(10))],
        {"temperature": 0.1, "tau": 10},
        [np.int64(0), 1],
    )
    assert a == b and hash(a) == hash(b) and a.id == b.id
    # Pinned: ids name files on disk, so a silent change would orphan every stored result.
    assert a.id == "testbed-ensemble+-tau=10-temperature=0.1-l2=1.0-num_members=10-seeds=0-1x2-" + a.id[-12:]
    assert re.fullmatch(r"[A-Za-z0-9_.=+-]+-[0-9a-f]{12}", a.id)
    assert a.agent_config == (("l2", 1.0), ("num_members", 10))


def test_cell_id_pinned_hash():
    cell = Cell("bandit", "mlp", {}, {"input_dim": 2}, (0,))
    assert cell.canonical_json() == (
        '{"agent":"mlp","agent_config":{},"kind":"bandit","problem":{"input_dim":2},"seeds":[0]}'
    )
    assert cell.id == "bandit-mlp-input_dim=2-seed=0-bea0c59f5868"


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "bandit"},
        {"agent": "mlp"},
        {"agent_config": {"num_members": 11}},
        {"problem": {"tau": 1, "temperature": 0.1}},
        {"seeds": (0, 2)},
        {"problem": {"tau": 10.0, "temperature": 0.1}},  # 10 and 10.0 are different values
    ],
)
def test_different_parameters_give_different_ids(change):
    base = dict(kind="testbed", agent="ensemble", agent_config={"num_members": 10},
                problem={"tau": 10, "temperature": 0.1}, seeds=(0, 1))  # fmt: skip
    assert Cell(**base).id != Cell(**{**base, **change}).id


def test_long_slugs_are_truncated_but_ids_stay_unique():
    a = Cell("testbed", "agent", {f"param_{i}": i for i in range(30)})
    b = Cell("testbed", "agent", {**{f"param_{i}": i for i in range(29)}, "param_29": -1})
    assert len(a.id) <= 80 + 13 and a.id != b.id


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="", agent="mlp"), "Cell.kind"),
        (dict(kind="testbed", agent=3), "Cell.agent"),
        (dict(kind="testbed", agent="mlp", seeds=()), "Cell.seeds"),
        (dict(kind="testbed", agent="mlp", seeds=(-1,)), "Cell.seeds"),
        (dict(kind="testbed", agent="mlp", problem={"x": float("nan")}), r"Cell.problem\['x'\]"),
        (dict(kind="testbed", agent="mlp", agent_config={"f": object()}), r"Cell.agent_config\['f'\]"),
    ],
)
def test_cell_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Cell(**kwargs)


def test_grid_is_the_full_product_in_a_fixed_order():
    cells = _cells()
    assert len(cells) == 2 * 3 * 2
    assert len({c.id for c in cells}) == len(cells)
    assert cells == _cells()
    assert [c.seeds for c in cells[:2]] == [(0, 1), (2, 3)]
    with pytest.raises(ValueError, match="seeds_per_cell"):
        grid("testbed", ["mlp"], {"tau": [1]}, [0], seeds_per_cell=0)
    with pytest.raises(ValueError, match=r"problems\['tau'\]"):
        grid("testbed", ["mlp"], {"tau": []}, [0])


def test_cell_round_trips_through_its_dict():
    cell = Cell("testbed", "mlp", {"hidden": (50, 50)}, {"tau": 10}, (3,))
    assert Cell.from_dict(json.loads(json.dumps(cell.to_dict()))) == cell


# ----------------------------------------------------------------------------- store


def test_store_round_trips_rows_exactly(tmp_path):
    store = ResultsStore(tmp_path)
    cell = _cells()[0]
    frame = pd.DataFrame(
        {
            "agent": ["mlp", "mlp", "mlp"],
            "kl": [0.1 + 0.2, np.nan, np.inf],
            "n": np.array([1, 2, 3], dtype=np.int64),
            "ok": [True, False, True],
            "error": ["", "boom", ""],
        }
    )
    store.write(cell, frame)
    assert store.is_done(cell)
    pd.testing.assert_frame_equal(store.read(cell), frame)
    payload = json.loads(store.path(cell).read_text())
    assert payload["cell"] == cell.to_dict()
    assert payload["num_rows"] == 3
    assert payload["versions"] == environment_info()
    # The one version recorder (_src/versions.py): packages, Python, platform, backend.
    assert set(payload["versions"]) == set(PACKAGES) | {"python", "platform", "cpu", "backend", "devices"}
    assert {"decision-bench", "jax", "flax", "optax", "numpy"} <= set(PACKAGES)
    assert payload["versions"]["numpy"] == np.__version__
    assert not store.is_done(_cells()[1])


def test_store_ignores_leftover_temporary_files(tmp_path):
    store = ResultsStore(tmp_path)
    cells = _cells()[:2]
    store.write(cells[0], _compute(cells[0]))
    (tmp_path / f".{cells[1].id}.abc.tmp").write_text('{"format": "decision_bench.cel')
    pd.testing.assert_frame_equal(store.load_all(), _compute(cells[0]))
    assert list(store.load_all(with_cell_id=True)["cell_id"].unique()) == [cells[0].id]


def test_store_rejects_a_non_dataframe(tmp_path):
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        ResultsStore(tmp_path).write(_cells()[0], [1, 2, 3])


def test_interrupted_sweep_resumes_without_duplicates_or_losses(tmp_path):
    cells = _cells()
    store = ResultsStore(tmp_path)
    k = 5
    first = _Counting(fail_on_call=k + 1)
    with pytest.raises(KeyboardInterrupt):
        run_cells(cells, first, store, progress=False)
    assert len(list(tmp_path.glob("*.json"))) == k
    assert [store.is_done(c) for c in cells] == [True] * k + [False] * (len(cells) - k)

    second = _Counting()
    result = run_cells(cells, second, store, progress=False)
    assert second.calls == [c.id for c in cells[k:]]  # finished cells are not recomputed
    pd.testing.assert_frame_equal(result, _expected(cells))
    assert not result.duplicated().any()
    loaded = store.load_all(with_cell_id=True)
    assert len(loaded) == sum(len(c.seeds) for c in cells)
    assert not loaded.duplicated().any()
    assert set(loaded["cell_id"]) == {c.id for c in cells}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left

    third = _Counting()
    pd.testing.assert_frame_equal(run_cells(cells, third, store, progress=False), _expected(cells))
    assert third.calls == []


@pytest.mark.parametrize("damage", ["truncate", "tamper", "garbage"])
def test_corrupt_cell_file_is_reported_and_recomputed(tmp_path, damage):
    cells = _cells()[:3]
    store = ResultsStore(tmp_path)
    run_cells(cells, _compute, store, progress=False)
    path = store.path(cells[1])
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "tamper":  # still valid JSON, but the rows no longer match the checksum
        payload = json.loads(text)
        payload["table"]["data"][payload["table"]["columns"].index("kl")][0] = 123.0
        path.write_text(json.dumps(payload))
    else:
        path.write_bytes(b"\x00\xff")

    with pytest.warns(RuntimeWarning, match=re.escape(path.name)):
        assert not store.is_done(cells[1])
    counting = _Counting()
    with pytest.warns(RuntimeWarning, match=re.escape(path.name)):
        result = run_cells(cells, counting, store, progress=False)
    assert counting.calls == [cells[1].id]
    pd.testing.assert_frame_equal(result, _expected(cells))
    assert store.is_done(cells[1])


def test_run_sweep_validates_its_arguments(tmp_path):
    store = ResultsStore(tmp_path)
    cells = _cells()
    with pytest.raises(ValueError, match="executor"):
        run_cells(cells, _compute, store, executor="dask")
    with pytest.raises(ValueError, match="duplicates"):
        run_cells(cells + cells[:1], _compute, store, progress=False)
    with pytest.raises(ValueError, match="address"):
        run_cells(cells, _compute, store, address="auto", progress=False)
    with pytest.raises(ValueError, match=r"cells\[0\]"):
        run_cells(["not a cell"], _compute, store, progress=False)


def test_ray_executor_without_ray_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(ImportError, match=re.escape("pip install 'decision-bench[ray]'")):
        run_cells(_cells(), _compute, ResultsStore(tmp_path), executor="ray", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_progress_bar_runs(tmp_path, capsys):
    run_cells(_cells()[:2], _compute, ResultsStore(tmp_path), progress=True)
    assert "2/2" in capsys.readouterr().err


def test_results_file_grows_with_the_run(tmp_path):
    cells = _cells()[:3]
    store = ResultsStore(tmp_path / "cells")
    results = tmp_path / "results.csv"
    run_cells(cells[:1], _compute, store, progress=False)
    sizes = []
    run_cells(cells, _compute, store, progress=False, results_csv=results,
              on_cell_done=lambda cell, rows: sizes.append(len(pd.read_csv(results))))
    # rewritten after each computed cell with every finished cell's rows, the stored one included
    assert sizes == [len(_expected(cells[:2])), len(_expected(cells))]
    written, expected = pd.read_csv(results), _expected(cells)
    assert list(written["agent"]) == list(expected["agent"]) and list(written["seed"]) == list(expected["seed"])
    np.testing.assert_array_equal(written["kl"], expected["kl"])


class _MarkingCompute:
    """compute_fn that leaves one new file per call in `directory`, named after the cell.

    Ray pickles compute_fn to worker processes, so a call list kept in memory (as
    in _Counting) would stay in the workers; files in a shared directory do not.
    """

    def __init__(self, directory):
        self.directory = str(directory)

    def __call__(self, cell):
        import tempfile  # noqa: PLC0415 - only this helper needs it

        os.close(tempfile.mkstemp(dir=self.directory, prefix=f"{cell.id}.")[0])
        return _compute(cell)

    def calls(self) -> list[str]:
        """The cell ids computed so far, one entry per call, sorted."""
        return sorted(name.rsplit(".", 1)[0] for name in os.listdir(self.directory))


def _tests_on_pythonpath() -> str:
    # Workers import this test module (compute_fn is pickled by reference), so
    # they need the tests directory on their path.
    return os.pathsep.join(filter(None, [os.path.dirname(__file__), os.environ.get("PYTHONPATH")]))


def test_ray_executor_produces_the_same_rows_as_local_and_resumes_without_recomputing(tmp_path):
    ray = pytest.importorskip("ray")
    cells = _cells()
    local = run_cells(cells, _compute, ResultsStore(tmp_path / "local"), progress=False)
    marks = tmp_path / "marks"
    marks.mkdir()
    compute = _MarkingCompute(marks)
    ray_store = ResultsStore(tmp_path / "ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": _tests_on_pythonpath()}})  # fmt: skip
    try:
        # Half done beforehand, so the Ray run also exercises resumption.
        run_cells(cells[:5], _compute, ray_store, progress=False)
        remote = run_cells(cells, compute, ray_store, executor="ray", progress=False)
        assert compute.calls() == sorted(c.id for c in cells[5:])
        written = {p.name: p.stat().st_mtime_ns for p in ray_store.directory.iterdir()}
        # The same sweep again: every cell is done, so no task runs and no file is rewritten.
        again = run_cells(cells, compute, ray_store, executor="ray", progress=False)
    finally:
        ray.shutdown()
    assert compute.calls() == sorted(c.id for c in cells[5:])
    assert {p.name: p.stat().st_mtime_ns for p in ray_store.directory.iterdir()} == written
    pd.testing.assert_frame_equal(remote, local)
    pd.testing.assert_frame_equal(again, local)
    pd.testing.assert_frame_equal(ray_store.load_all(), ResultsStore(tmp_path / "local").load_all())
    assert sorted(os.listdir(tmp_path / "ray")) == sorted(os.listdir(tmp_path / "local"))


@pytest.mark.slow
def test_ray_executor_starts_and_stops_its_own_local_instance(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    # The instance run_cells starts inherits this environment.
    monkeypatch.setenv("PYTHONPATH", _tests_on_pythonpath())
    cells = _cells()[:4]
    remote = run_cells(cells, _compute, ResultsStore(tmp_path), executor="ray", progress=False)
    assert not ray.is_initialized()
    pd.testing.assert_frame_equal(remote, _expected(cells))


def test_store_round_trips_missing_values_of_nullable_columns(tmp_path):
    # The testbed's kappa column is Int64 with <NA> for iid designs.
    store = ResultsStore(tmp_path)
    cell = Cell("testbed", "mlp", {}, {"num_train": 10}, (0,))
    frame = pd.DataFrame({"kappa": pd.array([None, 2], dtype="Int64"), "kl": [0.5, 1.5]})
    store.write(cell, frame)
    back = store.read(cell)
    assert str(back["kappa"].dtype) == "Int64"
    assert back["kappa"].isna().tolist() == [True, False] and back["kappa"][1] == 2
    assert back["kl"].tolist() == [0.5, 1.5]


# ---------------------------------------------------------------- local worker processes


def test_worker_processes_produce_the_same_rows_as_one_process_and_resume(tmp_path):
    cells = _cells()
    local = run_cells(cells, _compute, ResultsStore(tmp_path / "local"), progress=False)
    marks = tmp_path / "marks"
    marks.mkdir()
    compute = _MarkingCompute(marks)
    store = ResultsStore(tmp_path / "workers")
    run_cells(cells[:5], _compute, store, progress=False)  # half done beforehand
    pooled = run_cells(cells, compute, store, progress=False, workers=2)
    assert compute.calls() == sorted(c.id for c in cells[5:])
    written = {p.name: p.stat().st_mtime_ns for p in store.directory.iterdir()}
    again = run_cells(cells, compute, store, progress=False, workers=2)
    assert compute.calls() == sorted(c.id for c in cells[5:])  # nothing recomputed
    assert {p.name: p.stat().st_mtime_ns for p in store.directory.iterdir()} == written
    pd.testing.assert_frame_equal(pooled, local)
    pd.testing.assert_frame_equal(again, local)


class _FailingOn:
    """compute_fn that raises on one cell (picklable, for worker processes)."""

    def __init__(self, cell_id: str):
        self.cell_id = cell_id

    def __call__(self, cell):
        if cell.id == self.cell_id:
            raise RuntimeError(f"boom on {cell.id}")
        return _compute(cell)


def test_an_error_in_a_worker_reaches_the_caller_and_finished_cells_stay(tmp_path):
    cells = _cells()
    store = ResultsStore(tmp_path)
    with pytest.raises(RuntimeError, match="boom on"):
        run_cells(cells, _FailingOn(cells[-1].id), store, progress=False, workers=2)
    assert not store.is_done(cells[-1])
    # What finished before the error is stored and is not recomputed.
    done = [c for c in cells if store.is_done(c)]
    rows = run_cells(cells, _compute, store, progress=False)
    pd.testing.assert_frame_equal(rows, _expected(cells))
    assert all(store.is_done(c) for c in done)


def test_workers_are_validated_in_one_line(tmp_path):
    store = ResultsStore(tmp_path)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"workers must be an integer >= 1, got"):
            run_cells(_cells(), _compute, store, progress=False, workers=bad)
    with pytest.raises(ValueError, match=r"workers is only used with executor='local'"):
        run_cells(_cells(), _compute, store, executor="ray", progress=False, workers=2)
    with pytest.raises(ValueError, match=r"compute_fn must pickle"):
        run_cells(_cells(), lambda cell: _compute(cell), store, progress=False, workers=2)
    assert list(tmp_path.iterdir()) == []


class _KilledOn:
    """compute_fn whose worker process kills itself with SIGKILL on one cell (as
    kill -9 or the out-of-memory killer would); picklable, for worker processes."""

    def __init__(self, cell_id: str):
        self.cell_id = cell_id

    def __call__(self, cell):
        if cell.id == self.cell_id:
            import signal  # noqa: PLC0415 - only this helper needs it

            os.kill(os.getpid(), signal.SIGKILL)
        return _compute(cell)


def test_a_worker_killed_by_sigkill_is_named_with_its_cell_and_finished_cells_stay(tmp_path):
    from decision_bench._src.console import RunFailed
    from decision_bench.experiments.executors import WorkerDied

    cells = _cells()
    store = ResultsStore(tmp_path)
    with pytest.raises(WorkerDied) as raised:
        run_cells(cells, _KilledOn(cells[-1].id), store, progress=False, workers=2)
    message = str(raised.value)
    assert isinstance(raised.value, RunFailed)
    assert re.match(r"worker process \d+ died \(killed by SIGKILL; an out-of-memory kill looks the same\) "
                    rf"while computing cell {re.escape(cells[-1].id)}; ", message), message
    assert str(tmp_path) in message and "run the same command again to resume" in message
    assert "\n" not in message
    assert not store.is_done(cells[-1])
    assert sum(store.is_done(c) for c in cells) >= 1
    pd.testing.assert_frame_equal(run_cells(cells, _compute, store, progress=False), _expected(cells))


def _free_port(listening: bool):
    import socket  # noqa: PLC0415 - only these tests need it

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    if listening:
        server.listen(5)  # accepts connections, but is no Ray
    else:
        server.close()  # nothing answers: connection refused
    return server, port


def test_an_unreachable_ray_address_fails_at_once_in_one_line(tmp_path):
    pytest.importorskip("ray")
    from decision_bench._src.console import RunFailed

    _, port = _free_port(listening=False)
    with pytest.raises(RunFailed) as raised:
        run_cells(_cells(), _compute, ResultsStore(tmp_path), executor="ray",
                  address=f"ray://127.0.0.1:{port}", progress=False)
    message = str(raised.value)
    assert message.startswith(f"cannot reach the Ray cluster at --address 'ray://127.0.0.1:{port}' "
                              "(connection refused)"), message
    assert "\n" not in message and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_ray_address_that_is_no_ray_times_out_in_one_line(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    import time

    from decision_bench._src.console import RunFailed
    from decision_bench.experiments import executors

    monkeypatch.setattr(executors, "RAY_CONNECT_TIMEOUT_S", 3.0)
    server, port = _free_port(listening=True)
    began = time.monotonic()
    with pytest.raises(RunFailed, match=r"cannot connect to the Ray cluster at --address '127.0.0.1:\d+' "
                                        r"\(no Ray answered; gave up after \d+ s"):
        run_cells(_cells(), _compute, ResultsStore(tmp_path), executor="ray",
                  address=f"127.0.0.1:{port}", progress=False)
    assert time.monotonic() - began < 60  # Ray's defaults wait for minutes
    server.close()


class _TwoArgumentError(Exception):
    """Pickles, but does not unpickle (its __init__ needs two arguments)."""

    def __init__(self, what, where):
        super().__init__(f"{what} at {where}")


class _RaisingUnpicklable:
    def __call__(self, cell):
        raise _TwoArgumentError("bad value", cell.id)


def test_an_error_that_does_not_unpickle_still_reaches_the_caller_as_text(tmp_path):
    cells = _cells()[:2]
    with pytest.raises(RuntimeError, match=r"^_TwoArgumentError: bad value at "):
        run_cells(cells, _RaisingUnpicklable(), ResultsStore(tmp_path), progress=False, workers=2)


class _OrderRecording:
    """compute_fn that appends each cell's id to one file as it starts (a line per call)."""

    def __init__(self, path):
        self.path = str(path)

    def __call__(self, cell):
        with open(self.path, "a") as f:
            f.write(cell.id + "\n")
        return _compute(cell)


def test_worker_processes_start_the_costliest_cells_first(tmp_path):
    cells = _cells()
    log = tmp_path / "started.txt"

    def cost(cell):
        return dict(cell.problem)["num_train"] * (10 if cell.agent == "ensemble" else 1)

    rows = run_cells(cells, _OrderRecording(log), ResultsStore(tmp_path / "s"), progress=False, workers=2, cost=cost)
    started = log.read_text().split()
    # The first cell to start is one of the first two handed out (a third is handed out only
    # once one of them is done): with cost, the two ensemble T = 100 cells; without, the grid's first two.
    costliest = sorted(cells, key=cost, reverse=True)[:2]
    assert {cost(c) for c in costliest} == {1000} and started[0] in {c.id for c in costliest}
    assert sorted(started) == sorted(c.id for c in cells)
    pd.testing.assert_frame_equal(rows, _expected(cells))  # rows still in cell order
    log.unlink()
    run_cells(cells, _OrderRecording(log), ResultsStore(tmp_path / "t"), progress=False, workers=2)
    assert log.read_text().split()[0] in {c.id for c in cells[:2]}


def test_a_symlinked_cells_folder_is_refused(tmp_path):
    # S09 (issue 34): a pre-existing link at OUT/cells was followed, writing cells elsewhere.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "cells").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValueError, match=r"results folder '.*cells' is a symbolic link"):
        ResultsStore(tmp_path / "out" / "cells")


def test_an_edited_agent_file_is_named_when_its_cells_are_computed_anew(tmp_path):
    # R46 (issue 34): an edited agent file's cells were recomputed without a word.
    from decision_bench.experiments.store import edit_notes, edited_agent_files

    old, new = "ab" * 32, "cd" * 32
    store = ResultsStore(tmp_path / "cells")
    stored = Cell("testbed", "mine", {}, {"num_train": 1}, (0,), agent_file_sha256=old)
    store.write(stored, pd.DataFrame({"agent": ["mine"], "kl": [0.1]}))
    edited = Cell("testbed", "mine", {}, {"num_train": 1}, (0,), agent_file_sha256=new)
    assert edited_agent_files(store, [edited]) == {"mine": (old,)}
    (note,) = edit_notes(store, [edited])
    assert "agent file of 'mine' changed" in note and old[:12] in note and new[:12] in note
    assert edited_agent_files(store, [stored]) == {}  # the same file: a resume, nothing to say
    registered = Cell("testbed", "mlp", {}, {"num_train": 1}, (0,))
    assert edited_agent_files(store, [registered]) == {}
