"""Stored baselines' wall seconds: the sum of a run's sessions, never the idle time between."""

import datetime
import json
from typing import NamedTuple

from decision_bench.experiments.baselines import _wall_seconds


class Cell(NamedTuple):
    agent: str
    name: str


def at(minute: int) -> datetime.datetime:
    return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(minutes=minute)


def write_manifest(run_dir, **times):
    record = {"format": "decision_bench.run/1", "command": "testbed", "arguments": {}}
    record.update(times)
    (run_dir / "run_manifest.json").write_text(json.dumps(record))


def test_a_resumed_run_counts_each_session_from_its_start_and_not_the_gap(tmp_path):
    # Session 1 starts at 0: mlp cells at 2 and 5, ens at 9; stopped. Session 2 starts at
    # 100 (91 idle minutes): ens at 104, then bbb at 110.
    write_manifest(tmp_path, claimed=at(100).isoformat(), claims=[at(0).isoformat(), at(100).isoformat()])
    made = {Cell("mlp", "a"): at(2), Cell("mlp", "b"): at(5), Cell("ens", "c"): at(9),
            Cell("ens", "d"): at(104), Cell("bbb", "e"): at(110)}
    seconds = _wall_seconds(tmp_path, [(cell, None) for cell in made], made)
    assert seconds == {"mlp": 5 * 60, "ens": (4 + 4) * 60, "bbb": 6 * 60}


def test_cells_from_before_the_earliest_recorded_start_have_no_known_time(tmp_path):
    # A manifest from before the start history keeps only the latest start (100).
    write_manifest(tmp_path, claimed=at(100).isoformat())
    made = {Cell("mlp", "a"): at(2), Cell("ens", "b"): at(9), Cell("ens", "c"): at(104), Cell("bbb", "d"): at(110)}
    seconds = _wall_seconds(tmp_path, [(cell, None) for cell in made], made)
    assert seconds == {"mlp": None, "ens": None, "bbb": 6 * 60}


def test_a_run_without_a_manifest_has_no_known_times(tmp_path):
    made = {Cell("mlp", "a"): at(2)}
    assert _wall_seconds(tmp_path, [(cell, None) for cell in made], made) == {"mlp": None}


def test_a_run_of_several_workers_has_no_known_times(tmp_path):
    # Two workers compute cells side by side: the time between two cells' creation is
    # not either cell's time (a 2-hour bandit run ends between two 5-minute testbed cells).
    write_manifest(tmp_path, claimed=at(0).isoformat(), claims=[at(0).isoformat()])
    (tmp_path / "run.json").write_text(json.dumps({"workers": 2}))
    made = {Cell("mlp", "a"): at(2), Cell("bbb", "b"): at(120)}
    assert _wall_seconds(tmp_path, [(cell, None) for cell in made], made) == {"mlp": None, "bbb": None}
    (tmp_path / "run.json").write_text(json.dumps({"workers": 1}))
    assert _wall_seconds(tmp_path, [(cell, None) for cell in made], made) == {"mlp": 2 * 60, "bbb": 118 * 60}


def test_an_agent_with_a_cell_taken_from_elsewhere_has_no_known_time(tmp_path):
    # reproduce writes cells it takes from a stored set (or --cells-from) with a "source":
    # their files' times are when they were copied, not what they cost.
    class Files:
        def path(self, cell):
            return tmp_path / f"{cell.name}.json"

    write_manifest(tmp_path, claimed=at(0).isoformat(), claims=[at(0).isoformat()])
    made = {Cell("mlp", "a"): at(2), Cell("mlp", "b"): at(3), Cell("bbb", "c"): at(9)}
    (tmp_path / "a.json").write_text(json.dumps({"table": {}}))
    (tmp_path / "b.json").write_text(json.dumps({"table": {}, "source": "stored baselines 'paper'"}))
    (tmp_path / "c.json").write_text(json.dumps({"table": {}}))
    seconds = _wall_seconds(tmp_path, [(cell, Files()) for cell in made], made)
    assert seconds == {"mlp": None, "bbb": 6 * 60}
