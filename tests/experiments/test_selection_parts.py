"""bench/data/selection_parts holds finished settings of the paper's selection
(``scripts/paper_selection.py --out bench/data/selection_parts``), kept across machines:
each file is one a rerun of the script reuses (same name, rows that verify), and its
rows are that setting's, every planned point scored on every seed and tau. A file is
checked against the versions its folder records (``parts_versions``), not this
install's: a later jax or flax release makes a rerun recompute, not the kept files wrong."""

import io
from pathlib import Path

import pandas as pd
import pytest

from decision_bench._src.files import checksum_path, verify_results_file
from decision_bench.experiments.selection import (
    PAPER_STUDIES, VERSIONS_FILE, parts_versions, point_label, selection_sweep, setting_files, slice_of,
)

FOLDER = Path(__file__).resolve().parents[2] / "bench" / "data" / "selection_parts"
AGENTS = sorted(p.name for p in FOLDER.iterdir() if p.is_dir()) if FOLDER.is_dir() else []
SEEDS = 5  # the script's default, the stated slice's


def test_kept_parts_are_in_folders_named_after_agents_with_a_sweep():
    assert set(AGENTS) <= set(PAPER_STUDIES)


@pytest.mark.parametrize("agent", AGENTS)
def test_every_kept_setting_is_one_a_rerun_reuses_with_every_point_seed_and_tau(agent):
    versions = parts_versions(FOLDER / agent)
    assert versions is not None, f"{agent} records no versions ({VERSIONS_FILE})"
    planned = setting_files(agent, selection_sweep(*slice_of(agent), num_seeds=SEEDS), SEEDS, versions=versions)
    files = sorted((FOLDER / agent).glob("setting-*.csv"))
    assert files, f"an empty folder for {agent}"
    kept = {VERSIONS_FILE} | {n for f in files for n in (f.name, checksum_path(f).name)}
    extra = {p.name for p in (FOLDER / agent).iterdir()} - kept
    assert not extra, f"not a kept setting: {sorted(extra)}"
    for path in files:
        # A name no planned (study, setting) gives was made by other versions, grid or slice.
        assert path.name in planned, f"{agent}/{path.name} is not a setting of the selection its versions plan"
        study, setting = planned[path.name]
        data = path.read_bytes()
        assert verify_results_file(path, data) is not None, f"{path.name} has no checksum file"
        rows = pd.read_csv(io.BytesIO(data))
        assert set(rows.agent) == {agent}
        assert set(rows.num_train) == {setting.num_train} and set(rows.temperature) == {setting.temperature}
        labels = {point_label(agent, {**study.overrides, **{n: r[n] for n in study.grid}}) for _, r in rows.iterrows()}
        assert labels == {point_label(agent, p) for p in study.points()}
        assert len(rows) == len(study.points()) * SEEDS * 2
        assert set(rows.seed) == set(range(SEEDS)) and set(rows.tau) == {1, 10}
