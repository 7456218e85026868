"""Values signed by their writer's credential, for the stores mpcdp does not serve over TLS.

torchrun's agent store and a ``file://`` store check nothing on write: anyone who reaches them can write any
key. With credentials (:mod:`.credentials`), every value a process writes there — its endpoint, its loss
report, its refusal — is sealed (:meth:`ValueSigner.seal`) as a small JSON envelope ``{"v": value, "t":
unix time, "c": the writer's certificate (DER, base64), "s": signature}``. The signature is ECDSA P-256 /
SHA-256 by the writer's rank key over a domain tag, the store's scope (torchrun's run id and restart count),
the full key, the time and the value. A reader (:meth:`ValueSigner.open`) accepts a value only if the
certificate chains to the deployment's CA, is valid now, names the rank the key belongs to, the signature
verifies, and the time is no older than this process's joining minus :data:`FRESH_S` (and not in the future
by more than that). Anything else raises :class:`Unauthenticated`: the caller ignores the value and says
once that an unauthenticated writer put it there (:mod:`.rendezvous`).

Security model: against anyone without a rank's key, a value under that rank's key is either what that
rank wrote in this run's scope within the freshness window, or ignored. Not covered: a value that rank
wrote in an earlier run with the same scope within :data:`FRESH_S` can be replayed (give each torchrun run
its own ``--rdzv-id``); and the plain store cannot stop a writer from overwriting a genuine value, so an
attacker can make the rendezvous time out: the time-out then names no party and says an unauthenticated
writer wrote the key. Cost: per value about 800 bytes more, one signature on write, one certificate check
and one verification on read (well under a millisecond each).
"""

from __future__ import annotations

import base64
import datetime
import time

from mpcdp.errors import ConfigError
from mpcdp.transport.store_values import loads_bounded

DOMAIN = b"mpcdp/store-value/1\0"
FRESH_S = 600.0
MAX_SEALED_BYTES = 4096
_FIELDS = {"v", "t", "c", "s"}


class Unauthenticated(ValueError):
    """A store value that is not sealed by the rank its key belongs to (the reason says why)."""


class ValueSigner:
    """One rank's sealing key and the deployment's CA, for the store scope ``scope``.

    Raises:
        ConfigError: through :class:`~.credentials.LinkSecurity`, which checked the files.
    """

    def __init__(self, security, scope: str):
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        with open(security.key_file, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):  # mpcdp's credentials are P-256 keys
            raise ConfigError(f"`credentials`: {str(security.key_file)!r} is not an elliptic-curve key")
        self._key = key
        with open(security.cert_file, "rb") as f:
            self._cert_der = x509.load_pem_x509_certificate(f.read()).public_bytes(serialization.Encoding.DER)
        with open(security.ca_file, "rb") as f:
            self._ca = x509.load_pem_x509_certificate(f.read())
        self.rank = security.rank
        self.scope = scope
        self.joined = time.time()

    def _message(self, key: str, stamp: int, value: str) -> bytes:
        return DOMAIN + "\0".join((self.scope, key, str(stamp), value)).encode("utf-8")

    def seal(self, key: str, value: str) -> str:
        """``value`` for ``key`` as a signed envelope (JSON text)."""
        import json

        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        stamp = int(time.time())
        signature = self._key.sign(self._message(key, stamp, value), ec.ECDSA(hashes.SHA256()))
        return json.dumps({"v": value, "t": stamp, "c": base64.b64encode(self._cert_der).decode(),
                           "s": base64.b64encode(signature).decode()}, separators=(",", ":"), ensure_ascii=False)

    def open(self, key: str, rank: int, raw: bytes) -> str:
        """The value ``rank`` sealed under ``key``.

        Raises:
            Unauthenticated: anything else (not an envelope, a certificate not of this deployment or not
                ``rank``'s, a bad signature, a stale or future time).
        """
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        if len(raw) > MAX_SEALED_BYTES:
            raise Unauthenticated(f"a value of {len(raw)} bytes, over {MAX_SEALED_BYTES}")
        try:
            envelope = loads_bounded(raw, 1)
        except ValueError as exc:
            raise Unauthenticated(f"not a signed envelope ({exc})") from None
        if not isinstance(envelope, dict) or set(envelope) != _FIELDS:
            raise Unauthenticated("not a signed envelope (unsigned)")
        value, stamp, cert_text, signature = (envelope[f] for f in ("v", "t", "c", "s"))
        if not (isinstance(value, str) and isinstance(cert_text, str) and isinstance(signature, str)
                and isinstance(stamp, int) and not isinstance(stamp, bool)):
            raise Unauthenticated("a signed envelope with fields of the wrong type")
        cert = self._certificate(cert_text, rank)
        now = time.time()
        if stamp < self.joined - FRESH_S or stamp > now + FRESH_S:
            raise Unauthenticated(f"signed at unix time {stamp}, outside this run's window")
        try:
            cert.public_key().verify(base64.b64decode(signature, validate=True), self._message(key, stamp, value),
                                     ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            raise Unauthenticated("a signature that does not verify") from None
        return value

    def _certificate(self, text: str, rank: int):
        from cryptography import x509
        from cryptography.x509.oid import NameOID

        from mpcdp.transport.credentials import subject_name

        try:
            cert = x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
            cert.verify_directly_issued_by(self._ca)
        except Exception as exc:  # noqa: BLE001 - any failure to load or check: not this deployment's
            raise Unauthenticated(f"a certificate not issued by this deployment's CA ({type(exc).__name__})") from None
        now = datetime.datetime.now(datetime.timezone.utc)
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            raise Unauthenticated("a certificate outside its validity")
        names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        if names != [subject_name(rank)]:
            raise Unauthenticated(f"a certificate for {names!r}, not rank {rank}'s")
        return cert
