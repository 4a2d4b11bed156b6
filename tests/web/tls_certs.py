"""Certificates made for a test: a CA, a server certificate for 127.0.0.1 and a client one."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_key: Path  # a valid key that belongs to no certificate here


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def make_certs(
    folder: Path, client_san: str = "prometheus.example", ca_name: str = "test CA"
) -> Certs:
    """Write a CA, a server pair (127.0.0.1, localhost) and a client pair into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, server_key, client_key = _key(), _key(), _key()
    ca = _cert(ca_name, ca_key, None, [], None)
    server = _cert(
        "cdnvideo-exporter",
        server_key,
        (ca_name, ca_key),
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        ExtendedKeyUsageOID.SERVER_AUTH,
    )
    client = _cert(
        "prometheus",
        client_key,
        (ca_name, ca_key),
        [x509.DNSName(client_san)],
        ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    return Certs(
        ca=_write_cert(folder / "ca.crt", ca),
        server_cert=_write_cert(folder / "server.crt", server),
        server_key=_write_key(folder / "server.key", server_key),
        client_cert=_write_cert(folder / "client.crt", client),
        client_key=_write_key(folder / "client.key", client_key),
        other_key=_write_key(folder / "other.key", _key()),
    )
