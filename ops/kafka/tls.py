"""The local broker's certificates: a CA of its own and a server certificate it signs.

Made with ``cryptography`` when a secured cluster is first started, and kept in the
cluster's home: ``ca.pem`` is what a client trusts (``JOBSTREAM_SSL_CA_LOCATION``,
kcat's ``ssl.ca.location``), ``server.pem`` holds the broker's key and certificate chain
in the PEM form Kafka reads (``ssl.keystore.type=PEM``). The server certificate names
127.0.0.1 and localhost, so clients keep hostname verification on.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 825


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    """The CA certificate (PEM): what clients trust."""
    server: Path
    """The broker's private key (PKCS#8, unencrypted) followed by its certificate chain."""


def tls_files(folder: Path) -> TlsFiles:
    """The certificates in ``folder``, made there first when they are not yet."""
    files = TlsFiles(ca=folder / "ca.pem", server=folder / "server.pem")
    if not (files.ca.exists() and files.server.exists()):
        folder.mkdir(parents=True, exist_ok=True)
        _make(files)
    return files


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "jobstream local"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])  # fmt: skip


def _make(files: TlsFiles) -> None:
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("jobstream local CA"))
        .issuer_name(_name("jobstream local CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                              x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    files.server.write_bytes(key_pem + cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    files.server.chmod(0o600)
    files.ca.write_bytes(ca_cert.public_bytes(pem))
