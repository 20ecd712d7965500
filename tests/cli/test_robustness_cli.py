"""Robustness flags of the command line: bad families are one-line errors before any work."""

import pytest

from decision_bench.cli.program import main


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--activation", "swoosh"], "decision-bench: error: activation must be one of ['gelu', 'leaky_relu', 'relu', 'selu', 'sigmoid', 'swish', 'tanh'], got 'swoosh'"),
        (["--hidden-sizes", "0,50"], "decision-bench: error: hidden_sizes must be a non-empty sequence of positive integers, got (0, 50)"),
        (["--hidden-sizes", "ten"], "decision-bench: error: --hidden-sizes must be positive integers separated by commas, e.g. 50,50; got 'ten'"),
    ],
)
def test_bandit_family_flags_refuse_bad_values_in_one_line(tmp_path, capsys, flags, message):
    status = main(["bandit", "--agents", "mlp", "--steps", "3", "--seeds", "1", "--out", str(tmp_path / "o"), *flags])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err == message
    assert not (tmp_path / "o").exists()


def test_reproduce_lists_the_robustness_presets(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--preset", "robust"])
    err = capsys.readouterr().err
    assert "'robustness'" in err and "'robustness-quick'" in err
