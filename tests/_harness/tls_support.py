"""A self-signed certificate for 127.0.0.1, for the tests that serve https (`serve_asgi`'s
``tls``) to peers trusting it as their CA (oidc-provider's metadata document fetches, clients
given `trusting`).

Imported by module name (``import tls_support``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key: (cert file, key file) in
    ``directory``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lockgate tests on 127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "tls.pem", directory / "tls.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def trusting(cert_file: Path) -> ssl.SSLContext:
    """A client TLS context trusting only ``cert_file`` (for an ``httpx2`` client's ``verify``)."""
    return ssl.create_default_context(cafile=str(cert_file))
