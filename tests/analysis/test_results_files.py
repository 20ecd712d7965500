"""Results CSVs carry a checksum file that readers verify (issue 20, case 7), and
`analyze` replaces the outputs it owns as a set."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from decision_bench._src.files import checksum_path, write_results_csv
from decision_bench.analysis import analyze
from decision_bench.analysis.inputs import read_bandit, read_testbed
from decision_bench.analysis.outputs import owned_outputs, remove_stale_stages



def _handmade(directory) -> None:
    """A user's own testbed.csv and bandit.csv (plain pandas, no checksum files):
    4 agents x 3 seeds, regret rising with d_KL^10."""
    testbed, bandit = [], []
    for a, agent in enumerate(["mlp", "ensemble", "dropout", "bbb"]):
        for seed in range(3):
            kl = 0.2 + 0.1 * a + 0.03 * seed
            testbed += [dict(agent=agent, tau=tau, kappa=np.nan, seed=seed, kl=kl * (1 + tau / 20)) for tau in (1, 10)]
            bandit.append(dict(agent=agent, seed=seed, step=100, cumulative_regret=40 * kl**2))
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)


def _testbed_frame() -> pd.DataFrame:
    return pd.DataFrame({"agent": ["mlp", "mlp"], "tau": [1, 10], "kappa": [np.nan, np.nan], "seed": [0, 0],
                         "kl": [0.5, 2.16]})  # fmt: skip


def test_a_written_results_csv_reads_with_plain_pandas_and_checks_with_sha256sum(tmp_path):
    frame = _testbed_frame()
    path = write_results_csv(tmp_path / "testbed.csv", frame)
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    sidecar = checksum_path(path)
    assert sidecar.name == "testbed.csv.sha256" and "# data rows: 2" in sidecar.read_text()
    if shutil.which("sha256sum"):
        check = subprocess.run(["sha256sum", "-c", sidecar.name], cwd=tmp_path, capture_output=True, text=True)
        assert check.returncode == 0 and "testbed.csv: OK" in check.stdout
    assert read_testbed(path)["kl"].tolist() == [0.5, 2.16]


def test_a_file_cut_inside_its_last_field_is_refused_naming_the_file(tmp_path):
    path = write_results_csv(tmp_path / "testbed.csv", _testbed_frame())
    text = path.read_text()
    assert text.endswith("2.16\n")
    path.write_text(text[: -len("6\n")])  # "2.16" read as "2.1" before
    with pytest.raises(ValueError, match=r"testbed.csv does not match its checksum in testbed.csv.sha256") as err:
        read_testbed(path)
    assert "\n" not in str(err.value)


def test_a_file_with_rows_removed_and_a_stale_checksum_is_refused(tmp_path):
    path = write_results_csv(tmp_path / "bandit.csv", pd.DataFrame(
        {"agent": ["mlp"] * 3, "seed": [0, 0, 1], "step": [1, 2, 2], "cumulative_regret": [1.0, 2.0, 3.0]}))
    pd.read_csv(path).iloc[:2].to_csv(path, index=False)  # a complete CSV, but not the one recorded
    with pytest.raises(ValueError, match="bandit.csv does not match its checksum"):
        read_bandit(path)


def test_a_hand_made_file_without_checksum_is_read_and_reported_as_unverified(tmp_path):
    _handmade(tmp_path)
    with pytest.warns(RuntimeWarning):
        analyze(tmp_path, num_resamples=200)
    report = (tmp_path / "report.md").read_text()
    assert "testbed.csv has no checksum file (testbed.csv.sha256): read as an unverified file" in report
    # analyze's own tables get checksum files.
    assert checksum_path(tmp_path / "correlations.csv").is_file()


def test_analyze_removes_the_outputs_of_a_previous_analysis_it_no_longer_writes(tmp_path):
    _handmade(tmp_path)
    stale = ["fig16_regret_vs_dkl1_by_dim.png", "robustness_width_dkl_10_spearman.png", "fidelity.csv"]
    for name in stale:
        (tmp_path / name).write_bytes(b"from an earlier run")
    (tmp_path / "my_notes.txt").write_text("mine")  # not analyze's: kept
    with pytest.warns(RuntimeWarning):
        result = analyze(tmp_path, num_resamples=200)
    assert not any((tmp_path / name).exists() for name in stale)
    assert (tmp_path / "my_notes.txt").read_text() == "mine"
    assert set(result.figures) <= set(owned_outputs(tmp_path))


def test_analyze_keeps_a_users_file_named_like_its_outputs(tmp_path):
    _handmade(tmp_path)
    # Names a glob such as robustness_*_*_*.png would match, but no analysis writes.
    users = ["robustness_plot_for_paper.png", "robustness_width_dkl_10_kendall.png", "fig2_normalised_kl_v2.png"]
    for name in users:
        (tmp_path / name).write_bytes(b"the user's")
    stale = "robustness_activation_regret_pearson_log.png"  # a heat map an earlier analysis wrote
    (tmp_path / stale).write_bytes(b"from an earlier run")
    with pytest.warns(RuntimeWarning):
        analyze(tmp_path, num_resamples=200)
    assert all((tmp_path / name).read_bytes() == b"the user's" for name in users)
    assert not (tmp_path / stale).exists()


def test_staging_folders_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = tmp_path / f".analyze-{dead.pid}-abc.tmp"
    old_style = tmp_path / ".analyze-xyz.tmp"
    live = tmp_path / f".analyze-{os.getppid()}-def.tmp"
    for folder in (left, old_style, live):
        folder.mkdir()
        (folder / "report.md").write_text("partial")
    assert sorted(remove_stale_stages(tmp_path)) == sorted([left, old_style])
    assert live.is_dir() and not left.exists() and not old_style.exists()
