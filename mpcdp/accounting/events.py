"""dp-accounting events for the mechanisms mpcdp runs (what happened, not how it is bounded).

Adjacency is replace-one throughout (datasets of the same size differing in one record), the relation
under which sampling without replacement is analysed (Wang, Balle, Kasiviswanathan 2019). A Gaussian
event's noise multiplier is σ divided by the query's *replace-one* L2 sensitivity — for an average of b
clipped terms that is 2C/b, so z = σ·b/(2C) (the paper's σ′).

DP-SRM / DDP-SRM (paper 002, Algorithms 1–2, Theorem 4.1): release 0 averages a batch of b0 gradients
clipped to C1 (sensitivity 2C1/b0); releases 1..T average b terms of sensitivity 2((1−γ)C2 + γC1)/b
((4.1) and Remark 4.3 — §6.1 of the paper swaps C1 and C2). Every batch is drawn without replacement.
With several parties each drawing its own batch, party j's records are sampled at rate b_j/n_j; the
event uses the largest rate (the most exposed party) with the combined batch in the sensitivity.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number, require_integers, require_positive


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpSrmSetting:
    """Everything the privacy of a DP-SRM / DDP-SRM run depends on (all public).

    Attributes:
        n: records per party, one entry per party (a single entry for central DP-SRM).
        batch: per-party batch sizes b_j of releases 1..T (same length as n).
        batch0: per-party batch sizes of release 0.
        steps: T, the releases after release 0.
        c1: clipping norm of per-example gradients.
        c2: clipping norm of per-example gradient differences.
        gamma: the momentum parameter γ of the STORM estimator.
    """

    n: tuple[int, ...]
    batch: tuple[int, ...]
    batch0: tuple[int, ...]
    steps: int
    c1: float = 1.0
    c2: float = 0.01
    gamma: float = 0.01

    def __post_init__(self) -> None:
        for name in ("n", "batch", "batch0"):
            value = getattr(self, name)
            if isinstance(value, int):
                object.__setattr__(self, name, (value,))
        if not (len(self.n) == len(self.batch) == len(self.batch0)) or not self.n:
            raise ConfigError(f"`n`, `batch` and `batch0` need one entry per party. Found {len(self.n)}, "
                              f"{len(self.batch)} and {len(self.batch0)}.")
        for j, (n_j, b_j, b0_j) in enumerate(zip(self.n, self.batch, self.batch0)):
            where = f" (party {j})" if len(self.n) > 1 else ""
            check_integer(n_j, "n", where=where)
            for name, value in (("batch", b_j), ("batch0", b0_j)):
                check_integer(value, name, maximum=n_j, maximum_name="n", where=where)
        require_integers(self, ("steps",))
        require_positive(self, ("c1", "c2"))
        check_number(self.gamma, "gamma", low=0, high=1, low_open=False, high_open=False)

    @property
    def c_eff(self) -> float:
        """(1 − γ)·C2 + γ·C1: half the replace-one sensitivity of Σ of one step's terms."""
        return (1 - self.gamma) * self.c2 + self.gamma * self.c1

    def _most_exposed(self, batches: tuple[int, ...]) -> int:
        return max(range(len(self.n)), key=lambda j: batches[j] / self.n[j])

    def sampling(self, release0: bool) -> tuple[int, int, int]:
        """(records, batch of that party, combined batch) of the party with the largest sampling rate."""
        batches = self.batch0 if release0 else self.batch
        j = self._most_exposed(batches)
        return self.n[j], batches[j], sum(batches)

    def noise_multipliers(self, sigma0: float, sigma: float) -> tuple[float, float]:
        """(z0, z) = σ / replace-one sensitivity: σ0·B0/(2·C1) and σ·B/(2·C_eff), B = the combined batch."""
        return sigma0 * sum(self.batch0) / (2 * self.c1), sigma * sum(self.batch) / (2 * self.c_eff)

    def sigmas_for(self, nu: float) -> tuple[float, float]:
        """(σ0, σ) with noise multipliers z0 = ν·τ0 and z = ν·τ (τ0, τ: the largest per-party rates).

        The one-parameter family that calibration searches; for one party σ0 = 2·C1·ν/n and
        σ = 2·C_eff·ν/n, the paper's ratio σ0/σ = C1/C_eff.
        """
        n0, b0, total0 = self.sampling(True)
        n1, b1, total1 = self.sampling(False)
        z0, z = nu * b0 / n0, nu * b1 / n1
        return 2 * self.c1 * z0 / total0, 2 * self.c_eff * z / total1


def dpsrm_event(setting: DpSrmSetting, sigma0: float, sigma: float) -> dp_accounting.DpEvent:
    """Release 0 and T releases, each a Gaussian on a batch sampled without replacement."""
    import dp_accounting

    z0, z = setting.noise_multipliers(sigma0, sigma)
    n0, b0, _ = setting.sampling(True)
    n1, b1, _ = setting.sampling(False)
    first = dp_accounting.SampledWithoutReplacementDpEvent(n0, b0, dp_accounting.GaussianDpEvent(z0))
    step = dp_accounting.SampledWithoutReplacementDpEvent(n1, b1, dp_accounting.GaussianDpEvent(z))
    return dp_accounting.ComposedDpEvent([first, dp_accounting.SelfComposedDpEvent(step, setting.steps)])


def full_batch_gaussian_event(sigma: float, sensitivity: float, steps: int) -> dp_accounting.DpEvent:
    """T Gaussian releases of full-batch queries (Jayaraman et al. 2018, WD-DP): no sampling."""
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma / sensitivity), steps)


def laplace_event(scale: float, l1_sensitivity: float, steps: int) -> dp_accounting.DpEvent:
    """T Laplace releases (paper 003, Theorem 1): each (l1_sensitivity/scale)-DP."""
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(scale / l1_sensitivity), steps)


def without_amplification(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
    """``event`` with every sampling step replaced by the mechanism on its whole batch (sampling rate 1): the
    event of a run whose batches are public (a ``reproducible`` run's follow the protocol's seed), so that
    subsampling hides nothing and amplifies nothing."""
    import dp_accounting

    if isinstance(event, (dp_accounting.SampledWithoutReplacementDpEvent, dp_accounting.PoissonSampledDpEvent)):
        return without_amplification(event.event)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(without_amplification(event.event), event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([without_amplification(e) for e in event.events])
    return event
