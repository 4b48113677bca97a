"""A development certificate authority and node certificates (``kraftlog certs create``).

Layout written by :func:`create_dev_pki` in ``out_dir``::

    ca.pem            the CA certificate (the truststore: ssl.truststore.location)
    ca-key.pem        the CA private key (mode 0600; keep it off production machines)
    <name>.pem        the certificate of node/client <name>, then the CA certificate (chain)
    <name>-key.pem    its private key (mode 0600; ssl.key.location)

Keys are ECDSA P-256. Node certificates carry subjectAltName DNS and IP entries (127.0.0.1 and
localhost by default) and both serverAuth and clientAuth usages, so one certificate serves a
node's Kafka listeners and both ends of the mutual-TLS control plane. Certificates are not
encrypted on disk: this is for development clusters; production sites use their own CA.

Thread-safety: pure functions apart from the files they write.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY_DAYS = 365
DEFAULT_HOSTS = ("localhost", "127.0.0.1")
ORGANIZATION = "kraftlog development"


@dataclass(frozen=True, slots=True)
class IssuedCertificate:
    cert_path: Path
    key_path: Path


@dataclass(frozen=True, slots=True)
class CertificateAuthority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def new_ca(
    common_name: str = "kraftlog dev CA",
    *,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
    not_before: datetime.datetime | None = None,
) -> CertificateAuthority:
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or _now() - datetime.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=validity_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert, key)


def _san(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for host in hosts:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            entries.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(entries)


def issue(
    ca: CertificateAuthority,
    common_name: str,
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
    not_before: datetime.datetime | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate for ``common_name`` signed by ``ca`` (server and client usage)."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or _now() - datetime.timedelta(minutes=5)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=validity_days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
    )
    if hosts:
        builder = builder.add_extension(_san(hosts), critical=False)
    return builder.sign(ca.key, hashes.SHA256()), key


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, *, private: bool) -> None:
    mode = 0o600 if private else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def write_ca(ca: CertificateAuthority, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    _write(out_dir / "ca.pem", _pem_cert(ca.cert), private=False)
    _write(out_dir / "ca-key.pem", _pem_key(ca.key), private=True)


def load_ca(out_dir: Path) -> CertificateAuthority:
    cert = x509.load_pem_x509_certificate((out_dir / "ca.pem").read_bytes())
    key = serialization.load_pem_private_key((out_dir / "ca-key.pem").read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{out_dir / 'ca-key.pem'}: not an EC private key")
    return CertificateAuthority(cert, key)


def write_issued(
    ca: CertificateAuthority,
    out_dir: Path,
    name: str,
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
    not_before: datetime.datetime | None = None,
) -> IssuedCertificate:
    cert, key = issue(ca, name, hosts, validity_days=validity_days, not_before=not_before)
    cert_path, key_path = out_dir / f"{name}.pem", out_dir / f"{name}-key.pem"
    _write(cert_path, _pem_cert(cert) + _pem_cert(ca.cert), private=False)
    _write(key_path, _pem_key(key), private=True)
    return IssuedCertificate(cert_path, key_path)


def create_dev_pki(
    out_dir: Path,
    names: Sequence[str],
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
) -> dict[str, IssuedCertificate]:
    """Create (or reuse, if ``ca.pem`` exists) the CA in ``out_dir`` and one certificate per
    name in ``names``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if (out_dir / "ca.pem").exists() and (out_dir / "ca-key.pem").exists():
        ca = load_ca(out_dir)
    else:
        ca = new_ca(validity_days=validity_days)
        write_ca(ca, out_dir)
    return {
        name: write_issued(ca, out_dir, name, hosts, validity_days=validity_days) for name in names
    }
