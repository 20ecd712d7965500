"""Paper 001, Sec. 3, Fig. 2: logistic regression at d = 100, tau = 10.

Agents (paper 001, Sec. 3.1): uniform, marginal and prior, with no training
data. "Separates" means a factor of 2 between an agent's d_KL and the prior
agent's (the separation criterion of paper 001, Sec. 3.2); "cannot separate"
means the ratio is within a factor of 1.5. See scripts/logistic_dyadic_table.py
for the full table; temperature 1 (logits phi . x / beta).
"""

from __future__ import annotations


import jax
import pytest

from decision_bench.envs.testbed import make_testbed_problem
from decision_bench.evaluation import estimate_kl



@pytest.mark.slow
def test_only_dyadic_sampling_separates_the_prior_agent(load_script):
    agents = load_script("logistic_dyadic_table").logistic_agents(1.0)
    kl = {}
    for design, kappa in {"iid": None, "monadic": 1, "dyadic": 2}.items():
        problem = make_testbed_problem("logistic", 100, 0, 1.0, tau=10, kappa=kappa, seed=0)
        for name, sampler in agents.items():
            kl[design, name] = estimate_kl(sampler, problem, jax.random.key(1), 1000, 1000).kl
    ratio = {key: value / kl[key[0], "prior"] for key, value in kl.items()}
    assert 1 / 1.5 < ratio["iid", "uniform"] < 1.5  # iid: prior ~ uniform
    assert 1 / 1.5 < ratio["monadic", "marginal"] < 1.5  # monadic: prior ~ marginal
    assert ratio["dyadic", "uniform"] > 2 and ratio["dyadic", "marginal"] > 2
