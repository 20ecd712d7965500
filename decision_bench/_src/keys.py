"""Every PRNG purpose tag of the package, in one place.

Under ``jax_threefry_partitionable`` (JAX's default since 0.5) ``split(key, n)[i]``
equals ``fold_in(key, i)``, so two modules that each "split" and "fold in small
tags" silently share streams: a fit key ``fold_in(key(s), 1)`` would be the
training data key ``split(key(s))[1]``, and the agent's initialisation and batch
keys would be the keys that drew its training inputs and labels. Keeping every
tag of one key here makes such a collision visible.

The key tree of one testbed problem (seed s, input_dim d, num_train T, temperature beta):

    problem = problem_key(s, d, T, beta)
      fold_in(problem, ENV_TAG)   -> environment params (prior.init)
      fold_in(problem, DATA_TAG)  -> training data (inputs, then labels)
      fold_in(problem, FIT_TAG)   -> the agent's fit (init, shuffles, updates)
      fold_in(problem, EVAL_TAG)  -> test tau-samples, model draws, accuracy inputs
      fold_in(problem, REFERENCE_FIT_TAG) -> a reference agent's fit (runner --reference)

        fold_in(eval, DESIGN_TAG) -> fold_in(., i): test design i (evaluation/runner.py)
          fold_in(., TEST_TAG)  -> test tau-samples   (evaluation/kl.py)
          fold_in(., MODEL_TAG) -> model draws
        fold_in(eval, CLASSIFICATION_KEY_TAG) -> accuracy and ECE
          fold_in(., CLASSIFICATION_TAG) -> their test inputs and labels
        fold_in(eval, FIDELITY_TAG) -> fold_in(., i): fidelity to a reference (evaluation/fidelity.py)
          fold_in(., TEST_TAG)  -> test inputs
          fold_in(., MODEL_TAG) -> the agent's model draws
          fold_in(., REFERENCE_MODEL_TAG) -> the reference's model draws
          fold_in(., LABEL_TAG) -> sampled label vectors (when not enumerated)

The test design (tau, kappa) does not enter the problem key: the reference shares
one environment and one training set between tau = 1 and tau = 10 of the same
(T, beta, seed), and so do we (one fitted agent is scored on every design).

The bandit (``decision_bench.bandit``; see its docstring for the whole chain): for seed s,
``fold_in(key(s), BANDIT_AGENT_TAG)`` is the agent's stream (the large tag keeps it
off the environment's ``split(key(s), 3)``), under which BANDIT_INIT_TAG,
BANDIT_ACT_TAG and BANDIT_LEARN_TAG separate initialisation, action draws and
learning. Real data (evaluation/realdata.py, data/datasets.py): REALDATA_FIT_TAG and
REALDATA_EVAL_TAG under a problem's key; NLL_TAG and ACCURACY_TAG under its
evaluation key; SPLIT_TAG and SUBSAMPLE_TAG for the host generators of splits.
"""

from __future__ import annotations

import jax
import numpy as np

ENV_TAG = 0
DATA_TAG = 1
FIT_TAG = 2
EVAL_TAG = 3
REFERENCE_FIT_TAG = 4

# Under the evaluation key of a testbed problem.
DESIGN_TAG = 0
CLASSIFICATION_KEY_TAG = 1
FIDELITY_TAG = 2
# Under one design's (or one estimate's) key.
TEST_TAG = 0
MODEL_TAG = 1
CLASSIFICATION_TAG = 2
REFERENCE_MODEL_TAG = 3
LABEL_TAG = 4

# The bandit's agent stream and its purposes.
BANDIT_AGENT_TAG = 1001
BANDIT_INIT_TAG = 0
BANDIT_ACT_TAG = 1
BANDIT_LEARN_TAG = 2

# Real data sets.
REALDATA_FIT_TAG = 1
REALDATA_EVAL_TAG = 2
NLL_TAG = 0
ACCURACY_TAG = 1
SPLIT_TAG = 0
SUBSAMPLE_TAG = 1


def problem_key(seed: int, input_dim: int, num_train: int, temperature: float) -> jax.Array:
    """The root key of testbed problem (seed, input_dim, num_train, temperature).

    Every setting of a sweep gets its own environment, as in the reference
    implementation (whose 2-D sweep draws a new environment for each (T, beta,
    seed index)): with one environment per seed shared across settings, the
    settings' errors are correlated and a sweep with n seeds tests only n
    environments. The temperature enters by its float32 bit pattern, so equal
    settings give equal keys in any sweep.
    """
    beta_bits = int(np.float32(temperature).view(np.uint32))
    key = jax.random.key(int(seed))
    for value in (int(input_dim), int(num_train), beta_bits):
        key = jax.random.fold_in(key, value)
    return key
