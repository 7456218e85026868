"""Run configuration: frozen, validated at construction, passed explicitly, fingerprinted.

Every party of a run must hold the same :class:`MpcConfig` and the same job description; parties exchange
their fingerprints before any share moves (see :mod:`mpcdp.mpc.context`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from mpcdp import providers
from mpcdp.errors import ConfigError
from mpcdp.validation import check_bool, check_integer, check_number


@dataclasses.dataclass(frozen=True, kw_only=True)
class MpcConfig:
    """How the parties compute together.

    Attributes:
        parties: number of data parties m (>= 2). With the ``dealer`` provider one more process runs.
        provider: where correlated randomness comes from: the name of a record of
            :data:`mpcdp.providers.PROVIDERS` (:attr:`provider_record`), which checks this configuration too.
            ``"dealer"`` (default): a separate process that holds no data and sees no opened value; secure if
            it does not collude with a party.
            ``"honest-majority"``: parties 0, 1 and 2 make it themselves from replicated keys
            (:mod:`mpcdp.adapter.replicated`); no dealer process; secure while at most one of those three
            colludes (with any number of the others); needs parties >= 3.
            ``"tfp"``: party 0 generates it and can recover every other party's inputs — development
            only, refused unless ``insecure_dev`` is True.
        insecure_dev: explicit opt-in to insecure development settings; warns whenever one is used.
        precision_bits: fractional bits of the fixed-point encoding in Z_2^64 (resolution 2^-bits).
        timeout_s: per-party limit for the whole run and for every blocking network operation. A training
            protocol that gives none gets one that follows the run's estimate (:mod:`mpcdp.jobs.estimate`:
            4 × the estimate, at least this default); one shorter than the estimate is refused.
        link_delay_ms: emulated one-way network latency: every round of mpcdp's transport and every dealer
            request waits this long per message hop (0 = none). For network experiments on one host,
            where the kernel offers no delay qdisc; a real network brings its own.
        reproducible: draw secure training's mini-batches from the protocol's seed instead of the OS
            CSPRNG (:mod:`mpcdp.randomness`), so a secure run can be compared batch for batch with a
            simulated one; predictable, so a warning is printed. Never seeds masks, dealer or noise.
        noise_committee: how many parties (0..c−1) sample the in-MPC noise (:mod:`mpcdp.noise.secure_gaussian`);
            it enters the release as their shares, re-randomised by a sharing of zero, so its cost does not
            grow with m. All parties when m <= c. Without a dealer it is the three generators (c = 3).
    """

    parties: int
    provider: str = providers.DEFAULT
    insecure_dev: bool = False
    precision_bits: int = 16
    timeout_s: float = 120.0
    link_delay_ms: float = 0.0
    reproducible: bool = False
    noise_committee: int = 3

    def __post_init__(self) -> None:
        check_integer(self.parties, "parties", minimum=2)
        record = providers.lookup(self.provider)
        check_bool(self.insecure_dev, "insecure_dev")
        check_integer(self.precision_bits, "precision_bits", minimum=8, maximum=24)
        check_number(self.timeout_s, "timeout_s", low=0)
        check_number(self.link_delay_ms, "link_delay_ms", low=0, high=10_000, low_open=False, high_open=False)
        check_bool(self.reproducible, "reproducible")
        check_integer(self.noise_committee, "noise_committee", minimum=2)
        record.check(self)  # the provider's own refusals (and warnings), on otherwise valid fields
        providers.check_declared(record, self)

    @property
    def provider_record(self) -> providers.Provider:
        """The :class:`~mpcdp.providers.Provider` that :attr:`provider` names."""
        return providers.lookup(self.provider)

    @property
    def processes(self) -> int:
        """OS processes of a run: the data parties, plus the dealer when there is one."""
        return self.parties + (1 if self.provider_record.has_dealer else 0)

    @property
    def fixed_point_resolution(self) -> float:
        return 2.0 ** -self.precision_bits

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


MPC_SETTINGS = tuple(f.name for f in dataclasses.fields(MpcConfig) if f.name != "parties")
"""What a protocol's ``[mpc]`` table may set: every :class:`MpcConfig` field but ``parties`` (the run gives it)."""


def check_mpc_table(table: Any, where: str) -> dict[str, Any]:
    """A protocol's ``[mpc]`` table, its keys checked (values are checked by :class:`MpcConfig` at launch).

    Raises:
        ConfigError: not a table, or a key that is not one of :data:`MPC_SETTINGS`, naming it and the nearest
            valid key.
    """
    import difflib

    if not isinstance(table, dict):
        raise ConfigError(f"[mpc]{where} must be a table. Found {table!r}.")
    for key in table:
        if key not in MPC_SETTINGS:
            near = difflib.get_close_matches(str(key), MPC_SETTINGS, n=1)
            hint = f"; did you mean `{near[0]}`?" if near else ""
            raise ConfigError(f"[mpc] `{key}`{where} is not a setting{hint} [mpc] takes {', '.join(MPC_SETTINGS)}.")
    return dict(table)


def resolved_mpc(table: dict[str, Any]) -> dict[str, Any]:
    """Every [mpc] setting a run uses: ``table``'s, and the default for the others (what a run's JSON shows)."""
    defaults = {f.name: f.default for f in dataclasses.fields(MpcConfig) if f.name != "parties"}
    return {**defaults, **{k: v for k, v in table.items() if k in defaults}}


def fingerprint(*parts: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (what parties compare at start)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode()).hexdigest()
