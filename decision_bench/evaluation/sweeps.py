"""The named testbed sweeps: frozen data, built by functions (never at import).

A sweep is a tuple of ``TestbedSetting``s (one environment family and training
set size each, fitted once per seed) and the test designs (tau, kappa) every
fitted agent is evaluated on.

- ``paper2d``: paper 000's 2-D sweep: T in {1, 3, 10, 30, 100, 300, 1000},
  beta in {0.01, 0.1, 0.5}, tau in {1, 10} iid, 10 seeds (21 settings, 420
  problem rows per agent).
- ``highdim``: paper 001's sweep: d in {2, 10, 100}, T = lambda * d with
  lambda in {1, 10, 100, 1000}, beta in {0.01, 0.1, 0.5}; tau 1, tau 10 iid
  and tau 10 with kappa 2 (dyadic); 5 seeds.
- ``standard``: d = 2, T in {1, 10, 100, 1000}, beta in {0.01, 0.1, 0.5}; tau 1,
  tau 10 iid and tau 10 dyadic; 5 seeds (the ``standard`` preset's testbed).
- ``quick``: d = 2, T in {10, 100}, beta = 0.1, tau 1 and tau 10 (iid and
  dyadic), 3 seeds: a few minutes on 2 cores, for demos and tests.

Robustness across generative models (paper 000, Sec. 6, Figs. 10 and 11): the
same agents on random-MLP priors of other activations and widths. A setting's
*family* is its (activation, hidden_sizes); the default family relu (50, 50) is
the testbed's own prior. ``robustness_activation`` and ``robustness_width`` run
every family on one slice of ``paper2d``'s settings, fixed before any result was
seen: d = 2, T in {10, 100, 1000}, beta in {0.01, 0.1, 0.5}; designs tau 1, tau
10 iid and tau 10 dyadic (kappa 2); 5 seeds. Settings are ordered family, then
beta, then T.

- ``robustness_activation``: activations tanh, swish, sigmoid, selu, relu,
  leaky_relu, gelu, each with hidden sizes (50, 50) (7 families x 9 settings).
- ``robustness_width``: relu with two hidden layers of width 5, 10, 20, 50 and
  100 (5 families x 9 settings).
- ``robustness_quick``: a small slice meant for the quick preset (< 45 minutes
  on 2 cores): relu, tanh, sigmoid and gelu at width 50 and relu at width 10
  (5 families), T in {10, 100}, beta = 0.1, the same three designs, 3 seeds.

Environments are paired across families: seed s of setting (d, T, beta) has the
problem key ``problem_key(s, d, T, beta)`` whatever the family (the family is
not part of the key). Families of equal hidden sizes thus have identical network
weights, training inputs and test inputs and differ only in the activation (and
so in the labels); families of other widths share the keys and inputs. The
default family's problems are exactly those of ``paper2d`` and ``quick``.

``custom_sweep(...)`` builds any other grid (what ``decision-bench testbed
--num-train ... --temperature ...`` runs).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from decision_bench._src.validation import (
    repeated,
    check_choice,
    check_int,
    check_optional_int,
    check_positive,
    check_sizes,
)
from decision_bench.priors import ACTIVATIONS, DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, PRIORS, Prior, make_prior


def hidden_sizes_label(hidden_sizes: Iterable[int]) -> str:
    """(50, 50) -> "50-50": the widths joined by "-" (the result rows' format)."""
    return "-".join(str(int(width)) for width in hidden_sizes)


@dataclasses.dataclass(frozen=True)
class TestDesign:
    """A test tau-sampler: tau inputs, iid (kappa None) or from kappa anchors."""

    tau: int
    kappa: int | None = None

    __test__ = False  # not a pytest class

    def __post_init__(self):
        object.__setattr__(self, "tau", check_int("tau", self.tau, 1))
        object.__setattr__(self, "kappa", check_optional_int("kappa", self.kappa, 1))


@dataclasses.dataclass(frozen=True)
class TestbedSetting:
    """One environment family and training set size: agents are fit once per seed.

    activation and hidden_sizes choose the random-MLP generative model (prior
    "mlp"; checked as ``priors.MLPPrior`` checks them: activation one of
    ``priors.ACTIVATIONS``, hidden_sizes a non-empty sequence of positive
    integers, stored as a tuple). Other priors have no such network and refuse
    values other than the defaults relu and (50, 50). They do not enter the
    problem key, so settings that differ only in them share environments' keys.
    """

    input_dim: int
    num_train: int
    temperature: float
    prior: str = "mlp"
    activation: str = DEFAULT_ACTIVATION
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES

    __test__ = False

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        object.__setattr__(self, "num_train", check_int("num_train", self.num_train, 0))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))
        check_choice("prior", self.prior, PRIORS)
        check_choice("activation", self.activation, ACTIVATIONS)
        object.__setattr__(self, "hidden_sizes", check_sizes("hidden_sizes", self.hidden_sizes))
        if self.prior != "mlp" and not self.is_default_family:
            raise ValueError(
                f"activation and hidden_sizes only apply to prior 'mlp', got prior {self.prior!r} "
                f"with activation={self.activation!r}, hidden_sizes={self.hidden_sizes!r} "
                f"(leave them at {DEFAULT_ACTIVATION!r} and {DEFAULT_HIDDEN_SIZES!r})"
            )

    @property
    def is_default_family(self) -> bool:
        """True for the testbed's own generative model: relu, hidden sizes (50, 50)."""
        return self.activation == DEFAULT_ACTIVATION and self.hidden_sizes == DEFAULT_HIDDEN_SIZES

    def build_prior(self) -> Prior:
        """The setting's prior (``priors.make_prior``), with its activation and hidden sizes."""
        if self.prior == "mlp":
            return make_prior(
                "mlp", self.input_dim, self.temperature,
                hidden_sizes=self.hidden_sizes, activation=self.activation,
            )
        return make_prior(self.prior, self.input_dim, self.temperature)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A named grid: settings x designs, with a default number of seeds."""

    name: str
    settings: tuple[TestbedSetting, ...]
    designs: tuple[TestDesign, ...]
    num_seeds: int

    @property
    def num_problems(self) -> int:
        """Rows per agent: settings x designs x seeds."""
        return len(self.settings) * len(self.designs) * self.num_seeds


def paper2d() -> Sweep:
    settings = tuple(
        TestbedSetting(input_dim=2, num_train=t, temperature=beta)
        for beta in (0.01, 0.1, 0.5)
        for t in (1, 3, 10, 30, 100, 300, 1000)
    )
    return Sweep("paper2d", settings, (TestDesign(1), TestDesign(10)), num_seeds=10)


def highdim() -> Sweep:
    settings = tuple(
        TestbedSetting(input_dim=d, num_train=lam * d, temperature=beta)
        for d in (2, 10, 100)
        for beta in (0.01, 0.1, 0.5)
        for lam in (1, 10, 100, 1000)
    )
    designs = (TestDesign(1), TestDesign(10), TestDesign(10, 2))
    return Sweep("highdim", settings, designs, num_seeds=5)


def quick() -> Sweep:
    settings = tuple(TestbedSetting(input_dim=2, num_train=t, temperature=0.1) for t in (10, 100))
    designs = (TestDesign(1), TestDesign(10), TestDesign(10, 2))
    return Sweep("quick", settings, designs, num_seeds=3)


def _distinct(name: str, values: Any, check: Callable[[str, Any], Any]) -> tuple:
    """values as a non-empty tuple, each passed through check(f"{name}[i]", value), no repeats."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = (values,)
    checked = tuple(check(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not checked:
        raise ValueError(f"{name} must list at least one value, got {values!r}")
    if repeats := repeated(checked):
        raise ValueError(f"{name} must not repeat values, got {list(checked)} (repeated: {repeats})")
    return checked


def custom_sweep(
    input_dims: Iterable[int] | int,
    num_trains: Iterable[int] | int,
    temperatures: Iterable[float] | float,
    taus: Iterable[int] | int = (1, 10),
    kappa: int | None = None,
    num_seeds: int = 5,
    name: str = "custom",
    prior: str = "mlp",
) -> Sweep:
    """A sweep over the full grid of the given values.

    Settings: every (input_dim, num_train, temperature) of the product
    input_dims x num_trains x temperatures, in that nesting order (input_dim
    outermost, temperature innermost), all with the given prior.

    Designs: first tau iid for every tau in taus (in order); then, when kappa
    is given, (tau, kappa) for every tau > 1 in taus (in order): the polyadic
    design of paper 001 (kappa = 2: dyadic). tau = 1 has no kappa design (one
    input is the same with or without anchors), so kappa needs some tau > 1.
    E.g. taus (1, 10) with kappa 2 gives (1), (10), (10, kappa 2), as ``quick``.

    Each list may also be a single value; values must not repeat. num_seeds:
    the default number of seeds (run_testbed's seeds=None).
    """
    dims = _distinct("input_dims", input_dims, lambda n, v: check_int(n, v, 1))
    trains = _distinct("num_trains", num_trains, lambda n, v: check_int(n, v, 0))
    betas = _distinct("temperatures", temperatures, check_positive)
    tau_values = _distinct("taus", taus, lambda n, v: check_int(n, v, 1))
    kappa = check_optional_int("kappa", kappa, 1)
    num_seeds = check_int("num_seeds", num_seeds, 1)
    check_choice("prior", prior, PRIORS)
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    designs = tuple(TestDesign(tau) for tau in tau_values)
    if kappa is not None:
        joint = tuple(TestDesign(tau, kappa) for tau in tau_values if tau > 1)
        if not joint:
            raise ValueError(
                f"kappa needs some tau > 1 (kappa designs are for tau > 1), got taus {list(tau_values)}"
            )
        designs += joint
    settings = tuple(
        TestbedSetting(input_dim=d, num_train=t, temperature=beta, prior=prior)
        for d in dims
        for t in trains
        for beta in betas
    )
    return Sweep(name, settings, designs, num_seeds=num_seeds)


def standard() -> Sweep:
    """A laptop-sized slice of ``paper2d`` for the ``standard`` preset: d = 2, every
    temperature, T in {1, 10, 100, 1000}, tau 1, tau 10 iid and tau 10 dyadic, 5 seeds."""
    settings = tuple(
        TestbedSetting(input_dim=2, num_train=t, temperature=beta)
        for beta in (0.01, 0.1, 0.5)
        for t in (1, 10, 100, 1000)
    )
    designs = (TestDesign(1), TestDesign(10), TestDesign(10, 2))
    return Sweep("standard", settings, designs, num_seeds=5)


# The robustness slice of paper2d (module docstring), fixed before any result.
ROBUSTNESS_NUM_TRAINS = (10, 100, 1000)
ROBUSTNESS_TEMPERATURES = (0.01, 0.1, 0.5)
ROBUSTNESS_ACTIVATIONS = ("tanh", "swish", "sigmoid", "selu", "relu", "leaky_relu", "gelu")
ROBUSTNESS_WIDTHS = (5, 10, 20, 50, 100)


def _family_sweep(
    name: str,
    families: Iterable[tuple[str, tuple[int, ...]]],
    num_trains: Iterable[int],
    temperatures: Iterable[float],
    num_seeds: int,
) -> Sweep:
    """Settings d = 2 for every family x beta x T (that nesting order); designs tau 1,
    tau 10 iid and tau 10 dyadic."""
    settings = tuple(
        TestbedSetting(
            input_dim=2, num_train=t, temperature=beta, activation=activation, hidden_sizes=sizes
        )
        for activation, sizes in families
        for beta in temperatures
        for t in num_trains
    )
    designs = (TestDesign(1), TestDesign(10), TestDesign(10, 2))
    return Sweep(name, settings, designs, num_seeds=num_seeds)


def robustness_activation() -> Sweep:
    """Paper 000 Sec. 6 across activations: tanh, swish, sigmoid, selu, relu,
    leaky_relu and gelu, hidden sizes (50, 50); d = 2, T in {10, 100, 1000}, beta in
    {0.01, 0.1, 0.5}; tau 1, tau 10 iid, tau 10 dyadic; 5 seeds (63 settings)."""
    families = tuple((activation, DEFAULT_HIDDEN_SIZES) for activation in ROBUSTNESS_ACTIVATIONS)
    return _family_sweep(
        "robustness_activation", families, ROBUSTNESS_NUM_TRAINS, ROBUSTNESS_TEMPERATURES, 5
    )


def robustness_width() -> Sweep:
    """Paper 000 Sec. 6 across widths: relu with two hidden layers of width 5, 10,
    20, 50 and 100; d = 2, T in {10, 100, 1000}, beta in {0.01, 0.1, 0.5}; tau 1,
    tau 10 iid, tau 10 dyadic; 5 seeds (45 settings)."""
    families = tuple((DEFAULT_ACTIVATION, (width, width)) for width in ROBUSTNESS_WIDTHS)
    return _family_sweep(
        "robustness_width", families, ROBUSTNESS_NUM_TRAINS, ROBUSTNESS_TEMPERATURES, 5
    )


def robustness_quick() -> Sweep:
    """The robustness slice for the quick preset (meant to fit its < 45-minute
    budget on 2 cores): relu, tanh, sigmoid and gelu at hidden sizes (50, 50), and
    relu at (10, 10) (5 families); d = 2, T in {10, 100}, beta = 0.1; tau 1, tau 10
    iid, tau 10 dyadic; 3 seeds (10 settings)."""
    families = tuple((a, DEFAULT_HIDDEN_SIZES) for a in ("relu", "tanh", "sigmoid", "gelu"))
    families += (("relu", (10, 10)),)
    return _family_sweep("robustness_quick", families, (10, 100), (0.1,), 3)


_SWEEPS: dict[str, Callable[[], Sweep]] = {
    "paper2d": paper2d,
    "highdim": highdim,
    "quick": quick,
    "standard": standard,
    "robustness_activation": robustness_activation,
    "robustness_width": robustness_width,
    "robustness_quick": robustness_quick,
}
SWEEP_NAMES = tuple(sorted(_SWEEPS))


def get_sweep(name: str) -> Sweep:
    """The sweep called ``name`` (one of SWEEP_NAMES), freshly built."""
    check_choice("sweep", name, SWEEP_NAMES)
    return _SWEEPS[name]()
