"""Hyperparameters are data: a second identical (or re-valued) call compiles nothing.

The per-family checks run for every registered agent (``agents.names()``), with
no list of families to keep up to date: a second identical make + fit, another
value of each traced hyperparameter (every leaf of the agent's bound hyper) and
another temperature all reuse the compiled programs, and each value changes the
result, unless the config declares the leaf unused in its static setting
(``unused_traced``), in which case the result is asserted unchanged.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_counting import count_compilations
from test_contract import agent_param

from decision_bench import agents, make_testbed_problem, run_bandit
from decision_bench.agents import fit, make
from decision_bench.agents.core import hyper_of, static_fields, traced_fields, with_hyper
from decision_bench.agents.registry import ONE_HOT_AGENTS
from decision_bench.bandit import BanditLoopConfig
from decision_bench.envs.testbed import Dataset
from decision_bench.evaluation import FittedAgent, estimate_kl

NUM_STEPS = 15
NUM_TRAIN = 10
TEST_X = jax.random.normal(jax.random.key(9), (7, 2), jnp.float32)

# Small sizes, applied wherever an agent has the field, so each family compiles in seconds.
SMALL = dict(
    hidden_sizes=(8,),
    prior_hidden_sizes=(4,),
    epinet_hidden_sizes=(5,),
    num_ensemble=3,
    index_dim=3,
    num_index_samples=2,
    num_steps=20,
    burn_in=10,
    keep_every=5,
    num_trees=3,
    num_chains=2,
    num_warmup=20,
    num_samples=10,
    thinning=1,
    num_integration_steps=4,
)
# Further static settings worth the same checks: (agent, overrides).
VARIANTS = [
    # a mixture prior: the sampled KL reads sigma_1, sigma_2 and mixture_weight
    ("bbb", dict(mixture_weight=0.5)),
]
CASES = [agent_param(name) for name in agents.names()] + [
    pytest.param((name, extra), id=f"{name}-{'-'.join(f'{k}={v}' for k, v in extra.items())}")
    for name, extra in VARIANTS
]


def _case(param):
    return param if isinstance(param, tuple) else (param, {})


def _overrides(name: str, extra: dict) -> dict:
    valid = set(agents.hyperparameters(name))
    return {**{k: v for k, v in SMALL.items() if k in valid}, **extra}


@functools.lru_cache(maxsize=None)
def _problem(name: str, temperature: float = 0.1):
    """(spec, data, test inputs): the testbed's 2-d problem, or two coins for
    agents of one-hot inputs. Another temperature changes only the spec: the
    agent is told another temperature, the data stay."""
    problem = make_testbed_problem("mlp", input_dim=2, num_train=NUM_TRAIN, temperature=0.1, tau=1)
    spec = dataclasses.replace(problem.spec, temperature=temperature)
    if name not in ONE_HOT_AGENTS:
        return spec, problem.train_data, TEST_X
    arm = jax.random.randint(jax.random.key(0), (NUM_TRAIN,), 0, 2)
    y = jax.random.bernoulli(jax.random.key(1), 0.3, (NUM_TRAIN,)).astype(jnp.int32)
    return spec, Dataset(jax.nn.one_hot(arm, 2), y), jnp.eye(2)


@jax.jit
def _sample(agent, key, state, x):
    return agent.sample_logits(key, state, x)


def _fit(agent, spec, data, x):
    steps = min(agent.num_steps, NUM_STEPS)
    state = fit(agent, jax.random.key(1), data, spec, num_steps=steps)
    return jax.block_until_ready(_sample(agent, jax.random.key(2), state, x))


def _make_and_fit(name, extra, temperature=0.1, **overrides):
    spec, data, x = _problem(name, temperature)
    agent = make(name, spec, **{**_overrides(name, extra), **overrides})
    return agent, _fit(agent, spec, data, x)


def _other_value(name: str, extra: dict, field: str, value: float) -> float:
    """A value of ``field`` the config accepts, away from ``value``."""
    for candidate in (value * 0.5, value * 2.0, 0.5, 0.25):
        if candidate != value:
            try:
                agents.config(name, **{**_overrides(name, extra), field: candidate})
            except ValueError:
                continue
            return candidate
    raise AssertionError(f"no other valid value of {name}.{field}")


def _traced(agent) -> tuple[str, ...]:
    return tuple(field for field in hyper_of(agent)._fields if field != "temperature")


def _unused(name: str, extra: dict) -> tuple[str, ...]:
    return tuple(getattr(agents.config(name, **_overrides(name, extra)), "unused_traced", ()))


@pytest.mark.parametrize("case", CASES)
def test_second_identical_make_and_fit_compiles_nothing(case):
    name, extra = _case(case)
    _, first = _make_and_fit(name, extra)
    with count_compilations() as seen:
        _, second = _make_and_fit(name, extra)
    assert seen == []
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("case", CASES)
def test_another_value_of_each_traced_hyperparameter_compiles_nothing(case):
    name, extra = _case(case)
    agent, base = _make_and_fit(name, extra)
    config = agents.config(name, **_overrides(name, extra))
    hyper = hyper_of(agent)
    if traced_fields(config):  # a family on the core: its hyper is derived from the config
        assert _traced(agent) == traced_fields(config)
    unused = _unused(name, extra)
    spec, data, x = _problem(name)
    for field in _traced(agent):
        value = getattr(config, field)
        other = _other_value(name, extra, field, value)
        with count_compilations() as seen:
            if field in unused:
                # a leaf this static setting never reads; another value through
                # make could select another static setting, so rebind it instead
                rebound = with_hyper(agent, hyper._replace(**{field: jnp.float32(other)}))
                logits = _fit(rebound, spec, data, x)
            else:
                changed, logits = _make_and_fit(name, extra, **{field: other})
                assert float(getattr(hyper_of(changed), field)) == pytest.approx(other)
        assert seen == [], field
        if field in unused:
            np.testing.assert_array_equal(base, logits, err_msg=field)
        else:
            assert not np.allclose(base, logits), f"{name}: {field} is not used"


@pytest.mark.parametrize("case", CASES)
def test_another_temperature_compiles_nothing(case):
    name, extra = _case(case)
    _, cold = _make_and_fit(name, extra, temperature=0.1)
    with count_compilations() as seen:
        _, warm = _make_and_fit(name, extra, temperature=0.5)
    assert seen == []
    if "temperature" in _unused(name, extra):
        np.testing.assert_array_equal(cold, warm)
    else:
        assert not np.allclose(cold, warm)


@pytest.mark.parametrize("case", CASES)
def test_other_values_give_the_same_functions(case):
    name, extra = _case(case)
    spec, _, _ = _problem(name)
    config = agents.config(name, **_overrides(name, extra))
    a = make(name, spec, **_overrides(name, extra))
    unused = _unused(name, extra)
    values = {
        field: _other_value(name, extra, field, getattr(config, field))
        for field in _traced(a)
        if field not in unused
    }
    b = make(name, spec, **{**_overrides(name, extra), **values})
    assert a.update.func is b.update.func and a.sample_logits.func is b.sample_logits.func
    assert jax.tree.structure(a) == jax.tree.structure(b)


def test_every_real_valued_config_field_is_traced_or_declared_static():
    # A float field left out of traced() would silently be compiled in.
    spec, _, _ = _problem("mlp")
    for name in agents.names():
        config = agents.config(name, **_overrides(name, {}))
        floats = {
            f.name
            for f in dataclasses.fields(config)
            if isinstance(getattr(config, f.name), float)
        }
        traced = set(_traced(make(name, spec, **_overrides(name, {}))))
        assert floats - set(static_fields(config)) <= traced, name


# ------------------------------------------------------- beyond one family


def _mlp_problem(num_train=10, temperature=0.1, tau=1):
    return make_testbed_problem("mlp", input_dim=2, num_train=num_train,
                                temperature=temperature, tau=tau)


def _fit_mlp(problem, **overrides):
    agent = make("mlp", problem.spec, **overrides)
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec, num_steps=20)
    return agent, jax.block_until_ready(state)


def test_counter_sees_a_fresh_compilation():
    with count_compilations() as seen:
        jax.jit(lambda x: x * 3.0 + 1.0)(jnp.ones(7)).block_until_ready()
    assert len(seen) >= 1


def test_second_identical_estimate_kl_compiles_nothing():
    problem = _mlp_problem(tau=10)
    agent, state = _fit_mlp(problem)
    estimate_kl(FittedAgent(agent, state), problem, jax.random.key(2), num_test=20, num_models=5)
    again, state = _fit_mlp(problem)
    with count_compilations() as seen:
        estimate_kl(FittedAgent(again, state), problem, jax.random.key(2), num_test=20, num_models=5)
    assert seen == []


def test_second_identical_run_bandit_by_name_compiles_nothing():
    kwargs = dict(env_kwargs={"num_actions": 4}, log_every=10, chunk_size=20, progress=False)
    first = run_bandit("mlp", "BernoulliBandit-v0", 20, 2, BanditLoopConfig(batch_size=8), **kwargs)
    with count_compilations() as seen:
        second = run_bandit("mlp", "BernoulliBandit-v0", 20, 2, BanditLoopConfig(batch_size=8), **kwargs)
    assert seen == []
    np.testing.assert_array_equal(first.cumulative_regret, second.cumulative_regret)


@pytest.mark.parametrize("name, field, values", [
    ("mlp", "l2", (1e-2, 1.0, 30.0)),
    ("dropout", "dropout_rate", (0.0, 0.2, 0.5)),
    ("hypermodel", "prior_scale", (0.0, 0.5, 3.0)),
    ("epinet", "prior_scale", (0.0, 0.5, 3.0)),
])
def test_a_grid_is_one_vmapped_fit_equal_to_separate_fits(name, field, values):
    spec, data, x = _problem(name)
    agent = make(name, spec, **_overrides(name, {}))
    grid_values = jnp.array(values, jnp.float32)
    grid = jax.tree.map(lambda leaf: jnp.full(grid_values.shape, leaf), hyper_of(agent))
    grid = grid._replace(**{field: grid_values})

    def fit_one(hyper):
        fitted = with_hyper(agent, hyper)
        state = fit(fitted, jax.random.key(1), data, spec, num_steps=NUM_STEPS)
        return fitted.sample_logits(jax.random.key(2), state, x)

    with count_compilations() as seen:
        logits = jax.jit(jax.vmap(fit_one))(grid)
    assert len(seen) == 1
    for i, value in enumerate(values):
        _, single = _make_and_fit(name, {}, **{field: value})
        np.testing.assert_allclose(logits[i], single, rtol=1e-5, atol=1e-5)


def test_prior_temperature_divides_the_raw_logits():
    _, cold = _make_and_fit("prior", {}, temperature=0.1)
    _, warm = _make_and_fit("prior", {}, temperature=0.5)
    np.testing.assert_allclose(cold * 0.1, warm * 0.5, rtol=1e-5, atol=1e-6)


def test_beta_bernoulli_posterior_is_the_prior_plus_the_counts():
    spec, data, _ = _problem("beta_bernoulli")

    def posterior(**overrides):
        agent = make("beta_bernoulli", spec, **overrides)
        return fit(agent, jax.random.key(1), data, spec, batch_size=spec.num_train)

    state = posterior()
    np.testing.assert_allclose(posterior(prior_alpha=3.0).alpha, state.alpha + 2.0)
    np.testing.assert_allclose(posterior(prior_beta=0.5).beta, state.beta - 0.5)


def test_a_testbed_sweep_over_temperatures_compiles_once_per_training_set_bucket():
    from decision_bench.evaluation import run_testbed
    from decision_bench.evaluation.sweeps import custom_sweep

    sweep = custom_sweep(2, [7], [0.05, 0.2, 0.9], taus=[1], num_seeds=2)
    # A step count no other test uses: the first temperature must compile afresh
    # whatever ran before in this process (other tests share the bucket of T = 7).
    overrides = {"mlp": {"num_steps": 13}}
    with count_compilations() as seen:
        rows = run_testbed("mlp", sweep, num_test=20, num_models=5, overrides=overrides,
                           progress=False)
    by_temperature = rows.groupby("temperature").compile_seconds.sum()
    assert by_temperature.loc[0.05] > 0
    assert by_temperature.loc[0.2] == 0 and by_temperature.loc[0.9] == 0
    assert len(seen) > 0
    with count_compilations() as again:
        run_testbed("mlp", sweep, num_test=20, num_models=5, overrides=overrides, progress=False)
    assert again == []
