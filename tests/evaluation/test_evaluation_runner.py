"""The testbed runner: the vmapped, compiled path agrees with fitting and evaluating
one problem at a time (the ``testbed`` command: tests/cli/test_testbed_command.py)."""

from __future__ import annotations

import jax
import pytest

from decision_bench.agents import fit, make
from decision_bench.envs.testbed import make_testbed_problem
from decision_bench.evaluation import FittedAgent, estimate_kl, get_sweep, run_testbed
from decision_bench._src.keys import EVAL_TAG, FIT_TAG, problem_key
from decision_bench.evaluation.runner import COLUMNS, DESIGN_TAG
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign

TINY = Sweep(
    "tiny",
    (TestbedSetting(input_dim=2, num_train=10, temperature=0.1),),
    (TestDesign(1), TestDesign(10, 2)),
    num_seeds=2,
)


@pytest.fixture(scope="module")
def frame():
    overrides = {"mlp": {"num_steps": 50}}
    return run_testbed(
        ["uniform", "mlp"], TINY, [0, 2], num_test=100, num_models=20, overrides=overrides,
        progress=False,
    )


def test_rows_columns_and_versions(frame):
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == 2 * 1 * 2 * 2  # agents x settings x designs x seeds
    assert set(frame["seed"]) == {0, 2}
    assert frame["fraction_finite"].eq(1.0).all() and frame["params_finite"].all()
    assert frame["kappa"].isna().sum() == 4 and set(frame["kappa"].dropna()) == {2}
    for package in ("jax", "flax", "optax", "numpy", "decision-bench"):
        assert frame.attrs["versions"][package]
    assert (frame[["fit_seconds", "eval_seconds", "compile_seconds"]] >= 0).all().all()


@pytest.mark.parametrize("agent_name", ["uniform", "mlp"])
def test_vmapped_rows_equal_one_problem_at_a_time(frame, agent_name):
    """Seed s is make_testbed_problem(seed=s); fit and evaluation keys are documented."""
    # One agent object for all problems (as the runner, which fits with tau = 1),
    # so each design compiles once.
    spec = make_testbed_problem("mlp", 2, 10, 0.1, seed=0).spec
    agent = make(agent_name, spec, **({"num_steps": 50} if agent_name == "mlp" else {}))
    for seed in (0, 2):
        root = problem_key(seed, 2, 10, 0.1)
        for index, design in enumerate(TINY.designs):
            problem = make_testbed_problem(
                "mlp", 2, 10, 0.1, tau=design.tau, kappa=design.kappa, seed=seed
            )
            state = fit(agent, jax.random.fold_in(root, FIT_TAG), problem.train_data, spec)
            eval_key = jax.random.fold_in(root, EVAL_TAG)
            key = jax.random.fold_in(jax.random.fold_in(eval_key, DESIGN_TAG), index)
            single = estimate_kl(FittedAgent(agent, state), problem, key, 100, 20)
            row = frame[(frame.agent == agent_name) & (frame.seed == seed) & (frame.tau == design.tau)]
            assert len(row) == 1
            # vmapped vs unbatched float32 arithmetic: agreement to ~1e-5 relative
            assert row["kl"].item() == pytest.approx(single.kl, rel=1e-3, abs=1e-4)
            assert row["method"].item() == single.method


def test_uniform_rows_are_positive_and_mlp_learns(frame):
    # After fitting, mlp predicts better than the uniform agent on average.
    mean = frame.groupby(["agent", "tau"])["kl"].mean()
    assert mean[("mlp", 1)] < mean[("uniform", 1)]
    assert (frame.loc[frame.agent == "uniform", "accuracy"] <= 1.0).all()


def test_runner_validation():
    with pytest.raises(ValueError, match="agent_names"):
        run_testbed(["nope"], TINY, 1)
    with pytest.raises(ValueError, match="seeds"):
        run_testbed(["mlp"], TINY, 0)
    with pytest.raises(ValueError, match="sweep"):
        run_testbed(["mlp"], "nope", 1)
    with pytest.raises(ValueError, match="method"):
        run_testbed(["mlp"], TINY, 1, method="nope")
    with pytest.raises(ValueError, match="overrides"):
        run_testbed(["mlp"], TINY, 1, overrides={"ensemble": {}})


def test_named_sweeps_match_the_papers():
    paper2d = get_sweep("paper2d")
    assert paper2d.num_problems == 420  # 7 T x 3 beta x 2 tau x 10 seeds
    assert {s.num_train for s in paper2d.settings} == {1, 3, 10, 30, 100, 300, 1000}
    highdim = get_sweep("highdim")
    assert {(s.input_dim, s.num_train // s.input_dim) for s in highdim.settings} == {
        (d, lam) for d in (2, 10, 100) for lam in (1, 10, 100, 1000)
    }
    assert {(d.tau, d.kappa) for d in highdim.designs} == {(1, None), (10, None), (10, 2)}
    assert highdim.num_seeds == 5
