"""Agents on real classification data: NLL of marginal and joint predictions (paper 001, Sec. 5).

There is no true environment for a fixed data set, so an agent is scored by the
negative log-likelihood of test tau-samples (paper 001 App. D: the "low
temperature limit" of d_KL, where test labels have probability 1):
``evaluate_nll(sampler, problem, key)``, and by ``evaluate_accuracy``.

``run_realdata(agent_names, datasets, num_train, seeds, designs)`` fits every
agent on every (data set, training set size T, seed) problem of
``decision_bench.data.make_dataset_problem`` and scores the fit on every
test design (tau, kappa) by NLL (``evaluate_nll``), plus the accuracy of the
mean prediction on the whole test split. One fit serves all designs (the agent
cannot see tau).

The named sweeps:

- ``realdata_sweep()`` (the testbed's ``--sweep realdata``): iris, wine,
  breast_cancer, digits; T in {10, 100, full}; designs (tau 1) and (tau 10,
  kappa 2); 5 seeds. A T larger than a data set's training split is skipped
  (wine's split has 142 examples, so all three apply everywhere here).
- ``decision_bench.bandit.realdata``: the same four data sets as
  ClassificationBandit-v0 environments.

Keys. Problem seed s uses ``make_dataset_problem(..., seed=s)``; its fit key is
``fold_in(key(s), FIT_TAG)`` and design i is scored with
``fold_in(fold_in(key(s), EVAL_TAG), i)``; accuracy with
``fold_in(key(s), EVAL_TAG)``. So any row can be recomputed on its own.

Timing: fit_seconds is the fit's wall time divided over the designs it serves
(so a column's sum is the time spent); it includes compilation for the first
seed of each (agent, data set, T), as the same agent record is reused across
seeds and compiled once. eval_seconds is per design.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import jax
import jax.numpy as jnp
import pandas as pd
from tqdm.auto import tqdm

from decision_bench._src.keys import ACCURACY_TAG, NLL_TAG
from decision_bench._src.keys import REALDATA_EVAL_TAG as EVAL_TAG
from decision_bench._src.keys import REALDATA_FIT_TAG as FIT_TAG
from decision_bench._src.validation import check_choice, check_int, check_optional_int, check_seed_list
from decision_bench._src.versions import environment_info
from decision_bench.agents import Agent, fit, make, names
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.data import (
    BUNDLED,
    PAPER_DATASETS,
    DatasetProblem,
    load_dataset,
    make_dataset_problem,
)
from decision_bench.evaluation.kl import (
    DEFAULT_MAX_ROWS,
    METHODS,
    FittedAgent,
    NLLResult,
    NonFiniteEstimateError,
    Sampler,
    split_sampler,
    estimate_nll,
    model_set,
    resolve_method,
)

COLUMNS = (
    "agent",
    "dataset",
    "num_train",
    "tau",
    "kappa",
    "seed",
    "nll",
    "nll_stderr",
    "accuracy",
    "fraction_finite",
    "fit_seconds",
    "eval_seconds",
)

DEFAULT_DATASETS = PAPER_DATASETS
DEFAULT_NUM_TRAIN = (10, 100, None)
DEFAULT_DESIGNS = ((1, None), (10, 2))


@dataclasses.dataclass(frozen=True)
class RealDataSweep:
    """Data sets x training sizes (None: the full training split) x designs, with seeds."""

    name: str
    datasets: tuple[str, ...]
    num_train: tuple[int | None, ...]
    designs: tuple[tuple[int, int | None], ...]
    num_seeds: int

    def __post_init__(self):
        for d in self.datasets:
            check_choice("datasets", d, BUNDLED)
        for t in self.num_train:
            check_optional_int("num_train", t, 1)
        for tau, kappa in self.designs:
            check_int("tau", tau, 1)
            check_optional_int("kappa", kappa, 1)
        check_int("num_seeds", self.num_seeds, 1)


def realdata_sweep() -> RealDataSweep:
    """The testbed's ``realdata`` sweep (paper 001 Sec. 5 on scikit-learn's bundled data)."""
    return RealDataSweep("realdata", DEFAULT_DATASETS, DEFAULT_NUM_TRAIN, DEFAULT_DESIGNS, num_seeds=5)


def _agent_list(agent_names: Any) -> dict[str, Callable[..., Agent] | None]:
    if isinstance(agent_names, Mapping):
        items = dict(agent_names)
    else:
        listed = agent_names.split(",") if isinstance(agent_names, str) else list(agent_names)
        items = dict.fromkeys(n.strip() for n in listed if n.strip())
    if not items:
        raise ValueError(f"agent_names must name at least one agent, got {agent_names!r}")
    for name, factory in items.items():
        if factory is None:
            check_choice("agent_names", name, names())
            check_inputs_fit(name, "a real data set", one_hot=False)
        elif not callable(factory):
            raise ValueError(f"agent_names[{name!r}] must be None or make_agent(spec, **overrides)")
    return items


def run_realdata(
    agent_names: str | Sequence[str] | Mapping[str, Callable[..., Agent] | None],
    datasets: Sequence[Any] = DEFAULT_DATASETS,
    num_train: Sequence[int | None] = DEFAULT_NUM_TRAIN,
    seeds: int | Iterable[int] = 5,
    designs: Sequence[tuple[int, int | None]] = DEFAULT_DESIGNS,
    *,
    split: str = "canonical",
    num_test: int = 1000,
    num_models: int = 100,
    method: str = "auto",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    fit_steps: int | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Fits agents on real-data problems and scores NLL per design; one row per
    (agent, dataset, num_train, tau, kappa, seed).

    agent_names: registry names ("mlp,logistic" or a list) or {name: None or
    make_agent(spec, **overrides)}; datasets: bundled names, file paths or
    arrays (as ``load_dataset``); num_train: training sizes, None for the full
    split (sizes above a data set's split are skipped); seeds: a count or
    distinct seeds; designs: (tau, kappa) pairs; split: "canonical" or "seeded";
    num_test, num_models, method: as ``evaluate_nll``; overrides: {agent:
    {hyperparameter: value}}; fit_steps: SGD steps (None: the agent's default).

    Columns: COLUMNS. num_train holds the actual T (the full split's size for
    None). ``df.attrs`` holds "versions", "seeds" and "split". nll is NaN when fewer than half the tau-samples had a finite
    likelihood (fraction_finite says how many did), never a silent average.
    """
    agents = _agent_list(agent_names)
    seed_values = check_seed_list(seeds)
    sizes = tuple(check_optional_int("num_train", t, 1) for t in num_train)
    design_list = tuple((check_int("tau", tau, 1), check_optional_int("kappa", kappa, 1)) for tau, kappa in designs)
    if not sizes or not design_list:
        raise ValueError("num_train and designs must each hold at least one entry")
    num_test = check_int("num_test", num_test, 1)
    num_models = check_int("num_models", num_models, 1)
    check_choice("method", method, METHODS)
    fit_steps = check_optional_int("fit_steps", fit_steps, 0)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(agents))
    if unknown:
        raise ValueError(f"overrides name agents that are not run: {unknown}; agents are {list(agents)}")
    data_list = [load_dataset(d) for d in datasets]
    if not data_list:
        raise ValueError("datasets must name at least one data set")

    groups = [(a, data, t) for a in agents for data in data_list for t in sizes]
    rows: list[dict[str, Any]] = []
    bar = tqdm(groups, desc="realdata", unit="setting", disable=not progress)
    for agent_name, data, size in bar:
        bar.set_postfix_str(f"{agent_name} {data.name} T={'full' if size is None else size}")
        # The training split's size does not depend on the seed (the split is stratified).
        available = make_dataset_problem(data, None, 1, None, seed_values[0], split=split).spec.num_train
        if size is not None and size > available:
            continue  # T above this data set's training split: not a setting of it
        # One problem per seed; the spec (and so the agent record) is the same for all seeds.
        problems = [make_dataset_problem(data, size, 1, None, s, split=split) for s in seed_values]
        spec = problems[0].spec
        factory = agents[agent_name]
        agent_overrides = overrides.get(agent_name, {})
        agent = make(agent_name, spec, **agent_overrides) if factory is None else factory(spec, **agent_overrides)
        for seed, problem in zip(seed_values, problems):
            root = jax.random.key(seed)
            start = time.perf_counter()
            state = jax.block_until_ready(
                fit(agent, jax.random.fold_in(root, FIT_TAG), problem.train_data, spec, fit_steps)
            )
            fit_s = time.perf_counter() - start
            fitted = FittedAgent(agent, state)
            eval_key = jax.random.fold_in(root, EVAL_TAG)
            acc = evaluate_accuracy(fitted, problem, eval_key, num_models, method)
            for i, (tau, kappa) in enumerate(design_list):
                design_problem = dataclasses.replace(
                    problem, spec=dataclasses.replace(spec, tau=tau, kappa=kappa)
                )
                start = time.perf_counter()
                try:
                    result = evaluate_nll(
                        fitted, design_problem, jax.random.fold_in(eval_key, i), num_test, num_models, method
                    )
                    nll, stderr, fraction = result.nll, result.nll_stderr, result.fraction_finite
                except NonFiniteEstimateError:
                    # Recorded, not averaged: the row says the estimate failed.
                    nll, stderr, fraction = float("nan"), float("nan"), float("nan")
                eval_s = time.perf_counter() - start
                rows.append(
                    {
                        "agent": agent_name,
                        "dataset": data.name,
                        "num_train": spec.num_train,
                        "tau": tau,
                        "kappa": kappa,
                        "seed": seed,
                        "nll": nll,
                        "nll_stderr": stderr,
                        "accuracy": acc,
                        "fraction_finite": fraction,
                        "fit_seconds": fit_s / len(design_list),
                        "eval_seconds": eval_s,
                    }
                )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["kappa"] = frame["kappa"].astype("Int64")
    frame.attrs["versions"] = environment_info()
    frame.attrs["seeds"] = list(seed_values)
    frame.attrs["split"] = split
    return frame


def evaluate_nll(
    sampler: Sampler,
    problem: DatasetProblem,
    key: jax.Array,
    num_test: int = 1000,
    num_models: int = 1000,
    method: str = "auto",
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> NLLResult:
    """Joint NLL of num_test test tau-samples (tau, kappa from problem.spec).

    sampler: FittedAgent(agent, state) or a callable (key, x[n, d]) -> logits
    [n, C]; key: the evaluation key (the tau-samples use fold_in(key, NLL_TAG),
    the model draws estimate_nll's own stream under it). Returns estimate_nll's
    NLLResult: nll = mean over tau-samples of -log p_hat(y_1..tau | x_1..tau).
    """
    if not isinstance(problem, DatasetProblem):
        raise ValueError(f"problem must be a DatasetProblem, got {type(problem).__name__}")
    tests = problem.sample_tests(jax.random.fold_in(key, NLL_TAG), num_test)
    return estimate_nll(sampler, tests.x, tests.y, key, num_models, method, max_rows=max_rows)


def evaluate_accuracy(
    sampler: Sampler, problem: DatasetProblem, key: jax.Array, num_models: int = 100, method: str = "auto"
) -> float:
    """Share of the whole test split where the argmax of the mean predictive
    probabilities (over num_models draws, or all members for "exact") is the label."""
    num_models = check_int("num_models", num_models, 1)
    resolved = resolve_method(sampler, method)
    if resolved == "partition":
        resolved = "monte_carlo"  # accuracy needs mean probabilities, not a partition
    source, state = split_sampler(sampler)
    x, y = problem.test_data
    return float(
        _mean_prediction_accuracy(
            source, state, jax.random.fold_in(key, ACCURACY_TAG), x, y, method=resolved, num_models=num_models
        )
    )


# The source is a pytree (evaluation/kl.py's split_sampler): one compile per agent family and shape.
@functools.partial(jax.jit, static_argnames=("method", "num_models"))
def _mean_prediction_accuracy(
    source: Any, state: Any, key: jax.Array, x: jax.Array, y: jax.Array, *, method: str, num_models: int
) -> jax.Array:
    """[] f32: share of x [n, d] whose mean prediction's argmax is y [n]."""
    models, _ = model_set(source, state, method, num_models, x.shape[-1])
    probs = jnp.mean(jax.nn.softmax(models(key, x), axis=-1), axis=0)  # [n, C]
    return jnp.mean(jnp.argmax(probs, axis=-1) == y)
