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
- ``quick``: d = 2, T in {10, 100}, beta = 0.1, tau 1 and tau 10 (iid and
  dyadic), 3 seeds: a few minutes on 2 cores, for demos and tests.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

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


_SWEEPS: dict[str, Callable[[], Sweep]] = {"paper2d": paper2d, "highdim": highdim, "quick": quick}
SWEEP_NAMES = tuple(sorted(_SWEEPS))


def get_sweep(name: str) -> Sweep:
    """The sweep called ``name`` (one of SWEEP_NAMES), freshly built."""
    check_choice("sweep", name, SWEEP_NAMES)
    return _SWEEPS[name]()
