"""Who may join a run: a per-deployment certificate authority and one certificate per rank, and the TLS 1.3
contexts built from them for mpcdp's links.

A deployment is keyed once with :func:`make_deployment` (``mpcdp credentials --parties m --out DIR``, or
``launch/make-credentials.sh``). That makes a CA, and for each rank 0..m (m is the dealer) a P-256 key and a
certificate whose subject common name is ``mpcdp party <rank>`` and whose organisation is the deployment's
name. Hand each host its own ``party-<rank>.pem``/``party-<rank>-key.pem`` and the CA's ``ca.pem``. Keep
``ca-key.pem`` off every party's host: anyone who holds it can mint a certificate for any rank.

On a link, both ends present their certificate (mutual TLS 1.3). Each end checks that the other's chains to
the deployment's CA and that its common name is the rank it claims. A process without a certificate of
this deployment cannot complete the handshake. One with another rank's certificate is refused, because it
cannot claim a rank it holds no key for.

Files: the output folder is created with mode 0700, or, if it exists, must be a directory of this user that
no other user can write (else :class:`~mpcdp.errors.ConfigError`, naming the folder and a foreign owner's
uid). Every key is created 0600 under a temporary name and moved into place (:mod:`mpcdp.private_files`): no
other user can open it at any moment. Certificates are public and are written 0644 the same way. On read
(:class:`LinkSecurity`) the folder is checked the same way, and every file must be a regular file of this user
(not a link) that no other user can write, the key one that no other user can read.

Security model: authenticity and confidentiality of mpcdp's links against the network, given that the
deployment CA's key is kept apart. TLS does not make a party honest: the protocols stay semi-honest.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import socket
import ssl
from typing import cast

from mpcdp.errors import ConfigError
from mpcdp.private_files import check_private_file, check_private_folder, private_folder, write_private
from mpcdp.validation import check_integer

VALID_DAYS = 365
PUBLIC_FILE_MODE = 0o644  # certificates: handed to every host


def subject_name(rank: int) -> str:
    return f"mpcdp party {rank}"


def make_deployment(folder: str | os.PathLike, parties: int, *, name: str = "mpcdp deployment") -> pathlib.Path:
    """Write a CA and the certificates of ranks 0..``parties`` (the last is the dealer's) into ``folder``
    (files and folder private as the module docstring says).

    Raises:
        ConfigError: ``parties`` is not an integer >= 2, or ``folder`` exists and is a link, is owned by another
            user or is writable by others.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    check_integer(parties, "parties", minimum=2)
    out = private_folder(folder, what="credentials `--out`")
    now = datetime.datetime.now(datetime.timezone.utc)

    def named(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write_key(path: pathlib.Path, key) -> None:
        write_private(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()), durable=False)

    def write_certificate(path: pathlib.Path, cert) -> None:
        write_private(path, cert.public_bytes(serialization.Encoding.PEM), mode=PUBLIC_FILE_MODE, durable=False)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(named("mpcdp deployment CA")).issuer_name(named("mpcdp deployment CA"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    write_certificate(out / "ca.pem", ca_cert)
    write_key(out / "ca-key.pem", ca_key)
    for rank in range(parties + 1):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(named(subject_name(rank))).issuer_name(ca_cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                                      x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        write_certificate(out / f"party-{rank}.pem", cert)
        write_key(out / f"party-{rank}-key.pem", key)
    return out


class LinkSecurity:
    """TLS contexts of one rank: ``server`` for links it accepts, ``client`` for links it opens."""

    def __init__(self, folder: str | os.PathLike, rank: int):
        base = pathlib.Path(folder)
        files = [base / "ca.pem", base / f"party-{rank}.pem", base / f"party-{rank}-key.pem"]
        missing = [str(p) for p in files if not os.path.lexists(p)]
        if missing:
            raise ConfigError(f"`credentials` {str(base)!r} lacks {missing} for rank {rank} (make them with "
                              f"`mpcdp credentials`)")
        check_private_folder(base, what="`credentials`")
        for path in files:
            check_private_file(path, what="`credentials`", secret=path is files[2])
        self.rank = rank
        self.ca_file, self.cert_file, self.key_file = files
        self.server = self._context(ssl.PROTOCOL_TLS_SERVER, files)
        self.client = self._context(ssl.PROTOCOL_TLS_CLIENT, files)

    @staticmethod
    def _context(protocol: int, files: list[pathlib.Path]) -> ssl.SSLContext:
        context = ssl.SSLContext(protocol)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        if protocol == ssl.PROTOCOL_TLS_SERVER:
            context.num_tickets = 0  # no session resumption between mpcdp's processes: no tickets to make and send
        context.check_hostname = False  # identities are ranks, checked by check_peer
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(files[0]))
        try:
            context.load_cert_chain(str(files[1]), str(files[2]))
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"`credentials`: {str(files[1])!r} and its key do not load: {exc}") from None
        return context

    @staticmethod
    def peer_rank(link: socket.socket) -> int | None:
        """The rank the verified peer certificate names, or None (also for a link that is not TLS)."""
        if not isinstance(link, ssl.SSLSocket):
            return None
        cert = link.getpeercert()
        # ssl's documented form of "subject": relative distinguished names, each a tuple of (key, value) pairs
        subject = cast("tuple[tuple[tuple[str, str], ...], ...]", (cert or {}).get("subject", ()))
        for field in subject:
            for key, value in field:
                if key == "commonName" and value.startswith("mpcdp party "):
                    tail = value[len("mpcdp party "):]
                    return int(tail) if tail.isdigit() else None
        return None
