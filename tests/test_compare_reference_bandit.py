"""scripts/compare_reference_bandit.py: summaries, rank test and the orderings of agents,
checked by hand on tiny synthetic frames (nothing is fitted here)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats



@pytest.fixture(scope="module")
def crb(load_script):
    return load_script("compare_reference_bandit")


def _rows(values: dict, **setting) -> pd.DataFrame:
    """{agent: [regret at 3000 per seed]} -> one row per (agent, seed); regret at
    1000 and 2000 are 1/3 and 2/3 of it."""
    rows = [
        {"agent": agent, "seed": seed, "input_dim": 2, "num_actions": 40, "temperature": 0.1,
         "regret_1000": r / 3, "regret_2000": 2 * r / 3, "regret_3000": r} | setting
        for agent, regrets in values.items()
        for seed, r in enumerate(regrets)
    ]  # fmt: skip
    return pd.DataFrame(rows)


REF = {"mlp": [1.0, 2.0, 3.0, 4.0, 100.0], "ensemble": [0.5, 1.0, 1.5], "bbb": [10.0, 20.0, 30.0]}
OURS = {"mlp": [2.0, 3.0, 4.0, 5.0], "ensemble": [0.1, 0.2, 0.3, 0.4], "bbb": [5.0, 6.0, 7.0], "dropout": [1.0]}


def test_summarize_by_hand(crb):
    s = crb.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s == {"n": 5, "median": 3.0, "q25": 2.0, "q75": 4.0, "iqr": 2.0, "mean": 22.0}
    # One heavy seed moves the mean, never the median or the quartiles.
    assert crb.summarize([1.0, 2.0, 3.0, 4.0, 1e6])["median"] == 3.0
    assert crb.summarize([])["n"] == 0 and np.isnan(crb.summarize([])["median"])


def test_compare_by_hand(crb):
    table = crb.compare(_rows(REF), _rows(OURS))
    # dropout has no reference rows: left out; every step has the three agents.
    assert table.groupby("step")["agent"].apply(list).to_dict() == {s: ["mlp", "ensemble", "bbb"] for s in crb.STEPS}
    row = table[(table.step == 3000) & (table.agent == "mlp")].iloc[0]
    assert (row.ref_n, row.ref_median, row.ref_q25, row.ref_q75, row.ref_mean) == (5, 3.0, 2.0, 4.0, 22.0)
    assert (row.ours_n, row.ours_median, row.ours_q25, row.ours_q75) == (4, 3.5, 2.75, 4.25)
    assert row.median_ratio == pytest.approx(3.5 / 3.0)
    expected = stats.mannwhitneyu(OURS["mlp"], REF["mlp"], alternative="two-sided").pvalue
    assert row.mannwhitney_p == pytest.approx(expected, abs=1e-15)
    # Completely separated samples (every one of ours below every reference seed): U = 0, exact test.
    ens = table[(table.step == 3000) & (table.agent == "ensemble")].iloc[0]
    assert ens.mannwhitney_p == pytest.approx(2 / 35)  # 2 of the C(7, 3) = 35 equally likely rank splits
    at_1000 = table[(table.step == 1000) & (table.agent == "bbb")].iloc[0]
    assert at_1000.ref_median == pytest.approx(20.0 / 3) and at_1000.ours_median == pytest.approx(2.0)


def test_orderings_and_kendall_tau_by_hand(crb):
    table = crb.compare(_rows(REF), _rows(OURS))
    orders = crb.orderings(table).set_index("step")
    row = orders.loc[3000]
    assert row.reference_order == "ensemble < mlp < bbb" and row.ours_order == "ensemble < mlp < bbb"
    assert row.kendall_tau == pytest.approx(1.0) and row.num_agents == 3
    # Reverse our ordering: tau = -1.
    flipped = _rows({"mlp": [3.5], "ensemble": [100.0], "bbb": [0.1]})
    reverse = crb.orderings(crb.compare(_rows(REF), flipped)).set_index("step").loc[3000]
    assert reverse.kendall_tau == pytest.approx(-1.0)
    assert reverse.ours_order == "bbb < mlp < ensemble"
    # Fewer than 3 agents: no tau.
    two = crb.orderings(crb.compare(_rows(REF), _rows({"mlp": [1.0], "bbb": [2.0]})))
    assert two["kendall_tau"].isna().all()


def test_combine_reference_counts_a_seed_once_and_keeps_the_setting(crb):
    first = _rows({"mlp": [1.0, 2.0]})
    second = pd.concat([_rows({"mlp": [9.0, 9.0, 3.0]}), _rows({"mlp": [50.0]}, num_actions=50)], ignore_index=True)
    combined = crb.combine_reference([first, second])
    # Seeds 0 and 1 from the first file, seed 2 from the second; the 50-action row is another setting.
    assert combined.sort_values("seed")["regret_3000"].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"lacks columns \['regret_2000'\]"):
        crb.combine_reference([first.drop(columns="regret_2000")])


def test_main_compares_saved_files(crb, tmp_path, capsys):
    ref, ours = tmp_path / "ref.csv", tmp_path / "ours.csv"
    _rows(REF).to_csv(ref, index=False)
    _rows(OURS).to_csv(ours, index=False)
    assert crb.main(["--reference", str(ref), "--ours", str(ours)]) == 0
    out = capsys.readouterr().out
    assert "not on both sides (skipped): dropout, hypermodel, ensemble+, epinet" in out
    assert "kendall_tau" in out and "ensemble < mlp < bbb" in out
    assert len([line for line in out.splitlines() if line.split()[:2] == ["3000", "mlp"]]) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agents", "mlp,ucb"], "--agents must name core agents"),
        (["--seeds", "0"], "--seeds must be an integer >= 1, got 0"),
        (["--ours", "x.csv", "--save", "y.csv"], "give one of them"),
        (["--reference", "missing.csv", "--ours", "x.csv"], "--reference missing.csv not found"),
    ],
)
def test_bad_input_is_a_one_line_error(crb, capsys, argv, message):
    assert crb.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_the_saved_figures_compare_from_a_clone(crb, capsys):
    """bench/data holds both sides: the comparison runs without recomputing."""
    if not crb.BENCH_REFERENCE.is_file() or not crb.BENCH_OURS.is_file():
        pytest.skip("bench/data/reference_bandit.csv or ours_bandit.csv not present")
    assert crb.main(["--reference", str(crb.BENCH_REFERENCE), "--ours", str(crb.BENCH_OURS)]) == 0
    ours = pd.read_csv(crb.BENCH_OURS)
    assert (ours.groupby("agent")["seed"].nunique() >= crb.DEFAULT_SEEDS).all()
    assert "kendall_tau" in capsys.readouterr().out


@pytest.mark.slow
def test_run_ours_runs_and_resumes_from_its_file(crb, tmp_path):
    save = tmp_path / "ours.csv"
    first = crb.run_ours(["mlp"], 2, save)
    assert first["seed"].tolist() == [0, 1] and (first["regret_1000"] <= first["regret_3000"]).all()
    # Read back, not rerun: the file's rows are returned as they are.
    pd.read_csv(save).assign(regret_3000=-1.0).to_csv(save, index=False)
    assert crb.run_ours(["mlp"], 2, save)["regret_3000"].tolist() == [-1.0, -1.0]
