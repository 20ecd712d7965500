"""A wrong agent is refused in one line naming it, before any fit or step (issue 34)."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

from decision_bench.agents import Agent, fit, make
from decision_bench.agents.contract import check_agent_contract
from decision_bench.bandit import run_bandit
from decision_bench.envs.testbed import Dataset
from decision_bench.evaluation.runner import run_testbed
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=10)


def _linear(num_outputs=2, logits_dtype=jnp.float32, **changes):
    """A tiny linear agent; ``changes`` replace its fields."""
    def init(key):
        return {"w": jax.random.normal(key, (2, num_outputs))}

    def update(key, state, batch):
        return state

    def sample_logits(key, state, x):
        return (x @ state["w"]).astype(logits_dtype)

    fields = dict(init=init, update=update, sample_logits=sample_logits, num_steps=3, name="linear")
    fields.update(changes)
    return Agent(**fields)


def test_a_registered_agent_keeps_the_contract():
    for name in ("mlp", "ensemble+", "epinet"):
        agent = make(name, SPEC)
        assert check_agent_contract(agent, SPEC, name) is agent


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        # F09 / F38: logits for num_classes + 1 classes were scored.
        (_linear(num_outputs=3), r"agent 'x': sample_logits\(key, state, x\) returned \[5, 3\] float32 .*expected floating logits \[n, num_classes\] = \[5, 2\]"),
        # F12: integer logits.
        (_linear(logits_dtype=jnp.int32), r"returned \[5, 2\] int32"),
        # F08: one logit per input.
        (_linear(sample_logits=lambda key, state, x: (x @ state["w"])[:, 0]), r"returned \[5\] float32"),
        # F20: a negative step count was fitted with 0 steps.
        (_linear(num_steps=-5), r"agent 'x': num_steps must be an integer >= 0, got -5"),
        # F21: a str leaf in the state.
        (_linear(init=lambda key: {"w": jnp.zeros((2, 2)), "tag": "a"}), r"init\(key\) (must return a pytree of arrays|fails when traced)"),
        # F22: update changes the state's structure.
        (_linear(update=lambda key, state, batch: {**state, "extra": jnp.zeros(())}),
         r"update\(key, state, batch\) must return a state of the same structure"),
        (_linear(update=lambda key, state, batch: {"w": jnp.zeros((3, 2))}),
         r"update\(key, state, batch\) changed state leaf \['w'\] from \[2, 2\] float32 to \[3, 2\] float32"),
        # A host (numpy) computation inside a traced function: one line with a hint.
        (_linear(sample_logits=lambda key, state, x: jnp.asarray(__import__("numpy").asarray(x) @ __import__("numpy").ones((2, 2)))),
         r"sample_logits\(key, state, x\) fails when traced: TracerArrayConversionError.*must be traceable by JAX"),
    ],
)
def test_a_broken_agent_is_one_line_naming_it(agent, message):
    with pytest.raises(ValueError, match=message) as error:
        check_agent_contract(agent, SPEC, "agent 'x'")
    assert "\n" not in str(error.value)


def test_the_testbed_refuses_an_agent_with_the_wrong_number_of_classes():
    sweep = Sweep("t", (TestbedSetting(input_dim=2, num_train=5, temperature=0.1),), (TestDesign(1),), num_seeds=1)
    with pytest.raises(ValueError, match=r"agent 'classes': sample_logits.*expected floating logits \[n, num_classes\] = \[5, 2\]"):
        run_testbed({"classes": lambda spec: _linear(num_outputs=spec.num_classes + 1)}, sweep, [0],
                    num_test=5, num_models=2, progress=False)


def test_the_bandit_refuses_an_agent_with_the_wrong_number_of_classes():
    with pytest.raises(ValueError, match=r"sample_logits.*expected floating logits"):
        run_bandit(lambda spec: _linear(num_outputs=3), "NeuralBandit-v0", num_steps=5, seeds=1,
                   env_kwargs={"input_dim": 2, "num_actions": 4}, progress=False)


def test_fit_refuses_labels_outside_the_specs_classes_and_a_negative_step_count():
    # G42: labels >= num_classes were trained on (JAX clamps the index).
    data = Dataset(x=jnp.zeros((10, 2)), y=jnp.array([0, 1, 2, 0, 1, 0, 1, 0, 1, 0], jnp.int32))
    with pytest.raises(ValueError, match=r"labels y must lie in \[0, num_classes - 1\] = \[0, 1\], got values from 0 to 2"):
        fit(make("mlp", SPEC), jax.random.key(0), data, SPEC)
    good = dataclasses.replace(data, y=jnp.zeros(10, jnp.int32)) if dataclasses.is_dataclass(data) else data._replace(y=jnp.zeros(10, jnp.int32))
    with pytest.raises(ValueError, match=r"agent.num_steps must be"):
        fit(_linear(num_steps=-5), jax.random.key(0), good, SPEC)


def test_a_run_whose_agent_states_cannot_fit_is_refused_before_any_work():
    # A017, A018, F33 (issue 34): a huge num_ensemble ran out of memory after its first seconds.
    from decision_bench.agents.contract import check_state_fits, state_bytes

    agent = make("ensemble", SPEC, num_ensemble=4)
    per_seed = state_bytes(agent)
    assert per_seed > 4 * 2 * 50 * 4  # at least the members' first layers, float32
    check_state_fits(agent, 3, "agent 'ensemble'", memory=3 * per_seed)  # fits exactly
    with pytest.raises(ValueError, match=r"agent 'ensemble' with 4 seed\(s\) needs at least .* seeds x the agent's state"):
        check_state_fits(agent, 4, "agent 'ensemble'", memory=3 * per_seed)


def test_the_bandit_refuses_a_huge_ensemble_in_one_line_before_stepping():
    with pytest.raises(ValueError, match=r"needs at least .* of memory, mostly seeds x the agent's state"):
        run_bandit("ensemble", "NeuralBandit-v0", num_steps=5, seeds=2, agent_kwargs={"num_ensemble": 20_000_000},
                   env_kwargs={"input_dim": 2, "num_actions": 4}, progress=False)
