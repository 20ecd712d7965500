"""The registry-wide agent contract: every registered agent is built, fitted, sampled and validated.

Contract tests are parametrized over ``agents.names()``, so every registered
agent is checked. Configs are kept small through ``small_overrides`` (generic
keys filtered by each agent's hyperparameters, plus per-agent extras). Agents
whose optional dependency is missing are skipped, with the reason, through
``agent_param``.
"""

from __future__ import annotations

import functools
import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents.registry import ENTRIES
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

# Each agent's facts are declared beside its family, in its entry (agents/entry.py).
# Agents whose samples must not depend on the key (no epistemic index).
DETERMINISTIC = {entry.name for entry in ENTRIES if entry.test.deterministic}
# Agents that ignore the data: no training improvement to check.
DATA_INDEPENDENT = {entry.name for entry in ENTRIES if entry.test.data_independent}
# Agents defined only for one-hot (bag-of-coins) inputs.
ONE_HOT_INPUTS = {entry.name for entry in ENTRIES if entry.inputs == "one_hot"}

NUM_TRAIN = 64
SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=NUM_TRAIN)

# Generic small settings, applied where the agent has the hyperparameter.
_SMALL = dict(num_steps=100, num_ensemble=5)
# Per-agent extras that keep cross-field constraints valid at small sizes.
_SMALL_EXTRA = {
    "sgmcmc": dict(burn_in=50, keep_every=10),
    "sgmcmc_quick": dict(burn_in=50, keep_every=10),
    # 4 chains x 10 kept draws of a (8,) network: a short run, not a converged one.
    "hmc": dict(hidden_sizes=(8,), num_warmup=100, num_samples=10, thinning=2, num_integration_steps=8),
    "random_forest": dict(num_trees=10),
}

# Agents that need an optional dependency: name -> (module, how to get it).
_OPTIONAL = {
    "hmc": ("blackjax", "the `bayes` extra, in the `test` extra on Python >= 3.11"),
    "random_forest": ("sklearn", "the `data` extra, also in the `test` extra"),
}


def agent_param(name: str, *marks) -> object:
    """``name`` as a pytest param, skipped (with the reason) when the agent's
    optional dependency is not importable; ``marks`` are added."""
    if name in _OPTIONAL:
        module, source = _OPTIONAL[name]
        missing = importlib.util.find_spec(module) is None
        reason = f"agent {name!r} needs {module} ({source}), which is not installed"
        marks = (pytest.mark.skipif(missing, reason=reason), *marks)
    return pytest.param(name, marks=marks)


def registered(exclude=()) -> list:
    """Every registered agent but ``exclude``, as params for the contract tests."""
    return [agent_param(name) for name in agents.names() if name not in exclude]


def small_overrides(name: str) -> dict:
    valid = set(agents.hyperparameters(name))
    overrides = {k: v for k, v in _SMALL.items() if k in valid}
    overrides.update(_SMALL_EXTRA.get(name, {}))
    return overrides


def separable_data(key: jax.Array, num_train: int = NUM_TRAIN, name: str = "") -> Dataset:
    """x ~ N(0, I_2), y = 1[x0 + x1 > 0]: linearly separable. For agents of
    one-hot inputs: two coins, coin 0 always tails and coin 1 always heads."""
    if name in ONE_HOT_INPUTS:
        coin = jax.random.randint(key, (num_train,), 0, 2)
        return Dataset(jax.nn.one_hot(coin, 2, dtype=jnp.float32), coin.astype(jnp.int32))
    x = jax.random.normal(key, (num_train, 2), jnp.float32)
    return Dataset(x, (x.sum(-1) > 0).astype(jnp.int32))


@functools.lru_cache(maxsize=None)
def small_agent(name: str) -> agents.Agent:
    # Cached so every test of one agent shares its compiled fit and samplers.
    return agents.make(name, SPEC, **small_overrides(name))


@functools.lru_cache(maxsize=None)
def _fit_program(name: str):
    """jitted (key, data) -> (initial state, fitted state), through agents.fit.

    Returning the initial state from the same program saves a compilation per
    agent (fit uses the first half of its key for init).
    """
    agent = small_agent(name)

    def run(key, data):
        initial = agent.init(jax.random.split(key)[0])
        return initial, agents.fit(agent, key, data, SPEC)

    return jax.jit(run)


@functools.lru_cache(maxsize=None)
def fitted(name: str, seed: int = 0):
    """(agent, data, initial state, fitted state): small agent, separable data."""
    data = separable_data(jax.random.key(100 + seed), name=name)
    initial, state = _fit_program(name)(jax.random.key(seed), data)
    return small_agent(name), data, initial, agents.check_finite(state, name)


@functools.lru_cache(maxsize=None)
def sampler(name: str):
    """jitted (keys [K], state, x [n, d]) -> logits [K, n, C]."""
    agent = small_agent(name)
    return jax.jit(jax.vmap(agent.sample_logits, (0, None, None)))


def _signature(tree):
    return jax.tree.map(lambda leaf: (jnp.shape(leaf), jnp.result_type(leaf)), tree)


# ---------------------------------------------------------------- contract


@pytest.mark.parametrize("name", registered())
def test_shapes_and_state_signature(name):
    agent, data, initial, state = fitted(name)
    assert _signature(state) == _signature(initial)
    x = data.x[:7]
    logits = sampler(name)(jax.random.split(jax.random.key(1), 3), state, x)
    assert logits.shape == (3, 7, SPEC.num_classes)
    assert bool(jnp.all(jnp.isfinite(logits)))
    if agent.member_logits is not None:
        members = jax.jit(agent.member_logits)(state, x)
        assert members.ndim == 3 and members.shape[1:] == (7, SPEC.num_classes)
    if agent.diagnose is not None:
        passed = jax.jit(agent.diagnose)(state)
        assert passed.shape == () and passed.dtype == jnp.bool_


@pytest.mark.parametrize("name", registered(exclude=DATA_INDEPENDENT))
def test_training_lowers_loss_on_separable_data(name):
    agent, data, initial, state = fitted(name)
    keys = jax.random.split(jax.random.key(2), 16)

    def predictive_nll(s):
        # NLL of the mean predictive over 16 draws, on the training data.
        probs = jax.nn.softmax(sampler(name)(keys, s, data.x), -1).mean(0)
        return float(-jnp.log(jnp.take_along_axis(probs, data.y[:, None], 1) + 1e-12).mean())

    nll_before, nll_after = predictive_nll(initial), predictive_nll(state)
    # The NLL is a deterministic function of the states (fixed keys), so any
    # decrease is real; ask for 5% so that a token change does not pass.
    assert nll_after < 0.95 * nll_before, (nll_before, nll_after)


@pytest.mark.parametrize("name", registered())
def test_same_key_same_sample_different_keys_differ(name):
    agent, data, initial, state = fitted(name)
    keys = jax.random.split(jax.random.key(3), 8)
    draws = np.asarray(sampler(name)(keys, state, data.x[:5]))
    again = np.asarray(sampler(name)(keys, state, data.x[:5]))
    np.testing.assert_array_equal(draws, again)
    distinct = {d.tobytes() for d in draws}
    if name in DETERMINISTIC:
        assert len(distinct) == 1
    else:
        # Ensembles of 5 may repeat a member; 8 draws all equal has probability 5**-7.
        assert len(distinct) > 1


# Each agent's vmapped fit is a separate compilation (seconds on a shared CPU):
# the agents that exercise every path of fit (deterministic update, per-step
# keys, bootstrap lookup by index, data-independent) run by default, the rest
# are marked slow.
_VMAP_FAST = {"mlp", "dropout", "ensemble+", "logistic", "prior", "uniform"}
# MCMC is chaotic: the rounding differences of batched matmuls grow by ~10x per
# few warm-up transitions (1e-7 after one, 1e-3 after ten, O(1) after twenty), so
# the vmapped and separate chains are compared over a run too short for that.
_VMAP_SHORT = {"hmc": dict(num_warmup=1)}


def _continuous_part(name: str, state):
    """The state without leaves that are discontinuous in the draws: hmc's R-hat
    ranks the folded draws |x - median|, whose two middle draws tie exactly, so
    rounding orders them (a 1e-6 change moves R-hat by ~0.01 one time in 20)."""
    if name == "hmc":
        return state._replace(diagnostics=state.diagnostics._replace(rhat=None))
    return state


@pytest.mark.parametrize(
    "name",
    [
        agent_param(n) if n in _VMAP_FAST else agent_param(n, pytest.mark.slow)
        for n in agents.names()
    ],
)
def test_fit_under_vmap_equals_separate_fits(name):
    seeds = (0, 1, 2)
    datasets = [separable_data(jax.random.key(100 + s), name=name) for s in seeds]  # fitted's
    if name in _VMAP_SHORT:
        agent = agents.make(name, SPEC, **{**small_overrides(name), **_VMAP_SHORT[name]})
        separate = [agents.fit(agent, jax.random.key(s), d, SPEC) for s, d in zip(seeds, datasets)]
    else:
        agent = small_agent(name)
        separate = [fitted(name, s)[3] for s in seeds]
    keys = jnp.stack([jax.random.key(s) for s in seeds])
    stacked_data = Dataset(*(jnp.stack(parts) for parts in zip(*datasets)))
    batched = jax.vmap(lambda k, d: agents.fit(agent, k, d, SPEC))(keys, stacked_data)
    for i, single in enumerate(separate):
        jax.tree.map(
            # Batched matmuls may round differently from unbatched ones.
            lambda a, b: np.testing.assert_allclose(a[i], b, rtol=1e-4, atol=1e-5),
            _continuous_part(name, batched),
            _continuous_part(name, single),
        )


def test_fit_hands_fit_data_the_real_rows_once_after_the_updates():
    """A user's agent with fit_data: fit runs its num_steps updates, then gives
    fit_data the padded data set and the number of real rows."""
    rows, real = 10, 7

    def init(key):
        del key
        return {"updates": jnp.zeros((), jnp.int32), "x": jnp.zeros((rows, 2)), "num_train": jnp.zeros((), jnp.int32)}

    def update(key, state, batch):
        return {**state, "updates": state["updates"] + 1}

    def fit_data(key, state, data, num_train):
        real_rows = (jnp.arange(rows) < num_train)[:, None]
        return {**state, "x": jnp.where(real_rows, data.x, 0.0), "num_train": num_train}

    agent = agents.Agent(init, update, lambda key, state, x: jnp.zeros((x.shape[0], 2)), num_steps=3,
                         fit_data=fit_data)
    data = separable_data(jax.random.key(0), rows)
    state = jax.jit(lambda d: agents.fit(agent, jax.random.key(1), d, num_train=real))(data)
    assert int(state["updates"]) == 3 and int(state["num_train"]) == real
    np.testing.assert_array_equal(state["x"][:real], data.x[:real])
    assert not np.any(np.asarray(state["x"][real:]))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("name", agents.names())
def test_every_registered_config_class_is_exported_by_name(name):
    config_class = type(agents.config(name))
    assert config_class.__name__ in agents.__all__
    assert getattr(agents, config_class.__name__) is config_class


def test_unknown_name_lists_the_registered_names():
    with pytest.raises(ValueError, match="registered agents") as err:
        agents.make("ensmble", SPEC)
    for name in agents.names():
        assert repr(name) in str(err.value)


def test_unknown_override_lists_the_hyperparameters():
    with pytest.raises(ValueError) as err:
        agents.make("ensemble", SPEC, ensemble_size=3)
    message = str(err.value)
    assert "ensemble_size" in message
    for field in agents.hyperparameters("ensemble"):
        assert field in message


@pytest.mark.parametrize(
    "name, overrides, parameter",
    [
        ("ensemble", dict(num_ensemble=0), "num_ensemble"),
        ("ensemble+", dict(num_ensemble=-1), "num_ensemble"),
        ("dropout", dict(dropout_rate=1.0), "dropout_rate"),
        ("dropout", dict(dropout_rate=-0.1), "dropout_rate"),
        ("dropout", dict(length_scale=0.0), "length_scale"),
        ("mlp", dict(l2=-1.0), "l2"),
        ("logistic", dict(l2=-0.5), "l2"),
        ("mlp", dict(learning_rate=0.0), "learning_rate"),
        ("ensemble", dict(learning_rate=-1e-3), "learning_rate"),
        ("ensemble+", dict(bootstrap="poisson"), "bootstrap"),
        ("mlp", dict(hidden_sizes=(50, 0)), "hidden_sizes"),
        ("prior", dict(activation="softplus"), "activation"),
    ],
)
def test_invalid_values_fail_at_construction(name, overrides, parameter):
    with pytest.raises(ValueError, match=parameter):
        agents.make(name, SPEC, **overrides)


@pytest.mark.parametrize("name", agents.names())
def test_the_decay_mode_is_the_problems_not_a_config_field(name):
    assert "regularization" not in agents.hyperparameters(name)
    with pytest.raises(ValueError, match="regularization must be one of"):
        ProblemSpec(input_dim=2, regularization="adaptive")


@pytest.mark.parametrize("name", registered())
def test_a_state_passed_where_the_key_belongs_is_one_line_naming_the_order(name):
    agent = agents.make(name, SPEC, **small_overrides(name))
    key = jax.random.key(0)
    state = agent.init(key)
    x = jnp.zeros((3, SPEC.input_dim), jnp.float32)
    with pytest.raises(ValueError, match=r"^Agent.sample_logits takes \(key, state, x\) since decision_bench 0.2 "
                                         r"\(key first\); its first argument is a .*, not a PRNG key"):
        agent.sample_logits(state, key, x)  # the pre-0.2 order
    with pytest.raises(ValueError, match=r"^Agent.sample_logits takes \(key, state, x\)"):
        jax.jit(agent.sample_logits)(state, key, x)
    # The key-first call works, with a typed key and with a raw uint32 one.
    assert agent.sample_logits(key, state, x).shape == (3, SPEC.num_classes)
    assert agent.sample_logits(jax.random.PRNGKey(0), state, x).shape == (3, SPEC.num_classes)
