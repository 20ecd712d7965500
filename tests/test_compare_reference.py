"""scripts/compare_reference.py: per-setting statistics, the per-tau summary and the
verdict, checked by hand on tiny synthetic frames (nothing is fitted here)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decision_bench import agents



@pytest.fixture(scope="module")
def cr(load_script):
    return load_script("compare_reference")


def _runs(values: dict) -> pd.DataFrame:
    """{(T, beta, tau): [kl per seed]} -> one row per problem."""
    rows = [
        {"num_train": t, "temperature": b, "tau": u, "seed": s, "kl": kl}
        for (t, b, u), kls in values.items()
        for s, kl in enumerate(kls)
    ]
    return pd.DataFrame(rows)


def _se(values) -> float:
    values = np.asarray(values, float)
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


REF = {(10, 0.1, 1): [1.0, 2.0, 3.0], (100, 0.1, 1): [0.1, 0.3], (10, 0.1, 10): [4.0, 6.0, 8.0, 10.0]}
OURS = {(10, 0.1, 1): [2.0, 2.0, 2.5, 3.5], (100, 0.1, 1): [0.2, 0.4, float("nan")],
        (10, 0.1, 10): [5.0, 7.0], (1000, 0.1, 1): [9.0, 9.0]}


def test_summarize_settings_by_hand(cr):
    table = cr.summarize_settings(_runs(OURS))
    # sorted by tau, then T, then beta; index levels num_train, temperature, tau
    assert list(table.index) == [(10, 0.1, 1), (100, 0.1, 1), (1000, 0.1, 1), (10, 0.1, 10)]
    row = table.loc[(10, 0.1, 1)]
    assert row["n"] == 4 and row["num_nan"] == 0
    assert row["mean"] == pytest.approx(2.5)
    assert row["se"] == pytest.approx(_se([2.0, 2.0, 2.5, 3.5]))
    assert row["median"] == pytest.approx(2.25)
    row = table.loc[(100, 0.1, 1)]  # the NaN seed is counted apart and left out
    assert row["n"] == 2 and row["num_nan"] == 1
    assert row["mean"] == pytest.approx(0.3) and row["se"] == pytest.approx(0.1)


def test_compare_by_hand(cr):
    ref, ours = cr.summarize_settings(_runs(REF)), cr.summarize_settings(_runs(OURS))
    table = cr.compare(ref, ours)
    assert list(table.index) == list(ref.index)  # the reference's settings only
    row = table.loc[(10, 0.1, 1)]
    se_ref, se_ours = _se([1, 2, 3]), _se([2, 2, 2.5, 3.5])
    assert row["ref_mean"] == pytest.approx(2.0) and row["ref_se"] == pytest.approx(se_ref)
    assert row["diff"] == pytest.approx(0.5)
    assert row["z"] == pytest.approx(0.5 / math.sqrt(se_ref**2 + se_ours**2))
    assert row["ratio"] == pytest.approx(1.25)
    assert row["ref_median"] == pytest.approx(2.0) and row["ours_median"] == pytest.approx(2.25)
    row = table.loc[(10, 0.1, 10)]
    assert row["z"] == pytest.approx((6.0 - 7.0) / math.sqrt(_se([4, 6, 8, 10]) ** 2 + _se([5, 7]) ** 2))
    assert row["ratio"] == pytest.approx(6.0 / 7.0)


def test_compare_needs_every_reference_setting(cr):
    ref = cr.summarize_settings(_runs(REF))
    ours = cr.summarize_settings(_runs({k: v for k, v in OURS.items() if k != (100, 0.1, 1)}))
    with pytest.raises(ValueError, match=r"ours lacks 1 of the reference's settings: \(T=100, beta=0.1, tau=1\)"):
        cr.compare(ref, ours)


def test_overall_by_hand(cr):
    table = cr.compare(cr.summarize_settings(_runs(REF)), cr.summarize_settings(_runs(OURS)))
    per_tau = cr.overall(table)
    assert list(per_tau.index) == [1, 10]
    row = per_tau.loc[1]
    ref_se = [_se([1, 2, 3]), _se([0.1, 0.3])]
    ours_se = [_se([2, 2, 2.5, 3.5]), _se([0.2, 0.4])]
    assert row["num_settings"] == 2
    assert row["ref_mean"] == pytest.approx((2.0 + 0.2) / 2)
    assert row["ours_mean"] == pytest.approx((2.5 + 0.3) / 2)
    assert row["ref_se"] == pytest.approx(math.sqrt(sum(s**2 for s in ref_se)) / 2)
    assert row["ours_se"] == pytest.approx(math.sqrt(sum(s**2 for s in ours_se)) / 2)
    assert row["ratio"] == pytest.approx(1.4 / 1.1)
    assert row["z"] == pytest.approx((1.4 - 1.1) / math.sqrt(row["ref_se"] ** 2 + row["ours_se"] ** 2))
    assert per_tau.loc[10, "num_settings"] == 1 and per_tau.loc[10, "ratio"] == pytest.approx(6 / 7)


def _judge(cr, ref, ours):
    table = cr.compare(cr.summarize_settings(_runs(ref)), cr.summarize_settings(_runs(ours)))
    return cr.verdict(table, cr.overall(table))


def test_verdict_holds_when_ratios_are_in_band_and_no_z_is_large(cr):
    ref = {(10, 0.1, 1): [1.0, 2.0, 3.0], (10, 0.1, 10): [10.0, 20.0, 30.0]}
    ours = {(10, 0.1, 1): [1.1, 2.1, 3.1], (10, 0.1, 10): [9.0, 19.0, 29.0]}  # ratios 1.05, 0.95
    holds, reasons = _judge(cr, ref, ours)
    assert holds
    z1 = 0.1 / math.sqrt(2 * _se([1, 2, 3]) ** 2)
    assert reasons[0] == f"tau 1 ratio 1.050 within [0.8, 1.25], z {z1:+.2f} within +-3"
    assert reasons[1].startswith("tau 10 ratio 0.950 within [0.8, 1.25], z -")
    assert reasons[2].startswith("no setting with |z| > 3.5")


def test_verdict_fails_on_a_ratio_outside_the_band(cr):
    ref = {(10, 0.1, 1): [1.0, 2.0, 3.0], (10, 0.1, 10): [10.0, 20.0, 30.0]}
    ours = {(10, 0.1, 1): [1.0, 2.0, 3.0], (10, 0.1, 10): [13.0, 26.0, 39.0]}  # tau 10 ratio 1.3, z small
    holds, reasons = _judge(cr, ref, ours)
    assert not holds
    assert reasons[1].startswith("tau 10 ratio 1.300 OUTSIDE [0.8, 1.25], z +") and "within +-3" in reasons[1]


def test_verdict_fails_when_a_taus_mean_is_far_off_in_z_though_within_the_band(cr):
    # ratio 1.2 is in the band, but with tiny errors its z is far above 3
    ref = {(10, 0.1, 1): [1.00, 1.01, 1.02], (10, 0.1, 10): [10.0, 20.0, 30.0]}
    ours = {(10, 0.1, 1): [1.20, 1.21, 1.22], (10, 0.1, 10): [10.0, 20.0, 30.0]}
    holds, reasons = _judge(cr, ref, ours)
    assert not holds
    assert reasons[0].startswith("tau 1 ratio 1.198 within [0.8, 1.25], z +")
    assert reasons[0].endswith("OUTSIDE +-3")


def test_verdict_fails_on_one_large_z_even_when_ratios_are_in_band(cr):
    # setting (100, 0.1, 1) is far off with tiny errors; (10, 0.1, 1) dominates the tau-1 mean
    ref = {(10, 0.1, 1): [10.0, 20.0, 30.0], (100, 0.1, 1): [0.10, 0.11, 0.12], (10, 0.1, 10): [1.0, 2.0, 3.0]}
    ours = {(10, 0.1, 1): [10.0, 20.0, 30.0], (100, 0.1, 1): [0.20, 0.21, 0.22], (10, 0.1, 10): [1.0, 2.0, 3.0]}
    holds, reasons = _judge(cr, ref, ours)
    assert not holds
    z = 0.1 / math.sqrt(2 * _se([0.1, 0.11, 0.12]) ** 2)
    assert reasons[-1] == f"1 setting(s) with |z| > 3.5: T=100 beta=0.1 tau=1 (z {z:+.2f})"
    assert "tau 1 ratio" in reasons[0] and "within" in reasons[0]


def test_verdict_judges_the_taus_present_and_fails_on_undefined_z(cr):
    holds, reasons = _judge(cr, {(10, 0.1, 10): [1.0, 2.0]}, {(10, 0.1, 10): [1.0, 2.0, 1.5]})
    assert holds and reasons[0] == "tau 1 not in the reference for this agent"
    holds, reasons = _judge(cr, {(10, 0.1, 10): [1.0]}, {(10, 0.1, 10): [1.0, 2.0]})
    assert not holds and "undefined z" in reasons[-1]
    holds, reasons = _judge(cr, {(10, 0.1, 5): [1.0, 2.0]}, {(10, 0.1, 5): [1.0, 2.0]})
    assert not holds and reasons == ["no tau in [1, 10] to judge (the comparison has tau [5])"]


def _reference_csv(path: Path) -> Path:
    rows = []
    for agent, m, taus in (("mlp", 1, (1, 10)), ("ensemble+", 30, (10,))):
        for tau in taus:
            for t in (10, 100):
                for s in range(3):
                    rows.append({"problem_id": f"classification_2d/{len(rows)}", "agent": agent, "num_ensemble": m,
                                 "tau": tau, "num_train": t, "temperature": 0.1, "problem_seed": s,
                                 "kl_estimate": 0.1 * tau * (1 + s) / t, "kl_std_error": 0.01, "test_acc": 0.9})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_reference_runs_filters_the_agent_and_ensemble_size(cr, tmp_path):
    reference = pd.read_csv(_reference_csv(tmp_path / "ref.csv"))
    runs, size = cr.reference_runs(reference, "mlp")
    assert size is None and len(runs) == 12 and set(runs["tau"]) == {1, 10}
    runs, size = cr.reference_runs(reference, "ensemble+")
    assert size == 30 and len(runs) == 6 and set(runs["tau"]) == {10}
    with pytest.raises(ValueError, match=r"only with --num-ensemble in \[30\], got 10"):
        cr.reference_runs(reference, "ensemble+", 10)
    with pytest.raises(ValueError, match="--num-ensemble is only for ensemble agents"):
        cr.reference_runs(reference, "mlp", 3)


def test_reference_runs_with_several_ensemble_sizes_picks_the_default_one(cr, tmp_path):
    reference = pd.read_csv(_reference_csv(tmp_path / "ref.csv"))
    default = int(agents.config("ensemble+").num_ensemble)
    assert default != 30
    more = reference[reference["agent"] == "ensemble+"].assign(num_ensemble=default, kl_estimate=7.0)
    both = pd.concat([reference, more], ignore_index=True)
    runs, size = cr.reference_runs(both, "ensemble+")
    assert size == default and (runs["kl"] == 7.0).all() and len(runs) == 6
    runs, size = cr.reference_runs(both, "ensemble+", 30)
    assert size == 30 and (runs["kl"] != 7.0).all()
    other = reference[reference["agent"] == "ensemble+"].assign(num_ensemble=default + 1)
    with pytest.raises(ValueError, match="pick one with --num-ensemble"):
        cr.reference_runs(pd.concat([reference, other], ignore_index=True), "ensemble+")
    with pytest.raises(ValueError, match="the reference has no rows for agent 'dropout'"):
        cr.reference_runs(reference, "dropout")
    sweep = cr.reference_sweep(runs, num_seeds=20)
    assert {(s.input_dim, s.num_train, s.temperature) for s in sweep.settings} == {(2, 10, 0.1), (2, 100, 0.1)}
    assert [(d.tau, d.kappa) for d in sweep.designs] == [(10, None)] and sweep.num_seeds == 20


def test_main_compares_a_saved_ours_file(cr, tmp_path, capsys):
    reference = _reference_csv(tmp_path / "ref.csv")
    ours = pd.read_csv(reference).query("agent == 'mlp'")
    ours = ours.rename(columns={"problem_seed": "seed", "kl_estimate": "kl"}).assign(kappa=None, input_dim=2)
    ours.to_csv(tmp_path / "ours.csv", index=False)
    assert cr.main(["--reference", str(reference), "--ours", str(tmp_path / "ours.csv")]) == 0
    printed = capsys.readouterr().out
    assert "verdict for mlp: acceptance HOLDS" in printed and "ref median" in printed
    ours.assign(kl=ours["kl"] * 2).to_csv(tmp_path / "ours.csv", index=False)
    assert cr.main(["--reference", str(reference), "--ours", str(tmp_path / "ours.csv")]) == 1
    assert "verdict for mlp: acceptance FAILS" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agent", "nope"], "--agent must be one of"),
        (["--seeds", "0"], "--seeds must be an integer >= 1, got 0"),
        (["--seeds", "2"], "--seeds must be >= the reference's seeds per setting (3), got 2"),
        (["--set", "bogus=1"], "unknown hyperparameter(s) ['bogus'] for agent 'mlp'"),
        (["--ours", "missing.csv"], "ours file not found"),
        (["--ours", "missing.csv", "--seeds", "30"], "--seeds: only when running ours, not with --ours"),
    ],
)
def test_bad_input_is_a_one_line_error(cr, tmp_path, capsys, argv, message):
    reference = _reference_csv(tmp_path / "ref.csv")
    assert cr.main(["--reference", str(reference), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compare_reference: error: ") and message in err and err.count("\n") == 1


def test_a_missing_reference_file_says_where_to_get_it(cr, tmp_path, capsys):
    assert cr.main(["--reference", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err
    assert "reference file not found" in err and "bench/data/reference_testbed_runs.csv" in err and "--reference FILE" in err


def test_main_runs_ours_on_the_reference_settings_and_saves(cr, tmp_path, capsys):
    reference = _reference_csv(tmp_path / "ref.csv")
    frame = pd.read_csv(reference).query("agent == 'mlp' and num_train == 10").assign(agent="uniform")
    frame.to_csv(reference, index=False)
    save = tmp_path / "ours.csv"
    argv = ["--reference", str(reference), "--agent", "uniform", "--seeds", "3", "--num-test", "20",
            "--num-models", "4", "--save", str(save), "--no-progress"]
    assert cr.main(argv) in (0, 1)
    printed = capsys.readouterr().out
    assert "running uniform on 1 settings x 2 designs x 3 seeds, and mlp on the same problems" in printed
    assert "verdict for uniform: acceptance" in printed
    saved = pd.read_csv(save)
    assert len(saved) == 12 and set(saved["agent"]) == {"uniform", "mlp"}  # our mlp for the ratio
    assert set(saved["tau"]) == {1, 10} and set(saved["seed"]) == {0, 1, 2}
    # the same comparison again from the saved file, without running
    assert cr.main(["--reference", str(reference), "--agent", "uniform", "--ours", str(save)]) in (0, 1)
    again = capsys.readouterr().out
    assert again.split("per setting:")[1] == printed.split("per setting:")[1]


def _seeded(values: dict) -> pd.DataFrame:
    """{(T, beta, tau): {seed: kl}} -> one row per problem."""
    rows = [
        {"num_train": t, "temperature": b, "tau": u, "seed": s, "kl": kl}
        for (t, b, u), by_seed in values.items()
        for s, kl in by_seed.items()
    ]
    return pd.DataFrame(rows)


def test_ratio_to_baseline_by_hand(cr):
    # setting A: agent {2, 4}, mlp {1, 3} on seeds 0, 1 (paired, covariance 2);
    # setting B: agent {5, 5} (no spread), mlp {1, 3}.
    agent = _seeded({(1, 0.1, 1): {0: 2.0, 1: 4.0}, (10, 0.1, 1): {0: 5.0, 1: 5.0}})
    mlp = _seeded({(1, 0.1, 1): {0: 1.0, 1: 3.0}, (10, 0.1, 1): {0: 1.0, 1: 3.0}})
    one = cr.ratio_to_baseline(agent, mlp, [(1, 0.1, 1)]).loc[1]
    # A = 3, B = 2; var_A = var_B = 2 / 2 = 1; cov = 2 * 2 / (2 * 2) = 1;
    # se^2 = 1.5^2 * (1/9 + 1/4 - 2/6) = 0.0625
    assert one["num_settings"] == 1 and one["ratio"] == pytest.approx(1.5)
    assert one["se"] == pytest.approx(0.25)
    both = cr.ratio_to_baseline(agent, mlp, [(1, 0.1, 1), (10, 0.1, 1)]).loc[1]
    # A = (3 + 5) / 2 = 4, B = 2; var_A = (1 + 0) / 4, var_B = (1 + 1) / 4, cov = (1 + 0) / 4;
    # se^2 = 2^2 * (0.25/16 + 0.5/4 - 2 * 0.25/8) = 0.3125
    assert both["agent_mean"] == pytest.approx(4.0) and both["baseline_mean"] == pytest.approx(2.0)
    assert both["ratio"] == pytest.approx(2.0) and both["se"] == pytest.approx(math.sqrt(0.3125))
    # unpaired seeds (agent on 0, 1; mlp on 2, 3): no covariance term, se^2 = 1.5^2 * (1/9 + 1/4)
    unpaired = _seeded({(1, 0.1, 1): {2: 1.0, 3: 3.0}})
    row = cr.ratio_to_baseline(agent, unpaired, [(1, 0.1, 1)]).loc[1]
    assert row["se"] == pytest.approx(1.5 * math.sqrt(1 / 9 + 1 / 4))


def test_paired_differences_by_hand(cr):
    from scipy import stats

    key_a, key_b = (10, 0.1, 10), (100, 0.1, 10)
    ref_agent = _runs({key_a: [1.0, 2.0, 4.0], key_b: [0.5, 0.7]})
    ref_mlp = _runs({key_a: [2.0, 2.0, 5.0], key_b: [0.5, 0.5]})
    ours_agent = _runs({key_a: [1.0, 1.0, 1.0, 2.0], key_b: [0.2, 0.4, 0.6]})
    ours_mlp = _runs({key_a: [1.0, 2.0, 1.5, 2.5], key_b: [0.1, 0.3, 0.8]})
    table, summary = cr.paired_differences(ref_agent, ref_mlp, ours_agent, ours_mlp, [key_a, key_b])
    ref_a, ours_a = np.array([-1.0, 0.0, -1.0]), np.array([0.0, -1.0, -0.5, -0.5])
    ref_b, ours_b = np.array([0.0, 0.2]), np.array([0.1, 0.1, -0.2])
    row = table.loc[key_a]
    assert row["ref_diff"] == pytest.approx(ref_a.mean()) and row["ref_se"] == pytest.approx(_se(ref_a))
    assert row["ours_diff"] == pytest.approx(ours_a.mean()) and row["ours_n"] == 4
    # Welch's t by hand: difference over the combined se, Welch-Satterthwaite df
    t_a = (ours_a.mean() - ref_a.mean()) / math.hypot(_se(ref_a), _se(ours_a))
    v_r, v_o = _se(ref_a) ** 2, _se(ours_a) ** 2
    df_a = (v_r + v_o) ** 2 / (v_r**2 / 2 + v_o**2 / 3)
    assert row["t"] == pytest.approx(t_a) and row["p"] == pytest.approx(2 * stats.t.sf(abs(t_a), df_a))
    p_b = table.loc[key_b, "p"]
    fisher = -2 * (math.log(row["p"]) + math.log(p_b))
    assert summary.loc[10, "settings"] == 2 and summary.loc[10, "fisher"] == pytest.approx(fisher)
    assert summary.loc[10, "p"] == pytest.approx(stats.chi2.sf(fisher, 4))


def test_paired_differences_find_a_shift_that_only_one_side_has(cr):
    rng = np.random.default_rng(0)
    settings = [(t, 0.1, 10) for t in (1, 3, 10, 30, 100, 300)]
    mlp = {key: rng.gamma(2.0, 1.0, 20).tolist() for key in settings}
    noisy = {key: (np.asarray(v) + rng.normal(0, 0.1, 20)).tolist() for key, v in mlp.items()}
    again = {key: (np.asarray(v) + rng.normal(0, 0.1, 20)).tolist() for key, v in mlp.items()}
    shifted = {key: (np.asarray(v) - 0.5 + rng.normal(0, 0.1, 20)).tolist() for key, v in mlp.items()}
    _, alike = cr.paired_differences(_runs(noisy), _runs(mlp), _runs(again), _runs(mlp), settings)
    _, apart = cr.paired_differences(_runs(noisy), _runs(mlp), _runs(shifted), _runs(mlp), settings)
    assert alike.loc[10, "p"] > 0.01
    assert apart.loc[10, "p"] < 1e-6 and apart.loc[10, "max_abs_t"] > 5


def test_compare_ratios_and_the_verdict_on_them(cr):
    ref = pd.DataFrame({"num_settings": [1], "agent_mean": [3.0], "baseline_mean": [2.0],
                        "ratio": [1.5], "se": [0.25]}, index=pd.Index([1], name="tau"))
    ours = ref.assign(ratio=[2.0], se=[math.sqrt(0.3125)])
    table = cr.compare_ratios(ref, ours)
    row = table.loc[1]
    # difference 0.5 against a combined se sqrt(0.0625 + 0.3125) = 0.612: they agree
    assert row["diff"] == pytest.approx(0.5) and row["combined_se"] == pytest.approx(math.sqrt(0.375))
    assert bool(row["agrees"]) and row["z"] == pytest.approx(0.5 / math.sqrt(0.375))
    settings = {(1, 0.1, 1): [1.0, 2.0, 3.0]}
    comparison = cr.compare(cr.summarize_settings(_runs(settings)), cr.summarize_settings(_runs(settings)))
    holds, reasons = cr.verdict(comparison, cr.overall(comparison), ratios=table)
    assert holds and reasons[-1].startswith("tau 1 ratio to mlp: reference 1.500 vs ours 2.000 (agree")
    far = cr.compare_ratios(ref, ours.assign(ratio=[2.2]))  # difference 0.7 > 0.612
    holds, reasons = cr.verdict(comparison, cr.overall(comparison), ratios=far)
    assert not holds and "DISAGREE" in reasons[-1]
    holds, reasons = cr.verdict(comparison, cr.overall(comparison), ratios=pd.DataFrame())
    assert not holds and reasons[-1] == "tau 1: no ratio to mlp (a side has no mlp on these settings)"


def test_agent_all_compares_each_agent_and_its_ratio_to_mlp(cr, tmp_path, capsys):
    reference = pd.read_csv(_reference_csv(tmp_path / "ref.csv")).query("agent == 'mlp'")
    other = reference.assign(agent="uniform", kl_estimate=reference["kl_estimate"] * 2)
    pd.concat([reference, other]).to_csv(tmp_path / "ref.csv", index=False)
    ours = pd.concat([reference, other]).rename(columns={"problem_seed": "seed", "kl_estimate": "kl"})
    ours = ours.assign(kappa=None, input_dim=2)
    ours.query("agent == 'mlp'").to_csv(tmp_path / "ours_mlp.csv", index=False)
    ours.query("agent == 'uniform'").to_csv(tmp_path / "ours_uniform.csv", index=False)
    argv = ["--reference", str(tmp_path / "ref.csv"), "--agent", "all",
            "--ours", str(tmp_path / "ours_mlp.csv"), "--ours", str(tmp_path / "ours_uniform.csv")]
    assert cr.main(argv) == 0
    printed = capsys.readouterr().out
    assert "===== mlp =====" in printed and "===== uniform =====" in printed
    assert "ratio to mlp within each side, per tau, on 4 of the 4 settings, seeds both have" in printed
    assert "tau 1 ratio to mlp: reference 2.000 vs ours 2.000 (agree" in printed
    assert printed.rstrip().endswith("summary: mlp HOLDS, uniform HOLDS")
    # --agent all with --ours compares only the agents those files hold
    assert cr.main(argv[:4] + ["--ours", str(tmp_path / "ours_mlp.csv")]) == 0
    printed = capsys.readouterr().out
    assert "--agent all: not in the --ours files (a chained agent: not at its default chain length), skipped: uniform" in printed
    assert printed.rstrip().endswith("summary: mlp HOLDS")
    # without our mlp the ratio cannot be formed, and the acceptance is not established
    assert cr.main(argv[:4] + ["--agent", "uniform", "--ours", str(tmp_path / "ours_uniform.csv")]) == 1
    assert "ratio to mlp not computed: ours has no mlp rows" in capsys.readouterr().out


def test_reference_files_are_combined_when_given_twice(cr, tmp_path, capsys):
    reference = pd.read_csv(_reference_csv(tmp_path / "ref.csv")).query("agent == 'mlp'")
    other = reference.assign(agent="uniform", kl_estimate=reference["kl_estimate"] * 2)
    other.to_csv(tmp_path / "ref_uniform.csv", index=False)
    reference.to_csv(tmp_path / "ref_mlp.csv", index=False)
    pd.concat([reference, other]).to_csv(tmp_path / "ref_both.csv", index=False)
    ours = pd.concat([reference, other]).rename(columns={"problem_seed": "seed", "kl_estimate": "kl"})
    ours.assign(kappa=None, input_dim=2).to_csv(tmp_path / "ours.csv", index=False)
    tail = ["--agent", "uniform", "--ours", str(tmp_path / "ours.csv")]
    assert cr.main(["--reference", str(tmp_path / "ref_both.csv"), *tail]) == 0
    combined = capsys.readouterr().out
    two = ["--reference", str(tmp_path / "ref_uniform.csv"), "--reference", str(tmp_path / "ref_mlp.csv")]
    assert cr.main([*two, *tail]) == 0
    separate = capsys.readouterr().out
    assert "tau 10 ratio to mlp: reference 2.000 vs ours 2.000 (agree" in separate
    assert separate.split("per setting:")[1] == combined.split("per setting:")[1]


def _ensemble_files(tmp_path: Path, ref_factor: float = 1.0) -> tuple[Path, Path]:
    """A reference file with a 100-member ensemble and mlp on 15 seeds per setting (ids
    of both layouts: classification_2d/i for seed indices 0-9, classification_2d_extra/j
    for 10-14, as in bench/data), and an ours file with both agents on 20 seeds."""
    rows = []
    for agent, m, factor in (("mlp", 1, 1.0), ("ensemble", 100, 0.5 * ref_factor)):
        for tau in (1, 10):
            for s in range(15):
                prefix = "classification_2d" if s < 10 else "classification_2d_extra"
                rows.append({"problem_id": f"{prefix}/{tau * 100 + s}", "agent": agent, "num_ensemble": m,
                             "tau": tau, "num_train": 1, "temperature": 0.01, "problem_seed": s + 1,
                             "kl_estimate": factor * tau * (1 + s % 4), "kl_std_error": 0.01, "test_acc": 0.9})
    reference = tmp_path / "ref.csv"
    pd.DataFrame(rows).to_csv(reference, index=False)
    ours = [
        {"agent": agent, "num_train": 1, "temperature": 0.01, "tau": tau, "kappa": None, "input_dim": 2,
         "seed": s, "kl": factor * tau * (1 + s % 4)}
        for agent, factor in (("mlp", 1.0), ("ensemble", 0.5))
        for tau in (1, 10)
        for s in range(20)
    ]
    pd.DataFrame(ours).to_csv(tmp_path / "ours.csv", index=False)
    return reference, tmp_path / "ours.csv"


def test_agent_ensemble_pools_every_reference_seed_and_judges_the_ratio(cr, tmp_path, capsys):
    reference, ours = _ensemble_files(tmp_path)
    argv = ["--reference", str(reference), "--ours", str(ours)]
    assert cr.main([*argv, "--agent", "ensemble"]) == 0
    printed = capsys.readouterr().out
    assert "d_KL of ensemble (num_ensemble 100)" in printed
    setting = next(line for line in printed.splitlines() if line.startswith("1 0.01 1 "))
    # all 15 reference seeds (both id layouts) and our 20: 0.5 * (1 + s % 4) over the seeds
    assert setting.split()[3:10] == ["1.2000", "+-", "0.1447", "15", "1.2500", "+-", "0.1282"]
    assert "tau 10 ratio to mlp: reference 0.500 vs ours 0.500 (agree" in printed
    assert cr.main([*argv, "--agent", "ensemble", "--num-ensemble", "30"]) == 2
    assert "only with --num-ensemble in [100], got 30" in capsys.readouterr().err
    assert cr.main([*argv, "--agent", "all"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("summary: ensemble HOLDS, mlp HOLDS")
    # a reference ensemble at 0.3 of its mlp (ours 0.5): the ratio to mlp disagrees
    reference, ours = _ensemble_files(tmp_path, ref_factor=0.6)
    assert cr.main(["--reference", str(reference), "--ours", str(ours), "--agent", "ensemble"]) == 1
    printed = capsys.readouterr().out
    assert "verdict for ensemble (num_ensemble 100): acceptance FAILS" in printed
    assert "reference 0.300 vs ours 0.500 (DISAGREE" in printed


def test_the_ratio_to_mlp_uses_only_the_seeds_both_have(cr, tmp_path, capsys):
    # reference ensemble on seeds 0-9 at 0.5 of mlp; reference mlp also on seeds 10-14, where
    # it is 10 times smaller: pooled, those seeds would put the reference's ratio at 0.71
    reference, ours = _ensemble_files(tmp_path)
    frame = pd.read_csv(reference)
    frame = frame[(frame["agent"] == "mlp") | (frame["problem_seed"] <= 10)]
    low = (frame["agent"] == "mlp") & (frame["problem_seed"] > 10)
    frame.loc[low, "kl_estimate"] = frame.loc[low, "kl_estimate"] / 10
    frame.to_csv(reference, index=False)
    assert cr.main(["--reference", str(reference), "--ours", str(ours), "--agent", "ensemble"]) == 0
    printed = capsys.readouterr().out
    assert "tau 1 ratio to mlp: reference 0.500 vs ours 0.500 (agree" in printed
    agent, mlp = cr.same_problems(cr._standard(frame[frame["agent"] == "ensemble"], "problem_seed", "kl_estimate"),
                                  cr._standard(frame[frame["agent"] == "mlp"], "problem_seed", "kl_estimate"))
    assert len(agent) == len(mlp) == 20 and sorted(set(mlp["seed"])) == list(range(1, 11))


def test_stored_reads_every_stored_ours_file_and_every_core_agent_holds(cr, capsys):
    # The figures the README quotes: our stored rows against the stored reference rows.
    assert cr.main(["--agent", "all", "--stored"]) == 0
    out = capsys.readouterr().out
    summary = [line for line in out.splitlines() if line.startswith("summary: ")]
    # sgmcmc at its default (the paper's 500k-step) chain since both sides' rows hold it
    assert summary == ["summary: bbb HOLDS, dropout HOLDS, ensemble HOLDS, ensemble+ HOLDS, epinet HOLDS, "
                       "hypermodel HOLDS, mlp HOLDS, sgmcmc HOLDS"]
    assert all(path.name.startswith("ours_testbed_") for path in cr.stored_ours_files())


def test_stored_and_ours_together_are_refused(cr, capsys):
    assert cr.main(["--stored", "--ours", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert "--stored" in err and "not both" in err and err.count("\n") == 1


def test_a_chained_agent_is_compared_at_one_chain_length_on_both_sides(cr, tmp_path, capsys):
    # sgmcmc's short and full chains of one problem are two reference figures; --num-steps
    # picks one on both sides (ours by its num_steps column), the default being the agent's.
    reference = pd.read_csv(_reference_csv(tmp_path / "ref.csv")).query("agent == 'mlp'")
    chains = []
    for steps, burn_in, every, factor in ((5000, 1000, 10, 2.0), (500_000, 100_000, 1000, 1.0)):
        chains.append(reference.assign(agent="sgmcmc", kl_estimate=reference["kl_estimate"] * factor,
                                       num_batches=steps, burn_in_time=burn_in, model_saving_frequency=every))
    both = pd.concat([reference, *chains], ignore_index=True)
    both.to_csv(tmp_path / "ref.csv", index=False)
    ours = both.rename(columns={"problem_seed": "seed", "kl_estimate": "kl", "num_batches": "num_steps",
                                "burn_in_time": "burn_in", "model_saving_frequency": "keep_every"})
    ours = ours.assign(kappa=None, input_dim=2)
    ours.to_csv(tmp_path / "ours.csv", index=False)
    argv = ["--reference", str(tmp_path / "ref.csv"), "--ours", str(tmp_path / "ours.csv"), "--agent", "sgmcmc"]
    assert cr.main(argv + ["--num-steps", "5000"]) == 0
    out = capsys.readouterr().out
    assert "sgmcmc (chain 5000 steps, burn-in 1000, keep every 10)" in out
    assert "tau 1 ratio to mlp: reference 2.000 vs ours 2.000 (agree" in out
    assert cr.main(argv) == 0
    assert "tau 1 ratio to mlp: reference 1.000 vs ours 1.000 (agree" in capsys.readouterr().out
    ours[ours["num_steps"] != 500_000].to_csv(tmp_path / "ours.csv", index=False)
    assert cr.main(argv) == 2
    assert "ours has no rows of 'sgmcmc' with num_steps 500000" in capsys.readouterr().err
    assert cr.main(argv + ["--num-steps", "7"]) == 2
    assert "only with --num-steps in [5000, 500000], got 7" in capsys.readouterr().err
