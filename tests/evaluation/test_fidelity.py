"""Posterior fidelity (evaluation/fidelity.py) against independent truth: brute-force
sums over label vectors in float64, hand-computed coin mixtures, and Monte Carlo
estimates checked against the exact values within their own stated errors."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from compile_counting import count_compilations
from decision_bench.agents.base import Agent
from decision_bench.envs.testbed import make_testbed_problem
from decision_bench.evaluation import FittedAgent, estimate_kl
from decision_bench.evaluation.fidelity import (
    MAX_AUTO_ENUMERATED,
    FidelityConfig,
    joint_fidelity_enumerated,
    joint_fidelity_sampled,
    kl_to_reference,
    marginal_fidelity,
    posterior_fidelity,
    resolve_label_method,
)


def constant_members(logits) -> FittedAgent:
    """A finite member set whose members predict the same class logits at every input.

    logits: [M, C]. member_logits(state, x) -> [M, n, C]; sample_logits picks a member.
    """
    state = jnp.asarray(logits, jnp.float32)

    def member_logits(s, x):
        return jnp.broadcast_to(s[:, None, :], (s.shape[0], x.shape[0], s.shape[1])) + 0.0 * x[None, :, :1]

    def sample_logits(key, s, x):
        return member_logits(s, x)[jax.random.randint(key, (), 0, s.shape[0])]

    agent = Agent(
        init=lambda key: state,
        update=lambda key, s, batch: s,
        sample_logits=sample_logits,
        member_logits=member_logits,
        name="constant",
    )
    return FittedAgent(agent, state)


def brute_force(agent_logits: np.ndarray, reference_logits: np.ndarray) -> tuple[float, float]:
    """(TV, KL(ref || agent)) of the two mixtures' joint predictions, float64, by
    looping over every label vector with itertools."""

    def probs(logits):
        logits = np.asarray(logits, np.float64)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)  # [M, tau, C]

    pa, pr = probs(agent_logits), probs(reference_logits)
    tau, num_classes = pa.shape[1], pa.shape[2]
    tv = kl = 0.0
    for y in itertools.product(range(num_classes), repeat=tau):
        qa = np.mean(np.prod(pa[:, np.arange(tau), y], axis=1))
        qr = np.mean(np.prod(pr[:, np.arange(tau), y], axis=1))
        tv += 0.5 * abs(qa - qr)
        if qr > 0:
            kl += qr * (math.log(qr) - math.log(qa))
    return tv, kl


# jitted once per shape: op-by-op dispatch of the eager functions is slow
joint_fidelity_enumerated = jax.jit(joint_fidelity_enumerated)
joint_fidelity_sampled = jax.jit(joint_fidelity_sampled, static_argnums=3)
marginal_fidelity = jax.jit(marginal_fidelity)

COIN = 15.0  # logits +-15: a member that is all but certain of heads (or tails)


# ---------------------------------------------------------------- array functions


@pytest.mark.parametrize("tau, num_classes", [(1, 2), (3, 2), (2, 3), (6, 2)])
def test_enumerated_joint_matches_brute_force(tau, num_classes):
    rng = np.random.default_rng(tau * 10 + num_classes)
    agent = rng.normal(0.0, 2.0, (3, tau, num_classes))
    reference = rng.normal(0.0, 2.0, (5, tau, num_classes))
    tv, kl = joint_fidelity_enumerated(jnp.asarray(agent, jnp.float32), jnp.asarray(reference, jnp.float32))
    want_tv, want_kl = brute_force(agent, reference)
    assert float(tv) == pytest.approx(want_tv, abs=2e-6)
    assert float(kl) == pytest.approx(want_kl, rel=1e-4, abs=2e-6)
    assert want_tv > 0.01 and want_kl > 0.001  # the sets really differ


def test_tv_is_symmetric_and_in_unit_interval_and_kl_is_not_symmetric():
    rng = np.random.default_rng(0)
    for trial in range(20):
        scale = [0.1, 3.0, 30.0][trial % 3]  # near-uniform to near-deterministic members
        a = jnp.asarray(rng.normal(0.0, scale, (4, 5, 2)), jnp.float32)
        r = jnp.asarray(rng.normal(0.0, scale, (2, 5, 2)), jnp.float32)
        tv_ar, kl_ar = joint_fidelity_enumerated(a, r)
        tv_ra, kl_ra = joint_fidelity_enumerated(r, a)
        assert 0.0 <= float(tv_ar) <= 1.0
        assert float(tv_ar) == pytest.approx(float(tv_ra), abs=1e-6)
        assert float(kl_ar) >= -1e-5 and float(kl_ra) >= -1e-5
        agree, tv_m = marginal_fidelity(a, r)
        assert np.all((np.asarray(tv_m) >= 0) & (np.asarray(tv_m) <= 1))
        assert set(np.unique(np.asarray(agree))) <= {0.0, 1.0}
    # KL is not symmetric: one fair coin against a 50/50 mixture of certain coins
    fair, certain = jnp.zeros((1, 2, 2)), jnp.asarray([[[COIN, -COIN]] * 2, [[-COIN, COIN]] * 2])
    assert float(joint_fidelity_enumerated(fair, certain)[1]) == pytest.approx(math.log(2), abs=1e-5)
    assert float(joint_fidelity_enumerated(certain, fair)[1]) > 5.0  # ~ 2 * COIN: the mixture misses HT, TH


def test_identical_sets_give_zero_distance():
    a = jnp.asarray(np.random.default_rng(1).normal(0, 2, (7, 4, 3)), jnp.float32)
    # 1e-6: f32 rounding when XLA fuses the two (identical) mixtures differently
    tv, kl = joint_fidelity_enumerated(a, a)
    assert abs(float(tv)) < 1e-6 and abs(float(kl)) < 1e-6
    agree, tv_m = marginal_fidelity(a, a)
    assert np.all(np.asarray(agree) == 1.0) and np.all(np.abs(np.asarray(tv_m)) < 1e-6)
    tv_s, tv_se, kl_s, kl_se = joint_fidelity_sampled(jax.random.key(0), a, a, 64)
    assert abs(float(tv_s)) < 1e-6 and abs(float(kl_s)) < 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampled_joint_agrees_with_exact_within_its_stated_error(seed):
    rng = np.random.default_rng(seed)
    agent = jnp.asarray(rng.normal(0.0, 1.5, (6, 8, 2)), jnp.float32)
    reference = jnp.asarray(rng.normal(0.0, 1.5, (9, 8, 2)), jnp.float32)
    tv, kl = joint_fidelity_enumerated(agent, reference)
    tv_s, tv_se, kl_s, kl_se = joint_fidelity_sampled(jax.random.key(seed), agent, reference, 4000)
    assert 0.0 < float(tv_se) < 0.02 and 0.0 < float(kl_se)
    assert abs(float(tv_s) - float(tv)) < 4.0 * float(tv_se)
    assert abs(float(kl_s) - float(kl)) < 4.0 * float(kl_se)


def test_products_of_marginals_differ_from_a_joint_only_jointly():
    """The README's two coins: a fair coin, and a coin that is two-headed or
    two-tailed with probability 1/2 each. Same marginals, different joints."""
    fair = jnp.zeros((1, 1, 2))
    certain = jnp.asarray([[[COIN, -COIN]], [[-COIN, COIN]]])
    _, tv_m = marginal_fidelity(fair[:, :, :], certain)
    assert float(tv_m[0]) == pytest.approx(0.0, abs=1e-6)
    for tau in (2, 10):
        tv, kl = joint_fidelity_enumerated(jnp.tile(fair, (1, tau, 1)), jnp.tile(certain, (1, tau, 1)))
        # P_ref: all heads or all tails, 1/2 each; P_agent: 2^-tau on every vector.
        assert float(tv) == pytest.approx(1.0 - 2.0 ** (1 - tau), abs=1e-5)
        assert float(kl) == pytest.approx((tau - 1) * math.log(2), abs=1e-4)


def test_label_method_resolution_and_errors():
    assert resolve_label_method("auto", 10, 2) == "enumerate"
    assert resolve_label_method("auto", 11, 2) == "sample"
    assert resolve_label_method("auto", 7, 3) == "sample"  # 2187 > MAX_AUTO_ENUMERATED
    assert 3**6 <= MAX_AUTO_ENUMERATED and resolve_label_method("auto", 6, 3) == "enumerate"
    assert resolve_label_method("sample", 1, 2) == "sample"
    with pytest.raises(ValueError, match=r"label_method must be one of \['auto', 'enumerate', 'sample'\], got 'all'"):
        resolve_label_method("all", 10, 2)
    with pytest.raises(ValueError, match=r"label_method='enumerate' handles at most .* got num_classes\*\*tau = 2\*\*20"):
        resolve_label_method("enumerate", 20, 2)


# ---------------------------------------------------------------- posterior_fidelity


def test_coin_members_through_posterior_fidelity():
    problem = make_testbed_problem(num_train=0, tau=10, seed=0)
    fair = constant_members([[0.0, 0.0]])
    certain = constant_members([[COIN, -COIN], [-COIN, COIN]])
    result = posterior_fidelity(jax.random.key(0), fair, certain, problem, num_test=4)
    assert result.method == result.reference_method == "exact" and result.label_method == "enumerate"
    assert (result.num_models, result.reference_num_models) == (1, 2)
    assert result.tv == pytest.approx(0.0, abs=1e-6)
    assert result.tv_joint == pytest.approx(1.0 - 2.0**-9, abs=1e-5)
    assert result.kl_to_reference == pytest.approx(9 * math.log(2), abs=1e-4)
    assert result.tv_joint_mc_stderr == 0.0
    # tau = 2 on the same problem: TV 1/2, KL log 2
    two = posterior_fidelity(jax.random.key(0), fair, certain, problem, tau=2, num_test=4)
    assert two.tv_joint == pytest.approx(0.5, abs=1e-5) and two.kl_to_reference == pytest.approx(math.log(2), abs=1e-5)
    # hand-computed marginal: members p(heads) 0.9 against 0.5: TV 0.4; tau=2 joint TV 0.56
    p9 = constant_members([[math.log(0.9), math.log(0.1)]])
    two = posterior_fidelity(jax.random.key(0), p9, fair, problem, tau=2, num_test=3)
    assert two.tv == pytest.approx(0.4, abs=1e-6) and two.agreement == 1.0  # both say heads
    assert two.tv_joint == pytest.approx(0.56, abs=1e-6)


def _fitted_ensemble(problem, seed=1, num_ensemble=3):
    from decision_bench import agents

    agent = agents.make("ensemble", problem.spec, num_ensemble=num_ensemble)
    return FittedAgent(agent, agents.fit(agent, jax.random.key(seed), problem.train_data, num_steps=30))


def test_identical_agent_and_reference_and_symmetry_on_a_real_problem():
    problem = make_testbed_problem(num_train=10, tau=10, seed=3)
    a = _fitted_ensemble(problem, seed=1)
    b = _fitted_ensemble(problem, seed=2)
    same = posterior_fidelity(jax.random.key(5), a, a, problem, num_test=30)
    assert same.agreement == 1.0 and same.tv == pytest.approx(0.0, abs=1e-6)
    assert same.tv_joint == pytest.approx(0.0, abs=1e-6) and same.kl_to_reference == pytest.approx(0.0, abs=1e-6)
    ab = posterior_fidelity(jax.random.key(5), a, b, problem, num_test=30)
    ba = posterior_fidelity(jax.random.key(5), b, a, problem, num_test=30)
    assert ab.tv_joint > 1e-3
    assert ab.tv_joint == pytest.approx(ba.tv_joint, abs=1e-6) and ab.tv == pytest.approx(ba.tv, abs=1e-6)
    assert ab.agreement == ba.agreement
    # a tuple's joint TV is at least each of its positions' marginal TVs (iid design:
    # the marginal inputs are the tuples' positions)
    assert 0.0 <= ab.tv <= ab.tv_joint <= 1.0
    assert ab.tv_joint_per_sample.shape == (30,) and np.all(ab.tv_joint_per_sample <= 1.0)


def test_monte_carlo_labels_agree_with_enumeration_within_stated_error():
    problem = make_testbed_problem(num_train=10, tau=8, seed=4)
    a, b = _fitted_ensemble(problem, seed=1), _fitted_ensemble(problem, seed=7)
    exact = posterior_fidelity(jax.random.key(2), a, b, problem, num_test=20)
    mc = posterior_fidelity(
        jax.random.key(2), a, b, problem, num_test=20, label_method="sample", num_label_samples=2000
    )
    assert exact.label_method == "enumerate" and mc.label_method == "sample"
    assert exact.tv_joint_mc_stderr == 0.0 and mc.tv_joint_mc_stderr > 0.0
    # same key: the same test inputs and models; only the label vectors are sampled
    assert mc.tv == pytest.approx(exact.tv, abs=1e-6) and mc.agreement == exact.agreement
    assert abs(mc.tv_joint - exact.tv_joint) < 4.0 * mc.tv_joint_mc_stderr
    assert abs(mc.kl_to_reference - exact.kl_to_reference) < 4.0 * mc.kl_to_reference_mc_stderr
    assert mc.tv_joint_stderr >= mc.tv_joint_mc_stderr * 0.5  # over tuples: includes label noise


def test_sampled_agent_draws_and_environment_as_reference_match_estimate_kl():
    """With the environment as the reference, kl_to_reference is d_KL^tau: it must
    agree with estimate_kl (independent test draws) within both standard errors."""
    problem = make_testbed_problem(num_train=10, tau=10, seed=2)
    fitted = _fitted_ensemble(problem, seed=1)
    environment = lambda key, x: problem.logits(x)  # noqa: E731
    ref = kl_to_reference(
        jax.random.key(0), fitted, environment, problem, num_test=300, reference_num_models=1
    )
    assert ref.reference_method == "monte_carlo" and ref.reference_num_models == 1
    direct = estimate_kl(fitted, problem, jax.random.key(1), num_test=300)
    assert ref.kl > 0.0 and ref.kl_mc_stderr == 0.0
    assert abs(ref.kl - direct.kl) < 4.0 * math.hypot(ref.kl_stderr, direct.kl_stderr)


def test_errors_name_the_parameter():
    problem = make_testbed_problem(num_train=0, tau=2, seed=0)
    fair = constant_members([[0.0, 0.0]])
    with pytest.raises(ValueError, match="reference must be a FittedAgent"):
        posterior_fidelity(jax.random.key(0), fair, 3, problem)
    with pytest.raises(ValueError, match="label_method must be one of"):
        posterior_fidelity(jax.random.key(0), fair, fair, problem, label_method="exact")
    with pytest.raises(ValueError, match="num_label_samples must be an integer >= 2"):
        posterior_fidelity(jax.random.key(0), fair, fair, problem, num_label_samples=1)
    with pytest.raises(ValueError, match="method and reference_method must be"):
        posterior_fidelity(jax.random.key(0), fair, fair, problem, reference_method="partition")
    three = constant_members([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"reference: .*expected \[num_members, n, num_classes\]"):
        posterior_fidelity(jax.random.key(0), fair, three, problem)


def test_a_config_and_its_keywords_are_one_setting():
    problem = make_testbed_problem(num_train=0, tau=2, seed=0)
    fair, p9 = constant_members([[0.0, 0.0]]), constant_members([[0.0, 2.2]])
    config = FidelityConfig(num_test=3, num_label_samples=50, label_method="sample")
    given = posterior_fidelity(jax.random.key(4), p9, fair, problem, config)
    as_keywords = posterior_fidelity(
        jax.random.key(4), p9, fair, problem, num_test=3, num_label_samples=50, label_method="sample"
    )
    replaced = posterior_fidelity(jax.random.key(4), p9, fair, problem, FidelityConfig(num_test=9), num_test=3,
                                  num_label_samples=50, label_method="sample")
    assert given.label_method == "sample" and given.num_test == 3 and given.tau == 2
    for other in (as_keywords, replaced):
        np.testing.assert_array_equal(other.kl_per_sample, given.kl_per_sample)
    kl = kl_to_reference(jax.random.key(4), p9, fair, problem, config)
    np.testing.assert_array_equal(kl.per_sample, given.kl_per_sample)
    with pytest.raises(ValueError, match=r"unknown fidelity settings \['num_tests'\]"):
        posterior_fidelity(jax.random.key(0), fair, fair, problem, num_tests=3)
    with pytest.raises(ValueError, match="config must be a FidelityConfig"):
        kl_to_reference(jax.random.key(0), fair, fair, problem, {"num_test": 3})
    with pytest.raises(ValueError, match=r"kappa is the problem's test design \(kappa=None\), got 2"):
        posterior_fidelity(jax.random.key(0), fair, fair, problem, FidelityConfig(kappa=2))


def test_second_identical_call_does_not_recompile():
    problem = make_testbed_problem(num_train=10, tau=4, seed=0)
    a, b = _fitted_ensemble(problem, seed=1), _fitted_ensemble(problem, seed=2)
    first = posterior_fidelity(jax.random.key(0), a, b, problem, num_test=8)
    with count_compilations() as compiled:
        again = posterior_fidelity(jax.random.key(0), a, b, problem, num_test=8)
        # other states of the same family and another key: the same program
        other = posterior_fidelity(jax.random.key(1), b, a, problem, num_test=8)
    assert compiled == []
    assert again.tv_joint == first.tv_joint and other.tv_joint != first.tv_joint
