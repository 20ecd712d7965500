import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import decision_bench
from decision_bench.envs import BernoulliBandit, ContextualNeuralBandit, NeuralBandit, make_bandit
from decision_bench.envs import real_valued_rewards as core_has_real_rewards

SMALL = {
    "decision_bench/NeuralBandit-v0": dict(input_dim=2, num_actions=8, hidden_sizes=(10,)),
    "decision_bench/ContextualNeuralBandit-v0": dict(input_dim=3, num_actions=5, hidden_sizes=(10,)),
    "decision_bench/BernoulliBandit-v0": dict(num_actions=6),
    # digits: 10 classes, so the contract tests' actions 0..4 are all valid
    "decision_bench/ClassificationBandit-v0": dict(dataset="digits"),
    # the Showdown's Gaussian bandits (tests/envs/test_showdown.py); the wheel has 5 actions
    "decision_bench/WheelBandit-v0": dict(delta=0.5),
    "decision_bench/LinearBandit-v0": dict(context_dim=3, num_actions=5),
    "decision_bench/SparseLinearBandit-v0": dict(context_dim=4, num_actions=5, sparse_dim=2),
}


def _rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs, reward, terminated, truncated, info))
    return out


def _same(a, b):
    return all(
        np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    ) and len(jax.tree.leaves(a)) == len(jax.tree.leaves(b))


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_check_env_passes(env_id):
    check_env(gym.make(env_id, **SMALL[env_id]).unwrapped, skip_render_check=True)


def test_importing_the_package_registers_every_id():
    assert set(decision_bench.ENV_IDS) <= set(gym.registry)
    assert set(SMALL) == set(decision_bench.ENV_IDS)


def test_module_prefix_registers_without_a_prior_import():
    env = gym.make("decision_bench:decision_bench/BernoulliBandit-v0", num_actions=3)
    assert env.action_space.n == 3


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_same_seed_gives_identical_trajectories_and_different_seeds_differ(env_id):
    actions = [0, 1, 2, 1, 0] * 4
    a = _rollout(gym.make(env_id, **SMALL[env_id]), 7, actions)
    b = _rollout(gym.make(env_id, **SMALL[env_id]), 7, actions)
    c = _rollout(gym.make(env_id, **SMALL[env_id]), 8, actions)
    assert _same(a, b)
    assert not _same(a, c)


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_regret_is_optimal_minus_chosen_expected_reward_and_nonnegative(env_id):
    env = gym.make(env_id, **SMALL[env_id])
    env.reset(seed=3)
    for a in [0, 1, 2, 3, 4] * 3:
        _, _, _, _, info = env.step(a)
        # The difference in float32, as the environment computes it (rewards up to 50
        # on the wheel: the float64 difference of the two float32 values differs in its last bits).
        difference = np.float32(info["optimal_expected_reward"]) - np.float32(info["expected_reward"])
        assert info["regret"] == pytest.approx(float(difference), abs=1e-7)
        assert info["regret"] >= 0
        assert 0 <= info["optimal_action"] < env.action_space.n


def test_fixed_action_set_stays_and_contextual_set_changes():
    fixed = gym.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=4)
    obs0, _ = fixed.reset(seed=0)
    assert np.array_equal(fixed.step(0)[0], obs0)
    ctx = gym.make("decision_bench/ContextualNeuralBandit-v0", input_dim=2, num_actions=4)
    obs0, _ = ctx.reset(seed=0)
    assert not np.array_equal(ctx.step(0)[0], obs0)


def test_reset_samples_a_new_environment():
    env = gym.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=4)
    obs_a, _ = env.reset(seed=0)
    obs_b, _ = env.reset()
    assert not np.array_equal(obs_a, obs_b)


def test_reward_rate_of_one_action_matches_its_expected_reward():
    core = NeuralBandit(input_dim=2, num_actions=10, temperature=0.5)
    params = core.sample_params(jax.random.key(1))
    _, state = core.reset(jax.random.key(2), params)
    n = 20_000
    keys = jax.random.split(jax.random.key(3), n)
    rewards, info = jax.vmap(lambda k: core.step(k, state, 4, params)[2:])(keys)
    p = float(info["expected_reward"][0])
    # binomial standard error; 5 of them makes a false failure about 1 in 3 million
    assert abs(float(rewards.mean()) - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-6


def test_default_number_of_actions_is_twenty_per_dimension():
    assert NeuralBandit(input_dim=3).num_actions == 60
    assert gym.make("decision_bench/NeuralBandit-v0", input_dim=2).action_space.n == 40


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_adapter_and_functional_core_give_identical_trajectories(env_id):
    env = gym.make(env_id, **SMALL[env_id])
    actions = [1, 0, 2, 2, 1, 3]
    steps = _rollout(env, 11, actions)

    core = make_bandit(env_id, **SMALL[env_id])
    key = jax.random.key(11)
    k_params, k_reset, key = jax.random.split(key, 3)
    params = core.sample_params(k_params)
    obs, state = core.reset(k_reset, params)
    assert np.array_equal(np.asarray(obs), steps[0])
    for a, (g_obs, g_reward, _, _, g_info) in zip(actions, steps[1:]):
        key, k_step = jax.random.split(key)
        obs, state, reward, info = core.step(k_step, state, jnp.int32(a), params)
        assert np.array_equal(np.asarray(obs), g_obs)
        if core_has_real_rewards(core):
            # Gaussian rewards go through a dot product, which jitted and eager
            # float32 arithmetic may round differently in the last bits
            assert float(reward) == pytest.approx(g_reward, rel=1e-6)
        else:
            assert float(reward) == g_reward
        # jitted and eager float32 arithmetic may differ in the last bits
        assert float(info["regret"]) == pytest.approx(g_info["regret"], abs=1e-6)


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
@pytest.mark.parametrize("mode", [None, "sync"])
def test_make_vec_matches_single_envs_with_the_same_seeds(env_id, mode):
    k = 3
    kwargs = {} if mode is None else {"vectorization_mode": mode}
    venv = gym.make_vec(env_id, num_envs=k, **kwargs, **SMALL[env_id])
    obs, _ = venv.reset(seed=[5, 6, 7])
    singles = [gym.make(env_id, **SMALL[env_id]) for _ in range(k)]
    single_obs = [e.reset(seed=s)[0] for e, s in zip(singles, [5, 6, 7])]
    np.testing.assert_array_equal(obs, np.stack(single_obs))
    for t in range(5):
        actions = np.array([t % 3, (t + 1) % 3, 0])
        obs, reward, term, trunc, info = venv.step(actions)
        for i, e in enumerate(singles):
            s_obs, s_reward, _, _, s_info = e.step(int(actions[i]))
            np.testing.assert_array_equal(obs[i], s_obs)
            assert reward[i] == s_reward
            assert info["regret"][i] == pytest.approx(s_info["regret"], abs=1e-7)
        assert not term.any() and not trunc.any()


def test_vector_env_is_one_compiled_core_not_python_envs():
    venv = gym.make_vec("decision_bench/NeuralBandit-v0", num_envs=4, input_dim=2, num_actions=5)
    assert type(venv.unwrapped).__name__ == "BanditVectorEnv"
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (4, 5, 2)
    assert len({o.tobytes() for o in obs}) == 4  # each copy its own seed


def test_vector_env_truncates_and_resets_on_the_next_step():
    venv = gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, num_actions=3, max_episode_steps=2)
    venv.reset(seed=0)
    assert not venv.step(np.array([0, 1]))[3].any()
    assert venv.step(np.array([0, 1]))[3].all()
    obs, reward, _, trunc, info = venv.step(np.array([0, 1]))
    assert not trunc.any() and np.all(reward == 0) and not info["_regret"].any()


def test_single_env_truncates_with_max_episode_steps():
    env = gym.make("decision_bench/BernoulliBandit-v0", num_actions=3, max_episode_steps=2)
    env.reset(seed=0)
    assert env.step(0)[3] is False
    assert env.step(0)[3] is True


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(input_dim=0), "input_dim"),
        (dict(num_actions=0), "num_actions"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=float("inf")), "temperature"),
        (dict(activation="cosine"), "activation"),
        (dict(hidden_sizes=()), "hidden_sizes"),
        (dict(hiddens=(5,)), "hiddens"),
    ],
)
def test_invalid_environment_arguments_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        gym.make("decision_bench/NeuralBandit-v0", **kwargs)


def test_unknown_keyword_to_make_vec_is_an_error():
    with pytest.raises(ValueError, match="accepted"):
        gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, temperature=0.1)


@pytest.mark.parametrize("action", [-1, 8, 2.5, "a"])
def test_action_outside_the_action_space_is_an_error(action):
    env = gym.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=8).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)


def test_vector_actions_outside_the_space_are_an_error():
    venv = gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, num_actions=3)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        venv.step(np.array([0, 3]))


def test_functional_core_jits_vmaps_and_scans():
    core = ContextualNeuralBandit(input_dim=2, num_actions=6)

    def episode(key):
        k_p, k_r, k_s = jax.random.split(key, 3)
        params = core.sample_params(k_p)
        _, state = core.reset(k_r, params)

        def body(state, k):
            _, state, reward, info = core.step(k, state, jnp.int32(0), params)
            return state, info["regret"]

        return jax.lax.scan(body, state, jax.random.split(k_s, 50))[1]

    regrets = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(0), 3))
    assert regrets.shape == (3, 50) and np.all(np.asarray(regrets) >= 0)


def test_bernoulli_bandit_expected_rewards_are_the_coin_probabilities():
    core = BernoulliBandit(num_actions=5)
    params = core.sample_params(jax.random.key(0))
    obs, state = core.reset(jax.random.key(1), params)
    np.testing.assert_array_equal(obs, np.eye(5))
    for a in range(5):
        info = core.step(jax.random.key(a), state, a, params)[3]
        assert float(info["expected_reward"]) == pytest.approx(float(params.model["p"][a]))


@pytest.mark.parametrize("seed", [2**64, 2**63, -1, 1.5, True])
def test_a_seed_jax_cannot_take_is_refused_in_one_line_naming_seed(seed):
    env = gym.make("decision_bench/BernoulliBandit-v0", num_actions=3)
    with pytest.raises(ValueError, match=r"^seed must be an integer in \[0, 2\*\*63 - 1\], got "):
        env.reset(seed=seed)
    obs, _ = env.reset(seed=2**63 - 1)  # the largest accepted seed works
    assert obs.shape == env.observation_space.shape


def test_vector_seeds_are_checked_for_every_copy():
    venv = gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, num_actions=3)
    with pytest.raises(ValueError, match=r"^seed \+ 1 \(copy 1's seed\) must be an integer in \[0, 2\*\*63 - 1\]"):
        venv.reset(seed=2**63 - 1)
    with pytest.raises(ValueError, match=r"^seed\[1\] must be an integer in"):
        venv.reset(seed=[0, 2**64])
    obs, _ = venv.reset(seed=[0, 2**63 - 1])
    assert obs.shape[0] == 2


# --- episodes: the registered step limit (issue 36) ---------------------------------


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_every_id_is_registered_with_a_ten_thousand_step_limit_for_make_and_make_vec(env_id):
    assert gym.spec(env_id).max_episode_steps == 10_000
    venv = gym.make_vec(env_id, num_envs=2, **SMALL[env_id])
    assert venv.unwrapped.max_episode_steps == 10_000


def test_registered_limit_truncates_at_step_ten_thousand_and_episode_statistics_report_it():
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("decision_bench/BernoulliBandit-v0", num_actions=3))
    env.reset(seed=0)
    total = 0.0
    for t in range(1, 10_001):
        _, reward, terminated, truncated, info = env.step(t % 3)
        total += reward
        assert not terminated and truncated == (t == 10_000)
        assert ("episode" in info) == (t == 10_000)
    assert info["episode"]["l"] == 10_000
    assert info["episode"]["r"] == pytest.approx(total)


def test_max_episode_steps_given_to_make_overrides_the_registered_limit():
    env = gym.wrappers.RecordEpisodeStatistics(
        gym.make("decision_bench/NeuralBandit-v0", input_dim=2, num_actions=4, max_episode_steps=3)
    )
    env.reset(seed=1)
    rewards = [env.step(0)[1] for _ in range(2)]
    _, reward, _, truncated, info = env.step(0)
    assert truncated and info["episode"]["l"] == 3
    assert info["episode"]["r"] == pytest.approx(sum(rewards) + reward)


def test_minus_one_removes_the_limit_in_make_and_in_make_vec():
    # gym.make puts TimeLimit outermost when there is a limit
    assert isinstance(gym.make("decision_bench/BernoulliBandit-v0", num_actions=3), gym.wrappers.TimeLimit)
    assert not isinstance(
        gym.make("decision_bench/BernoulliBandit-v0", num_actions=3, max_episode_steps=-1), gym.wrappers.TimeLimit
    )
    venv = gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, num_actions=3, max_episode_steps=-1)
    assert venv.unwrapped.max_episode_steps is None


def test_vector_episode_statistics_report_each_copy_at_its_truncation():
    venv = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.make_vec("decision_bench/BernoulliBandit-v0", num_envs=2, num_actions=3, max_episode_steps=3)
    )
    venv.reset(seed=0)
    total = np.zeros(2)
    for _ in range(3):
        _, reward, _, truncated, info = venv.step(np.array([0, 1]))
        total += reward
    assert truncated.all()
    np.testing.assert_array_equal(info["episode"]["l"], [3, 3])
    np.testing.assert_allclose(info["episode"]["r"], total)


# --- reset info: the optimum of the shown action set (issue 36) ----------------------


@pytest.mark.parametrize("env_id", decision_bench.ENV_IDS)
def test_reset_info_holds_the_optimum_the_first_step_reports(env_id):
    env = gym.make(env_id, **SMALL[env_id])
    for seed in (4, None):  # a seeded reset, then a reset of a fresh environment
        _, reset_info = env.reset(seed=seed)
        assert set(reset_info) == {"optimal_action", "optimal_expected_reward"}
        assert type(reset_info["optimal_action"]) is int and type(reset_info["optimal_expected_reward"]) is float
        step_info = env.step(0)[4]
        assert reset_info["optimal_action"] == step_info["optimal_action"]
        # the same float32 computation, compiled in two programs: equal up to rounding
        assert reset_info["optimal_expected_reward"] == pytest.approx(step_info["optimal_expected_reward"], rel=1e-6)


def test_bernoulli_reset_optimum_is_the_best_coin():
    env = gym.make("decision_bench/BernoulliBandit-v0", num_actions=6)
    _, info = env.reset(seed=2)
    p = np.asarray(env.unwrapped.env_params.model["p"])
    assert info["optimal_action"] == int(np.argmax(p))
    assert info["optimal_expected_reward"] == pytest.approx(float(p.max()))


def test_classification_reset_optimum_is_the_shown_examples_label():
    env = gym.make("decision_bench/ClassificationBandit-v0", dataset="digits")
    _, info = env.reset(seed=5)
    assert info["optimal_action"] == int(env.unwrapped._state.label)
    assert info["optimal_expected_reward"] == 1.0


def test_vector_reset_and_autoreset_report_the_optimum_the_next_step_reports():
    env_id = "decision_bench/LinearBandit-v0"
    venv = gym.make_vec(env_id, num_envs=2, max_episode_steps=1, **SMALL[env_id])
    _, info = venv.reset(seed=[3, 4])
    assert info["_optimal_action"].all() and info["_optimal_expected_reward"].all()
    step = venv.step(np.array([0, 1]))[4]  # both copies truncate here
    np.testing.assert_array_equal(step["optimal_action"], info["optimal_action"])
    np.testing.assert_allclose(step["optimal_expected_reward"], info["optimal_expected_reward"], rtol=1e-6)
    autoreset = venv.step(np.array([0, 1]))[4]  # both reset: only a reset's keys are valid
    assert not autoreset["_regret"].any() and not autoreset["_expected_reward"].any()
    assert autoreset["_optimal_action"].all() and autoreset["_optimal_expected_reward"].all()
    following = venv.step(np.array([0, 1]))[4]
    np.testing.assert_array_equal(following["optimal_action"], autoreset["optimal_action"])
    np.testing.assert_allclose(
        following["optimal_expected_reward"], autoreset["optimal_expected_reward"], rtol=1e-6
    )
