"""Every command works after `pip install decision-bench` without its extras.

A missing extra is simulated in-process: ``sys.modules[name] = None`` for the
module and its submodules makes ``import name`` raise ImportError and
``importlib.util.find_spec(name)`` return None, as when it is not installed.
Without ``plot`` the commands write their CSVs and report.md and say so in one
line; a data set or agent that needs ``data`` ends in one line naming the extra
(exit status 2), without a traceback.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pandas as pd
import pytest

from decision_bench import cli
from decision_bench._src import extras
from decision_bench._src.extras import FIGURES_SKIPPED, MissingExtraError, has_extra, require_extra
from decision_bench.analysis.pipeline import LEVELS
from decision_bench.data import datasets


def _block(monkeypatch, module: str) -> None:
    """Makes `module` (and every submodule already imported) look uninstalled for this test."""
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_blocked_module_reads_as_a_missing_extra(monkeypatch):
    assert has_extra("data")  # the test extra installs scikit-learn
    _block(monkeypatch, "sklearn")
    assert not has_extra("data")
    with pytest.raises(MissingExtraError, match=r"^agent 'x' needs scikit-learn: pip install 'decision-bench\[data\]'$"):
        require_extra("data", "agent 'x'")
    assert issubclass(MissingExtraError, ImportError)  # callers catching ImportError still do
    with pytest.raises(ValueError, match=r"extra must be one of \['bayes', 'data', 'plot', 'ray'\], got 'plots'"):
        has_extra("plots")


def test_every_extra_module_is_declared_in_pyproject():
    import tomllib  # Python 3.11+; the package supports 3.10, the test venv is newer

    from pathlib import Path

    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    optional = declared["project"]["optional-dependencies"]
    for extra, (_, distribution) in extras.EXTRA_MODULES.items():
        names = [spec.split(">")[0].split("=")[0].split(";")[0].strip().lower() for spec in optional[extra]]
        assert distribution.lower() in names, (extra, optional[extra])


def _results(directory) -> None:
    """testbed.csv and bandit.csv of 3 agents x 3 seeds, regret increasing with d_KL^10."""
    testbed, bandit = [], []
    for i, (agent, seed) in enumerate(itertools.product(("mlp", "ensemble", "epinet"), range(3))):
        common = dict(agent=agent, input_dim=2, num_train=10, temperature=0.1, seed=seed, kappa=np.nan)
        testbed.append({**common, "tau": 1, "kl": 0.1 + 0.01 * ((5 * i) % 9)})
        testbed.append({**common, "tau": 10, "kl": 1.0 + 0.1 * i})
        for step in (10, 20):
            bandit.append(dict(agent=agent, seed=seed, step=step, cumulative_regret=(5.0 + i) * step / 20))
    pd.DataFrame(testbed).to_csv(directory / "testbed.csv", index=False)
    pd.DataFrame(bandit).to_csv(directory / "bandit.csv", index=False)


def test_analyze_without_matplotlib_writes_tables_and_report_and_says_so_once(tmp_path, monkeypatch, capsys):
    _results(tmp_path)
    _block(monkeypatch, "matplotlib")
    assert cli.main(["analyze", str(tmp_path), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert out.count(FIGURES_SKIPPED) == 1
    assert out.strip().splitlines()[-1] == FIGURES_SKIPPED
    for name in ("correlations.csv", "joined.csv", "table2.csv", "report.md"):
        assert (tmp_path / name).is_file(), name
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.pdf"))
    report = (tmp_path / "report.md").read_text()
    assert f"- {FIGURES_SKIPPED}" in report and "## Figures" not in report
    table = pd.read_csv(tmp_path / "correlations.csv").set_index(["level", "metric"])
    # Every level analysis.pipeline computes x (d_KL^1, d_KL^10): no dyadic rows in these results.
    assert set(table.index) == {(level, metric) for level in LEVELS for metric in ("dkl_1", "dkl_10")}
    # regret rises with d_KL^10 point by point: the ranks agree exactly.
    assert table.loc[("agent_seed", "dkl_10"), "spearman"] == pytest.approx(1.0, abs=1e-12)


def test_a_testbed_only_analysis_without_matplotlib_writes_its_report(tmp_path, monkeypatch, capsys):
    _results(tmp_path)
    (tmp_path / "bandit.csv").unlink()
    (tmp_path / "testbed.json").write_text("{}")  # what marks a `decision-bench testbed` run
    _block(monkeypatch, "matplotlib")
    assert cli.main(["analyze", str(tmp_path), "--resamples", "200"]) == 0
    assert capsys.readouterr().out.count(FIGURES_SKIPPED) == 1
    assert (tmp_path / "table2.csv").is_file() and not list(tmp_path.glob("*.png"))
    assert FIGURES_SKIPPED in (tmp_path / "report.md").read_text()


BANDIT = ["bandit", "--agents", "uniform", "--input-dim", "2", "--num-actions", "5", "--steps", "8",
          "--seeds", "2", "--no-progress"]  # fmt: skip


def test_bandit_without_matplotlib_writes_the_csv_and_says_figures_were_skipped(tmp_path, monkeypatch, capsys):
    _block(monkeypatch, "matplotlib")
    assert cli.main([*BANDIT, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert out.count(FIGURES_SKIPPED) == 1
    rows = pd.read_csv(tmp_path / "run" / "bandit.csv")
    assert set(rows["seed"]) == {0, 1} and rows["step"].max() == 8
    assert not list((tmp_path / "run").glob("*.png"))  # with matplotlib: tests/cli/test_cli.py


@pytest.mark.parametrize(
    "argv, subject",
    [
        (["bandit", "--env", "ClassificationBandit-v0", "--dataset", "iris", "--agents", "uniform",
          "--steps", "4", "--seeds", "1", "--no-progress"], "data set 'iris'"),  # fmt: skip
        (["bandit", "--agents", "random_forest", "--steps", "4", "--seeds", "1", "--no-progress"],
         "agent 'random_forest'"),  # fmt: skip
        (["testbed", "--sweep", "realdata", "--datasets", "iris", "--agents", "uniform", "--seeds", "1",
          "--no-progress"], "data set 'iris'"),  # fmt: skip
    ],
)
def test_what_needs_scikit_learn_ends_in_one_line_naming_the_data_extra(argv, subject, tmp_path, monkeypatch, capsys):
    _block(monkeypatch, "sklearn")
    # The bundled data sets are cached per process: forget any that another test loaded.
    datasets._load_bundled.cache_clear()
    assert cli.main([*argv, "--out", str(tmp_path / "run")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("decision-bench: error: " + subject)
    assert line.endswith("needs scikit-learn: pip install 'decision-bench[data]'")
