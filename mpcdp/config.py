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


SECURITY_LEVELS = ("semi-honest", "malicious")
"""What ``security`` may be: the adversary the run is secure against (:class:`MpcSettings`)."""
MALICIOUS_SAMPLERS = ("fewer-bytes", "fewer-rounds")
"""The authenticated sampler's two plans (:mod:`mpcdp.noise.auth_gaussian`): circuit dg-auth/9, which decides the
first factor first and deals the other words for its survivors only, and dg-auth/10, one decision per pass."""
OPENING_PLANS = ("star", "all-to-all")
"""How a small opening travels among three or more parties (:meth:`mpcdp.transport.mesh.Mesh.open_shares`)."""

DEFAULT_TIMEOUT_S = 120.0
"""The longest any party of a run may go without progress when nothing sets ``timeout_s``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class MpcSettings:
    """What a protocol's ``[mpc]`` table, the command line and ``mpcdp.train``'s keywords may set: every
    :class:`MpcConfig` field but ``parties``, each checked on its own at construction. A run plan carries one,
    resolved once by :func:`resolve_mpc` (command line > protocol file > default); a launcher turns it into the
    run's :class:`MpcConfig` with :meth:`for_parties`, where the checks that need the party count run.

    Attributes:
        provider: where correlated randomness comes from: the name of a record of
            :data:`mpcdp.providers.PROVIDERS` (:attr:`MpcConfig.provider_record`), which checks the whole
            configuration too.
            ``"dealer"`` (default): a separate process that holds no data and sees no opened value; secure if
            it does not collude with a party.
            ``"honest-majority"``: parties 0, 1 and 2 make it themselves from replicated keys
            (:mod:`mpcdp.adapter.replicated`); no dealer process; secure while at most one of those three
            colludes (with any number of the others); needs parties >= 3.
            ``"tfp"``: party 0 generates it and can recover every other party's inputs — development
            only, refused unless ``insecure_dev`` is True.
        insecure_dev: explicit opt-in to insecure development settings; warns whenever one is used.
        precision_bits: fractional bits of the fixed-point encoding in Z_2^64 (resolution 2^-bits).
        timeout_s: liveness, not a wall clock: the longest the run may go without any party making progress
            (a protocol step, an opening, a noise pass, a training step: :mod:`mpcdp.runtime.harness`), and
            the longest any blocking network operation waits for a peer. A run that keeps making progress is
            never stopped for its length; its estimate is shown, never used to stop it.
        link_delay_ms: emulated one-way network latency: every round of mpcdp's transport and every dealer
            request waits this long per message hop (0 = none). For network experiments on one host,
            where the kernel offers no delay qdisc; a real network brings its own.
        reproducible: draw secure training's mini-batches from the protocol's seed instead of the OS
            CSPRNG (:mod:`mpcdp.randomness`), so a secure run can be compared batch for batch with a
            simulated one; predictable, so a warning is printed. Never seeds masks, dealer or noise.
        noise_committee: how many parties (0..c−1) sample the in-MPC noise (:mod:`mpcdp.noise.secure_gaussian`);
            it enters the release as their shares, re-randomised by a sharing of zero, so its cost does not
            grow with m. All parties when m <= c. Without a dealer it is the three generators (c = 3).
        security: the adversary. ``"semi-honest"`` (default): parties follow the protocol. ``"malicious"``:
            security with abort against any set of deviating data parties, with an honest dealer that colludes
            with nobody (so ``provider`` must be ``"dealer"``): every value is authenticated by SPDZ2k-style MACs
            and MAC-checked before it is used or output (:mod:`mpcdp.mpc.authenticated`). It covers the secure
            sum and its release only; a job it does not cover is refused, never run semi-honest.
        malicious_sampler: the authenticated sampler's plan under ``security = "malicious"``
            (:mod:`mpcdp.noise.auth_gaussian`). ``"fewer-bytes"`` (default, circuit dg-auth/9): the first factor
            decided first and the other words dealt for its survivors only: the fewest bytes and the least CPU,
            for parties on one host or a fast LAN. ``"fewer-rounds"`` (dg-auth/10): every word dealt up front and
            one decision per pass, about 178 rounds per pass instead of 300 for about 9% more bytes and a larger
            peak of memory: for separate hosts whose one-way latency is about 0.5 ms or more
            (benchmarks/results/noise-malicious.md). Refused under semi-honest security.
        openings: how an opening small enough for a relay (at most 64 KiB through one party) travels among three
            or more parties, under either security. ``"star"`` (default): every share to one party, the king,
            which sends the result back: 2 rounds, 2(m−1) messages. ``"all-to-all"``: every party sends its
            share to every other and sums what it receives: 1 round, m(m−1) messages, each party (m−1)× a star
            member's bytes: for separate hosts, where a round's latency costs more than the bytes (every party
            then sees every share, as the star's king always does). Larger openings are reduce-scattered either
            way; two parties always exchange directly.
    """

    provider: str = providers.DEFAULT
    insecure_dev: bool = False
    precision_bits: int = 16
    timeout_s: float = DEFAULT_TIMEOUT_S
    link_delay_ms: float = 0.0
    reproducible: bool = False
    noise_committee: int = 3
    security: str = "semi-honest"
    malicious_sampler: str = "fewer-bytes"
    openings: str = "star"

    def __post_init__(self) -> None:
        providers.lookup(self.provider)
        check_bool(self.insecure_dev, "insecure_dev")
        check_integer(self.precision_bits, "precision_bits", minimum=8, maximum=24)
        check_number(self.timeout_s, "timeout_s", low=0)
        check_number(self.link_delay_ms, "link_delay_ms", low=0, high=10_000, low_open=False, high_open=False)
        check_bool(self.reproducible, "reproducible")
        check_integer(self.noise_committee, "noise_committee", minimum=2)
        if self.security not in SECURITY_LEVELS:
            raise ConfigError(f"`security` must be one of {list(SECURITY_LEVELS)}. Found {self.security!r}.")
        if self.malicious_sampler not in MALICIOUS_SAMPLERS:
            raise ConfigError(f"`malicious_sampler` must be one of {list(MALICIOUS_SAMPLERS)}. "
                              f"Found {self.malicious_sampler!r}.")
        if self.malicious_sampler != MALICIOUS_SAMPLERS[0] and self.security != "malicious":
            raise ConfigError(f"`malicious_sampler` {self.malicious_sampler!r} applies under `security` 'malicious' "
                              f"only (the semi-honest sampler has one plan)")
        if self.openings not in OPENING_PLANS:
            raise ConfigError(f"`openings` must be one of {list(OPENING_PLANS)}. Found {self.openings!r}.")
        if self.security == "malicious" and self.provider != "dealer":
            raise ConfigError(f"`security` 'malicious' is not available with `provider` {self.provider!r}: security "
                              f"with abort rests on the honest dealer's MAC keys (use provider 'dealer')")

    def refuse_uncovered(self, what: str) -> None:
        """Under ``security = "malicious"``, refuse ``what`` (a job or a step the MACs do not cover yet) in one
        line; nothing under semi-honest security."""
        if self.security == "malicious":
            raise ConfigError(f"`security` 'malicious' does not cover {what} yet: only the secure sum and its "
                              f"MAC-checked release (`mpcdp aggregate`), the discrete Gaussian sampler (`mpcdp noise --mode "
                              f"dgauss`) and training with it are authenticated; the protocols on dealt masks are "
                              f"not (issue 48)")

    def replaced(self, **changes: Any) -> MpcSettings:
        """These settings with ``changes`` (each checked); a name that is not a setting is a ConfigError."""
        return MpcSettings(**_known_settings({**self.settings(), **changes}, ""))

    def settings(self) -> dict[str, Any]:
        """Every setting by name (what a run's JSON shows as ``mpc``)."""
        return {name: getattr(self, name) for name in MPC_SETTINGS}

    def for_parties(self, parties: int) -> MpcConfig:
        """The run's :class:`MpcConfig` for ``parties`` data parties (the provider's checks run here)."""
        return MpcConfig(parties=parties, **self.settings())


@dataclasses.dataclass(frozen=True, kw_only=True)
class MpcConfig(MpcSettings):
    """How the parties compute together: :class:`MpcSettings` (whose attributes it has) for a number of parties,
    with the provider's checks of the whole.

    Attributes:
        parties: number of data parties m (>= 2). With the ``dealer`` provider one more process runs.
    """

    parties: int

    def __post_init__(self) -> None:
        check_integer(self.parties, "parties", minimum=2)
        super().__post_init__()
        record = providers.lookup(self.provider)
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


MPC_SETTINGS = tuple(f.name for f in dataclasses.fields(MpcSettings))
"""What a protocol's ``[mpc]`` table may set: every :class:`MpcConfig` field but ``parties`` (the run gives it)."""


def _known_settings(table: Any, where: str) -> dict[str, Any]:
    """``table`` as a dict whose every key is one of :data:`MPC_SETTINGS`.

    Raises:
        ConfigError: not a table, or a key that is not a setting, naming it and the nearest valid key.
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


def resolve_mpc(table: Any, where: str, given: dict[str, Any] | None = None) -> MpcSettings:
    """The one resolution of a run's [mpc] settings, used by every launcher (``mpcdp train``, ``mpcdp party``,
    ``launch/host.sh`` and torchrun through it, ``mpcdp.train``, the paper 003 and 004 jobs): ``given`` (what
    the command line or the caller sets explicitly; None values are not given) over the protocol's ``table``
    over the defaults. Read before any data.

    Raises:
        ConfigError: ``table`` is not a table, a key of ``table`` or ``given`` is not a setting (naming it and
            the nearest one), or a value is invalid (naming the setting and ``where`` it came from).
    """
    settings = _known_settings(table, where)
    chosen = _known_settings({k: v for k, v in (given or {}).items() if v is not None}, " (given)")
    try:
        return MpcSettings(**{**settings, **chosen})
    except ConfigError as exc:
        raise ConfigError(f"[mpc]{where}: {exc}") from None


def covers_malicious(fn: Any) -> Any:
    """Mark a party function whose every opening is MAC-checked under ``security = "malicious"``
    (:mod:`mpcdp.mpc.authenticated`); the launchers refuse any other (:func:`check_covered`)."""
    fn.covers_malicious = True
    return fn


def covers_malicious_unless(refusal: Any) -> Any:
    """Mark a party function as :func:`covers_malicious` except for the arguments for which
    ``refusal(*args)`` names what its MACs do not cover (None: covered), refused by :func:`check_covered`."""
    def mark(fn: Any) -> Any:
        fn.malicious_refusal = refusal
        return covers_malicious(fn)
    return mark


def check_covered(settings: MpcSettings, fn: Any, args: Any = (), party_args: Any = None) -> None:
    """Refuse to run party function ``fn`` on ``args`` (or on each party's ``party_args``) under
    ``security = "malicious"`` unless it is marked :func:`covers_malicious` (and its
    :func:`covers_malicious_unless` refusal names nothing for them): one line, before any process starts or any
    share moves."""
    if not getattr(fn, "covers_malicious", False):
        settings.refuse_uncovered(f"the job {getattr(fn, '__qualname__', fn)!s}")
    refusal = getattr(fn, "malicious_refusal", None)
    for each in party_args if party_args is not None else [args]:
        what = refusal(*each) if refusal is not None and settings.security == "malicious" else None
        if what:
            settings.refuse_uncovered(what)


def fingerprint(*parts: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (what parties compare at start)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode()).hexdigest()
