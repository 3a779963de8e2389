# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The throwaway PKI of a real test cluster (testkit/real_cluster.py): a CA for every serving and
client certificate, and the key that signs service-account tokens."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Credential:
    crt: Path
    key: Path


class Pki:
    """A throwaway CA and the service-account signing key of one cluster."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-test-ca")])
        now = datetime.datetime.now(datetime.UTC)
        self._validity = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2))
        self._ca = (
            x509.CertificateBuilder()
            .subject_name(self._ca_name)
            .issuer_name(self._ca_name)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._validity[0])
            .not_valid_after(self._validity[1])
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
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = directory / "ca.crt"
        self.ca_key = directory / "ca.key"
        self.ca.write_bytes(self._ca.public_bytes(serialization.Encoding.PEM))
        self.ca_key.write_bytes(_private_pem(self._ca_key))
        # kube-apiserver signs service-account tokens with RSA or ECDSA; RSA as in kubeadm.
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key = directory / "sa.key"
        self.sa_pub = directory / "sa.pub"
        self.sa_key.write_bytes(_private_pem(sa_key))
        self.sa_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def issue(
        self,
        name: str,
        common_name: str,
        organizations: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> Credential:
        """A leaf for a client (no ``hosts``) or a server (``hosts``: IPs and DNS names)."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(subject))
            .issuer_name(self._ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._validity[0])
            .not_valid_after(self._validity[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if hosts:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(host) for host in hosts]), critical=False
            )
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        certificate = builder.sign(self._ca_key, hashes.SHA256())
        credential = Credential(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        credential.crt.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        credential.key.write_bytes(_private_pem(key))
        return credential


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
