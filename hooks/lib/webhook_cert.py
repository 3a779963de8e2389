# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The TLS certificate of the gpu-dra-controller webhook: generated once, kept, renewed in time.

The API server calls the webhook at ``gpu-dra-controller.d8-gpu.svc`` and trusts the CA that the
webhook configuration carries (``caBundle``). A certificate found in the Secret (or already in
the values) is kept while it is usable: it parses, its key matches, it is signed by its CA, it
names the service and neither it nor the CA expires within ``RENEW_BEFORE``. Anything else (a
missing Secret, a truncated PEM, a foreign certificate) gets a new CA and certificate, and the
reason is returned so the hook can log it: a broken Secret heals instead of blocking the module.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE = "gpu-dra-controller"
NAMESPACE = "d8-gpu"
SECRET = "gpu-dra-controller-webhook-tls"
DNS_NAMES = (SERVICE, f"{SERVICE}.{NAMESPACE}", f"{SERVICE}.{NAMESPACE}.svc")
CA_VALIDITY = datetime.timedelta(days=3650)
CERT_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
# What the hook's Secret binding keeps: the base64 data as stored.
SECRET_FILTER = '{ca: .data["ca.crt"], crt: .data["tls.crt"], key: .data["tls.key"]}'


@dataclass(frozen=True)
class WebhookCert:
    ca: str  # PEM
    crt: str
    key: str

    def as_values(self) -> dict[str, str]:
        return {"ca": self.ca, "crt": self.crt, "key": self.key}


def from_secret_data(data: Any) -> WebhookCert | None:
    """The certificate in a Secret snapshot (base64 fields), or None when any part is missing."""
    if not isinstance(data, Mapping):
        return None
    fields = []
    for name in ("ca", "crt", "key"):
        value = data.get(name)
        if not isinstance(value, str) or not value:
            return None
        try:
            fields.append(base64.b64decode(value, validate=True).decode())
        except (binascii.Error, UnicodeDecodeError):
            return None
    return WebhookCert(*fields)


def from_values(values: Any) -> WebhookCert | None:
    if not isinstance(values, Mapping):
        return None
    ca, crt, key = (values.get(name) for name in ("ca", "crt", "key"))
    if isinstance(ca, str) and isinstance(crt, str) and isinstance(key, str) and ca and crt and key:
        return WebhookCert(ca, crt, key)
    return None


def problem(cert: WebhookCert, now: datetime.datetime) -> str | None:
    """Why ``cert`` cannot serve the webhook, or None when it can."""
    try:
        ca = x509.load_pem_x509_certificate(cert.ca.encode())
        leaf = x509.load_pem_x509_certificate(cert.crt.encode())
        key = serialization.load_pem_private_key(cert.key.encode(), password=None)
    except ValueError as error:
        return f"unreadable PEM ({error})"
    if key.public_key().public_bytes(*_SPKI) != leaf.public_key().public_bytes(*_SPKI):
        return "the key does not belong to the certificate"
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return "the certificate is not signed by the CA"
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "the certificate has no subject alternative names"
    missing = sorted(set(DNS_NAMES) - set(names.get_values_for_type(x509.DNSName)))
    if missing:
        return f"the certificate does not name {', '.join(missing)}"
    for what, certificate in (("the CA", ca), ("the certificate", leaf)):
        if certificate.not_valid_before_utc > now:
            return f"{what} is not valid yet"
        if certificate.not_valid_after_utc - RENEW_BEFORE <= now:
            return f"{what} expires on {certificate.not_valid_after_utc:%Y-%m-%d}"
    return None


_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def generate(now: datetime.datetime) -> WebhookCert:
    """A new CA and a certificate for the service, both ECDSA P-256."""
    start = now - datetime.timedelta(minutes=5)  # clocks of the API servers may lag a little
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SERVICE}-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, DNS_NAMES[-1])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(now + CERT_VALIDITY)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in DNS_NAMES]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return WebhookCert(ca.public_bytes(pem).decode(), leaf.public_bytes(pem).decode(), key_pem.decode())


def choose(
    in_secret: WebhookCert | None, in_values: WebhookCert | None, now: datetime.datetime
) -> tuple[WebhookCert, str | None]:
    """The certificate to use and, when a new one was made, why. The Secret wins over the values
    (it is what the running webhook serves); the values cover the time before Helm wrote it."""
    reasons = []
    for where, cert in (("Secret", in_secret), ("values", in_values)):
        if cert is None:
            continue
        why = problem(cert, now)
        if why is None:
            return cert, None
        reasons.append(f"{where}: {why}")
    return generate(now), "; ".join(reasons) or "no certificate yet"
