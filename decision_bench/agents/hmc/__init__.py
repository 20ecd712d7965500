"""Full-batch Hamiltonian Monte Carlo on the problem's own prior (blackjax): the
reference posterior the other agents approximate.

The agent's model is the generative model of the environment family itself
(decision_bench/priors.py), so with exact inference its predictive distribution
is the Bayes posterior predictive and no agent has a lower expected d_KL:

- ``prior="mlp"`` (default): ``MLPPrior(input_dim, hidden_sizes, activation,
  num_classes)`` at the problem's temperature. Weights w = z / sqrt(fan_in), z ~
  N(0, 1) truncated to [-2, 2]; the first layer's bias b ~ N(0, 1 / input_dim);
  every other bias is 0 under the prior and not a variable.
- ``prior="logistic"``: ``LogisticPrior``, phi ~ N(0, I_d) (two classes).

Modules:

- ``coordinates``: the bijection between the prior's params and the
  unconstrained vector HMC moves (truncation by a tanh map, with its Jacobian);
- ``sampler``: the vmapped chains (window adaptation, jittered step sizes, HMC or
  NUTS) and their R-hat and bulk ESS;
- ``diagnostics``: ``HMCDiagnostics`` and the checks ``diagnostics_pass``
  (jittable, stacked states) and ``diagnostic_problems`` (host-side, one line
  per failed check);
- ``agent``: ``HMCConfig``, the registered agent (``make_hmc``) and
  ``hmc_posterior(key, prior, data, config)``, the same chains on a data set for
  a prior instance.

blackjax is an optional dependency (``pip install 'decision-bench[bayes]'``):
the package imports without it, and ``make_hmc`` / ``hmc_posterior`` raise an
ImportError naming the extra when it is missing. Run times and mixing figures
are in bench/hmc.py, with the command that measures them.
"""

from decision_bench.agents.hmc.agent import (
    HMCConfig,
    HMCPosterior,
    HMCState,
    hmc_posterior,
    hyperparameters,
    make_hmc,
)
from decision_bench.agents.hmc.coordinates import PRIOR_FAMILIES
from decision_bench.agents.hmc.diagnostics import (
    MAX_DIVERGENT_FRACTION,
    MAX_RHAT,
    MIN_ESS,
    HMCDiagnostics,
    diagnostic_problems,
    diagnostics_pass,
)
from decision_bench.agents.hmc.sampler import ALGORITHMS, HMCHyper

__all__ = [
    "ALGORITHMS",
    "MAX_DIVERGENT_FRACTION",
    "MAX_RHAT",
    "MIN_ESS",
    "PRIOR_FAMILIES",
    "HMCConfig",
    "HMCDiagnostics",
    "HMCHyper",
    "HMCPosterior",
    "HMCState",
    "diagnostic_problems",
    "diagnostics_pass",
    "hmc_posterior",
    "hyperparameters",
    "make_hmc",
]
