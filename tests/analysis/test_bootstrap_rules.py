"""The bootstrap's size rule and the skewed-interval rule (issue 20, case 2): an
interval is either backed by enough resamples or refused, and one that excludes
its own estimate is marked and never gives a significance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from decision_bench import cli
from decision_bench.analysis.correlation import (
    SKEWED_NOTE,
    CorrelationResult,
    check_num_resamples,
    correlate,
    interval_text,
    min_resamples,
    percentile_interval,
)
from decision_bench.analysis.pipeline import POSITIVE, SKEWED, UNDECIDED, headline, verdict
from decision_bench.analysis.robustness import bootstrap_model_correlations
from decision_bench.cli.reproduce import reproduce


def test_min_resamples_puts_ten_draws_beyond_each_bound():
    assert min_resamples() == 200  # 90%: 5% tails
    assert min_resamples((2.5, 97.5)) == 400
    assert min_resamples((10.0, 95.0)) == 200  # the smaller tail decides
    with pytest.raises(ValueError, match="percentiles"):
        min_resamples((0.0, 100.0))


@pytest.mark.parametrize("bad", [1, 199, 0, -5, 200.0, True])
def test_correlate_refuses_a_bootstrap_too_small_for_its_interval(bad):
    x = np.arange(1.0, 11.0)
    with pytest.raises(ValueError, match=r"^num_resamples must be an integer >= 200 for a 90% percentile interval") as err:
        correlate(x, x**2, num_resamples=bad)
    assert "\n" not in str(err.value)


def test_the_level_sets_the_minimum():
    x = np.arange(1.0, 11.0)
    correlate(x, x**2, num_resamples=200)  # enough for 90%
    with pytest.raises(ValueError, match=">= 400 for a 95% percentile interval"):
        correlate(x, x**2, num_resamples=200, percentiles=(2.5, 97.5))
    assert check_num_resamples(np.int64(400), (2.5, 97.5)) == 400


def test_an_interval_from_too_few_defined_draws_is_undefined():
    draws = np.r_[np.linspace(-1, 1, 199), [np.nan] * 100]
    assert all(np.isnan(percentile_interval(draws)))
    low, high = percentile_interval(np.r_[draws, 0.5])  # 200 finite draws
    assert -1 < low < high < 1


def test_three_points_with_too_many_degenerate_resamples_are_undecided():
    # n = 3: about 1 in 9 resamples repeats one point three times (no correlation),
    # so 200 resamples leave fewer than 200 defined draws.
    result = correlate([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], num_resamples=200, rng=0)
    assert np.isnan(result.pearson_ci_low) and verdict(result) == UNDECIDED


def _result(estimate, low, high):
    return CorrelationResult(estimate, low, high, 0.1, -0.5, 0.6, 7)


def test_an_interval_excluding_its_estimate_is_marked_and_gives_no_significance():
    skewed = _result(-0.852, 0.999, 0.999)  # the report line
    assert verdict(skewed) == SKEWED
    assert verdict(_result(0.5, 0.2, 0.8)) == POSITIVE
    assert verdict(_result(0.9, 0.2, 0.8)) == SKEWED  # above its interval: still not significant
    assert interval_text(-0.852, 0.999, 0.999) == f"-0.852 [0.999, 0.999] ({SKEWED_NOTE})"
    assert interval_text(0.5, 0.2, 0.8) == "0.500 [0.200, 0.800]"
    text = headline({"agent": {"dkl_10": skewed, "dkl_1": _result(0.1, -0.3, 0.4)}})
    assert "significantly positive" not in text.split("**")[2].split("This run")[0]
    assert SKEWED_NOTE in text


def test_model_correlations_refuse_a_bootstrap_too_small_for_their_level():
    with pytest.raises(ValueError, match=">= 400 for a 95% percentile interval"):
        bootstrap_model_correlations(None, "dkl_10", "spearman", num_resamples=300, level=0.95)


def test_analyze_command_refuses_too_few_resamples_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["analyze", str(tmp_path), "--resamples", "1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--resamples" in err[-1] and ">= 200" in err[-1]


def test_reproduce_refuses_too_few_resamples_before_running_anything(tmp_path):
    with pytest.raises(ValueError, match=r"^num_resamples must be an integer >= 200"):
        reproduce("demo", tmp_path / "run", num_resamples=1, progress=False)
    assert not (tmp_path / "run").exists()


def test_the_printed_table_notes_an_interval_that_excludes_its_estimate(capsys):
    import pandas as pd

    from decision_bench.cli.analyze import print_skewed_intervals

    table = pd.DataFrame([
        {"metric": "dkl_10", "level": "agent", **dataclasses.asdict(_result(-0.852, 0.999, 0.999))},
        {"metric": "dkl_1", "level": "agent", **dataclasses.asdict(_result(0.5, 0.2, 0.8))},
    ])  # fmt: skip
    print_skewed_intervals(table)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"note: agent dkl_10 pearson_log: {SKEWED_NOTE} (see report.md)"]
