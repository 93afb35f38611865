"""The Kubernetes API's TLS: a CA and a server certificate (SANs 127.0.0.1, localhost and the
advertised host), made with ``cryptography`` in the state directory on first start and reused
after."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certificates", "ensure_certificates"]

_VALID_DAYS = 3650


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _sans(hosts: list[str]) -> list[object]:
    from cryptography import x509

    out: list[object] = []
    for host in dict.fromkeys(["127.0.0.1", "localhost", *hosts]):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            out.append(x509.DNSName(host))
    return out


def ensure_certificates(directory: Path, hosts: list[str] | None = None) -> Certificates:
    """The CA and server certificate in ``directory`` (``kube-ca.crt``, ``kube-server.crt``,
    ``kube-server.key``), made if missing, or remade if the server certificate lacks one of
    ``hosts``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    certs = Certificates(
        directory / "kube-ca.crt", directory / "kube-server.crt", directory / "kube-server.key"
    )
    wanted = _sans(hosts or [])
    if certs.ca.exists() and certs.cert.exists() and certs.key.exists():
        have = x509.load_pem_x509_certificate(certs.cert.read_bytes())
        names = have.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if all(n in names for n in wanted):
            return certs
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key_path = directory / "kube-ca.key"
    if ca_key_path.exists() and certs.ca.exists():
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "phalanx-kube-ca")])
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(
            ca_key_path,
            ca_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )
        certs.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "phalanx-kube-apiserver")])
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(wanted), critical=False)  # type: ignore[arg-type]
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    _write_private(
        certs.key,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    certs.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return certs
