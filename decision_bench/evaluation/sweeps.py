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

``custom_sweep(...)`` builds any other grid (what ``decision-bench testbed
--num-train ... --temperature ...`` runs).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from decision_bench._validation import check_choice, check_int, check_optional_int, check_positive
from decision_bench.priors import PRIORS


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
    """One environment family and training set size: agents are fit once per seed."""

    input_dim: int
    num_train: int
    temperature: float
    prior: str = "mlp"

    __test__ = False

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        object.__setattr__(self, "num_train", check_int("num_train", self.num_train, 0))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))
        check_choice("prior", self.prior, PRIORS)


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
    repeated = sorted({v for v in checked if checked.count(v) > 1})
    if repeated:
        raise ValueError(f"{name} must not repeat values, got {list(checked)} (repeated: {repeated})")
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


_SWEEPS: dict[str, Callable[[], Sweep]] = {
    "paper2d": paper2d,
    "highdim": highdim,
    "quick": quick,
    "standard": standard,
}
SWEEP_NAMES = tuple(sorted(_SWEEPS))


def get_sweep(name: str) -> Sweep:
    """The sweep called ``name`` (one of SWEEP_NAMES), freshly built."""
    check_choice("sweep", name, SWEEP_NAMES)
    return _SWEEPS[name]()
