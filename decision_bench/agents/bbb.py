"""Bayes by Backprop (Blundell et al., 2015; paper 000, App. C.4).

A mean-field Gaussian posterior over every weight and bias of a ReLU MLP:
w = mu + softplus(rho) * eps, eps ~ N(0, I) (reparameterised). The prior is a
scale mixture of two zero-mean Gaussians,
p(w) = pi * N(0, sigma_1^2) + (1 - pi) * N(0, sigma_2^2).

Loss per step (averaged over ``num_index_samples`` weight draws):

    mean cross-entropy of the batch + kl_weight(num_seen) * KL(q || p)

KL weight (the one time-scaled regulariser, ``regularization.decayed_weight``
with base ``kl_scale``):

- ``"testbed"``: kl_scale * d * sqrt(beta) / T. This is the reference's
  "adaptive" ELBO: KL / T (per-example ELBO) times the complexity-to-likelihood
  ratio d * sqrt(beta) swept in App. C.4 and chosen as its default.
- ``"sequential"``: kl_scale * 2 * sqrt(beta) / t, as in the issue and
  testbed_facts.md. (Paper 000 App. E.2 prints "scale the prior term by 1/t";
  we keep the 2 * sqrt(beta) factor so bbb decays like the L2 agents.)

KL estimator (``kl_method``): "analytical" uses the closed-form KL to a single
Gaussian and is only valid when the prior is one Gaussian (mixture weight 0 or
1); "sample" is Blundell's one-sample estimate log q(w) - log p(w) at the drawn
weights, valid for any mixture; "auto" (default) picks analytical when it is
exact, else sample. The paper default mixture 1.0 makes the prior N(0, 1), so
the default is the exact KL, as in the reference.

``sample_logits`` draws ONE weight sample and applies it to all inputs.

Traced (agents/core.py): the learning rate, both prior sigmas, the mixture
weight, the KL scale and the problem's temperature. Static: hidden sizes, number
of classes, input dimension, regularisation mode, number of index samples, and
the form of the KL, i.e. analytical or sampled and which prior components are
present (mixture weight exactly 1, exactly 0, or in between); num_steps sets
only the length of ``fit``'s loop. So another mixture weight strictly between 0
and 1 reuses the program, while moving it to or from exactly 0 or 1 changes the
computation and builds another one.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from decision_bench._src.validation import check_choice, check_nonnegative, check_positive
from decision_bench.agents._src.checks import at_least, check_config, unit_interval
from decision_bench.agents._src.losses import mean_cross_entropy
from decision_bench.agents._src.networks import relu_mlp
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.entry import AgentEntry
from decision_bench.priors import init_mlp_layers
from decision_bench.specs import ProblemSpec

KL_METHODS = ("auto", "analytical", "sample")

# Which components of the prior mixture are present (static): only the first
# (mixture weight 1), only the second (0), or both.
PRIOR_FORMS = ("first", "second", "mixture")

# Initial posterior std of every weight. Small, so the first steps behave like
# training a plain MLP; the KL term then widens sigma where the data allow.
_INIT_SIGMA = 0.01


@dataclasses.dataclass(frozen=True)
class BBBConfig:
    """bbb defaults (paper 000, App. C.4; testbed_facts.md)."""

    hidden_sizes: tuple[int, ...] = (50, 50)
    learning_rate: float = core.traced(3e-3)  # Adam
    num_steps: int = 1000
    sigma_1: float = core.traced(1.0)  # std of the first prior component
    sigma_2: float = core.traced(0.75)  # std of the second prior component
    mixture_weight: float = core.traced(1.0)  # pi: probability of the first component
    num_index_samples: int = 8  # weight draws averaged per gradient step
    kl_scale: float = core.traced(1.0)  # base of the decayed KL weight
    kl_method: str = "auto"  # "auto" | "analytical" | "sample"

    def __post_init__(self):
        check_config(
            self,
            sigma_1=check_positive,
            sigma_2=check_positive,
            mixture_weight=unit_interval,
            num_index_samples=at_least(1),
            kl_scale=check_nonnegative,
        )
        check_choice("kl_method", self.kl_method, KL_METHODS)
        if self.kl_method == "analytical" and self.mixture_weight not in (0.0, 1.0):
            raise ValueError(
                "kl_method='analytical' needs a single-Gaussian prior (mixture_weight 0 or 1), "
                f"got mixture_weight={self.mixture_weight!r}; use kl_method='sample' or 'auto'"
            )

    @property
    def analytical_kl(self) -> bool:
        return self.kl_method == "analytical" or (
            self.kl_method == "auto" and self.mixture_weight in (0.0, 1.0)
        )

    @property
    def prior_form(self) -> str:
        """"first", "second" or "mixture": the prior components present (static)."""
        return prior_form(self.mixture_weight)

    @property
    def unused_traced(self) -> tuple[str, ...]:
        """The traced hyperparameters this setting's prior form never reads: the
        other component's sigma and the mixture weight when pi is exactly 0 or 1."""
        return {"first": ("sigma_2", "mixture_weight"), "second": ("sigma_1", "mixture_weight")}.get(
            self.prior_form, ()
        )


class BBBParams(NamedTuple):
    mu: tuple  # layers {"w": [in, out], "b": [out]}: posterior means
    rho: tuple  # same structure: posterior std = softplus(rho)


class BBBState(NamedTuple):
    params: BBBParams
    opt_state: Any  # optax.adam state


class BBBHyper(NamedTuple):
    """The traced hyperparameters of BBBConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    learning_rate: jax.Array
    sigma_1: jax.Array
    sigma_2: jax.Array
    mixture_weight: jax.Array
    kl_scale: jax.Array
    temperature: jax.Array


def prior_form(mixture_weight: float) -> str:
    """The static form of the prior for a (concrete) mixture weight."""
    if mixture_weight == 1.0:
        return "first"
    if mixture_weight == 0.0:
        return "second"
    return "mixture"


def kl_weight(spec: ProblemSpec, config: BBBConfig, num_seen: jax.Array) -> jax.Array:
    """Weight of KL(q || p) in the per-example loss after num_seen observations. Returns []."""
    return core.config_weight(core.penalty_weight, spec, config, num_seen, base="kl_scale")


def _sigma(rho: jax.Array) -> jax.Array:
    return jax.nn.softplus(rho)


def sample_weights(params: BBBParams, key: jax.Array) -> tuple:
    """One reparameterised draw of all layers: mu + softplus(rho) * eps."""
    # One normal draw of the flat size, unravelled: a single random-bits call
    # compiles much faster than one per leaf.
    flat_mu, unravel = ravel_pytree(params.mu)
    eps = unravel(jax.random.normal(key, flat_mu.shape, flat_mu.dtype))
    return jax.tree.map(lambda m, r, e: m + _sigma(r) * e, params.mu, params.rho, eps)


def _log_normal(w: jax.Array, std: float | jax.Array) -> jax.Array:
    return -0.5 * jnp.square(w / std) - jnp.log(std) - 0.5 * math.log(2.0 * math.pi)


def _log_prior_normal(w: jax.Array, std: float | jax.Array) -> jax.Array:
    """_log_normal for a prior std, which may be a traced hyperparameter. It
    multiplies by 1 / std as XLA compiles a division by a constant std, so the
    numbers are those of the std compiled in."""
    return -0.5 * jnp.square(w * (1.0 / std)) - jnp.log(std) - 0.5 * math.log(2.0 * math.pi)


def analytical_kl(params: BBBParams, prior_std: float | jax.Array) -> jax.Array:
    """KL(N(mu, sigma^2) || N(0, prior_std^2)) summed over all weights. Returns []."""

    def leaf_kl(mu, rho):
        var = jnp.square(_sigma(rho))
        log_ratio = jnp.log(prior_std) - 0.5 * jnp.log(var)
        # times 1 / (2 s^2) rather than over 2 s^2: how XLA compiles a division by a
        # constant, so a traced prior_std gives the numbers of one compiled in
        return jnp.sum(log_ratio + (var + jnp.square(mu)) * (1.0 / (2 * prior_std**2)) - 0.5)

    return sum(jax.tree.leaves(jax.tree.map(leaf_kl, params.mu, params.rho)))


def sampled_kl(
    params: BBBParams, weights: tuple, prior: BBBConfig | BBBHyper, form: str | None = None
) -> jax.Array:
    """One-sample estimate log q(w) - log p(w) at drawn weights w, summed. Returns [].

    prior: anything with ``sigma_1``, ``sigma_2`` and ``mixture_weight`` (a
    BBBConfig, or a BBBHyper whose leaves may be traced). form: the static prior
    form (``PRIOR_FORMS``); None derives it from a concrete mixture weight.
    """
    if form is None:
        form = prior_form(float(prior.mixture_weight))

    def log_prior(w):
        # log(pi N(w; 0, s1^2) + (1 - pi) N(w; 0, s2^2)); pi in {0, 1} drops a term
        # exactly instead of taking log(0).
        if form == "first":
            return _log_prior_normal(w, prior.sigma_1)
        if form == "second":
            return _log_prior_normal(w, prior.sigma_2)
        pi = prior.mixture_weight
        return jnp.logaddexp(
            jnp.log(pi) + _log_prior_normal(w, prior.sigma_1),
            jnp.log1p(-pi) + _log_prior_normal(w, prior.sigma_2),
        )

    def leaf(w, mu, rho):
        return jnp.sum(_log_normal(w - mu, _sigma(rho)) - log_prior(w))

    return sum(jax.tree.leaves(jax.tree.map(leaf, weights, params.mu, params.rho)))


@core.cached_functions
def _functions(
    *,
    hidden_sizes: tuple[int, ...],
    num_classes: int,
    input_dim: int,
    regularization: str,
    num_index_samples: int,
    kl_method: str,
    analytical: bool,
    form: str,
):
    """bbb's functions for one static setting (analytical and form are what
    kl_method and the mixture weight decide)."""
    del kl_method
    sizes = (input_dim, *hidden_sizes, num_classes)
    init_rho = math.log(math.expm1(_INIT_SIGMA))  # softplus^{-1}(_INIT_SIGMA)

    def init(hyper: Any, key: jax.Array) -> BBBState:
        mu = init_mlp_layers(key, sizes)
        rho = jax.tree.map(lambda m: jnp.full_like(m, init_rho), mu)
        params = BBBParams(mu=mu, rho=rho)
        return BBBState(params=params, opt_state=core.init_optimizer(hyper, params))

    def one_sample_loss(
        params: BBBParams, key: jax.Array, hyper: Any, batch: Batch, weight: jax.Array
    ) -> jax.Array:
        weights = sample_weights(params, key)
        data_loss = mean_cross_entropy(relu_mlp(weights, batch.x), batch.y)
        if analytical:
            prior_std = hyper.sigma_1 if form == "first" else hyper.sigma_2
            kl = analytical_kl(params, prior_std)
        else:
            kl = sampled_kl(params, weights, hyper, form)
        return data_loss + weight * kl

    def loss(params: BBBParams, hyper: Any, state: BBBState, batch: Batch, key: jax.Array) -> jax.Array:
        """The key draws the num_index_samples weight samples."""
        del state
        weight = core.penalty_weight(
            hyper, batch.num_seen, input_dim=input_dim, mode=regularization, base="kl_scale"
        )
        keys = jax.random.split(key, num_index_samples)
        losses = jax.vmap(one_sample_loss, (None, 0, None, None, None))(
            params, keys, hyper, batch, weight
        )
        return losses.mean()

    def sample_logits(hyper: Any, key: jax.Array, state: BBBState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]: one weight draw shared by all n inputs."""
        del hyper
        return relu_mlp(sample_weights(state.params, key), x)

    return init, core.sgd_update(loss), sample_logits


def make_bbb(spec: ProblemSpec, config: BBBConfig = BBBConfig()) -> Agent:
    """Bayes by Backprop agent for ``spec``. See the module docstring for the loss."""
    return core.make_agent(
        _functions, spec, config, name="bbb", analytical=config.analytical_kl, form=config.prior_form
    )


ENTRIES = (AgentEntry("bbb", BBBConfig, make_bbb, colour="#9467bd", core=3),)
