# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The webhook_cert hook: a certificate is generated once, kept while usable, renewed in time,
and a broken Secret heals instead of blocking the module."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from deckhouse import hook

from lib import webhook_cert as wc
from tests.hooks.conftest import hook_config, load_hook

HOOK = load_hook("webhook_cert")
NOW = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture(scope="module")
def issued() -> wc.WebhookCert:
    return wc.generate(NOW)


def secret_entry(cert: wc.WebhookCert) -> dict[str, Any]:
    encode = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    return {"filterResult": {"ca": encode(cert.ca), "crt": encode(cert.crt), "key": encode(cert.key)}}


def run(
    monkeypatch: pytest.MonkeyPatch,
    secret: list[Any],
    values: dict[str, Any] | None = None,
    now: datetime.datetime = NOW,
) -> dict[str, str]:
    monkeypatch.setattr(HOOK, "clock", lambda: now)
    context = [{"binding": "renew", "type": "Schedule", "snapshots": {"webhook_secret": secret}}]
    initial = {"global": {}, "gpu": {"internal": {"webhookCert": values or {}}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=initial)
    cert: dict[str, str] = out.values["gpu"]["internal"]["webhookCert"]
    return cert


def test_a_generated_certificate_serves_the_service_and_chains_to_its_ca(tmp_path: Path) -> None:
    issued = wc.generate(datetime.datetime.now(datetime.UTC))  # the TLS stack checks the real clock
    assert wc.problem(issued, datetime.datetime.now(datetime.UTC)) is None
    leaf = x509.load_pem_x509_certificate(issued.crt.encode())
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == list(wc.DNS_NAMES)
    assert "gpu-dra-controller.d8-gpu.svc" in wc.DNS_NAMES
    # A client that trusts only the CA accepts the server by the service's name, and no other.
    (tmp_path / "tls.crt").write_text(issued.crt)
    (tmp_path / "tls.key").write_text(issued.key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=issued.ca)
    client.verify_flags |= ssl.VERIFY_X509_STRICT
    assert handshake(client, server, "gpu-dra-controller.d8-gpu.svc") == "ok"
    assert "Hostname mismatch" in handshake(client, server, "gpu-dra-controller.other.svc")


def handshake(client: ssl.SSLContext, server: ssl.SSLContext, hostname: str) -> str:
    """A TLS handshake in memory, the way the API server dials the webhook."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    near = client.wrap_bio(to_client, to_server, server_hostname=hostname)
    far = server.wrap_bio(to_server, to_client, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, tls in (("client", near), ("server", far)):
            if done[side]:
                continue
            try:
                tls.do_handshake()
                done[side] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as error:
                return str(error)
        if all(done.values()):
            return "ok"
    return "no progress"


def test_a_usable_certificate_in_the_secret_is_kept(
    monkeypatch: pytest.MonkeyPatch, issued: wc.WebhookCert
) -> None:
    later = NOW + datetime.timedelta(days=200)
    assert run(monkeypatch, [secret_entry(issued)], now=later) == issued.as_values()


def test_without_a_secret_the_values_are_kept_until_helm_writes_it(
    monkeypatch: pytest.MonkeyPatch, issued: wc.WebhookCert
) -> None:
    assert run(monkeypatch, [], issued.as_values()) == issued.as_values()


def test_the_secret_wins_over_other_values(monkeypatch: pytest.MonkeyPatch, issued: wc.WebhookCert) -> None:
    other = wc.generate(NOW)
    assert run(monkeypatch, [secret_entry(issued)], other.as_values()) == issued.as_values()


def test_nothing_anywhere_generates_one(monkeypatch: pytest.MonkeyPatch) -> None:
    cert = wc.WebhookCert(**run(monkeypatch, []))
    assert wc.problem(cert, NOW) is None


def test_it_is_renewed_thirty_days_before_it_expires(
    monkeypatch: pytest.MonkeyPatch, issued: wc.WebhookCert
) -> None:
    expires = x509.load_pem_x509_certificate(issued.crt.encode()).not_valid_after_utc
    almost = expires - datetime.timedelta(days=31)
    assert run(monkeypatch, [secret_entry(issued)], now=almost) == issued.as_values()
    due = expires - datetime.timedelta(days=29)
    assert wc.problem(issued, due) == f"the certificate expires on {expires:%Y-%m-%d}"
    renewed = run(monkeypatch, [secret_entry(issued)], now=due)
    assert renewed != issued.as_values()
    assert wc.problem(wc.WebhookCert(**renewed), due) is None


def _swap(cert: wc.WebhookCert, **fields: str) -> wc.WebhookCert:
    return wc.WebhookCert(**{**cert.as_values(), **fields})


def test_each_kind_of_broken_certificate_is_named(issued: wc.WebhookCert) -> None:
    other = wc.generate(NOW)
    assert (
        wc.problem(_swap(issued, key=other.key), NOW) or ""
    ) == "the key does not belong to the certificate"
    assert (wc.problem(_swap(issued, ca=other.ca), NOW) or "") == "the certificate is not signed by the CA"
    assert (wc.problem(_swap(issued, crt=issued.crt[:200]), NOW) or "").startswith("unreadable PEM")
    assert wc.problem(issued, NOW - datetime.timedelta(days=1)) == "the CA is not valid yet"


@pytest.mark.parametrize(
    "entry",
    [
        {"filterResult": {"ca": "not base64!", "crt": "x", "key": "y"}},
        {"filterResult": {"ca": base64.b64encode(b"\xff\xfe").decode(), "crt": "eA==", "key": "eQ=="}},
        {"filterResult": {"ca": None}},
        {"filterResult": None},
        {"filterResult": {"ca": "eA==", "crt": "eA==", "key": "eA=="}},  # base64 of "x": not PEM
        "not an object",
    ],
)
def test_a_broken_secret_heals_with_a_new_certificate(monkeypatch: pytest.MonkeyPatch, entry: Any) -> None:
    cert = wc.WebhookCert(**run(monkeypatch, [entry]))
    assert wc.problem(cert, NOW) is None


def test_the_reason_for_a_new_certificate_is_given(issued: wc.WebhookCert) -> None:
    broken = _swap(issued, key=wc.generate(NOW).key)
    _, why = wc.choose(broken, None, NOW)
    assert why == "Secret: the key does not belong to the certificate"
    _, why = wc.choose(None, None, NOW)
    assert why == "no certificate yet"
    kept, why = wc.choose(issued, None, NOW)
    assert (kept, why) == (issued, None)


def test_the_hook_binds_its_secret_and_a_daily_schedule() -> None:
    config = hook_config("webhook_cert")
    (secret,) = config["kubernetes"]
    assert (secret["kind"], secret["nameSelector"]["matchNames"]) == ("Secret", [wc.SECRET])
    assert secret["namespace"]["nameSelector"]["matchNames"] == [wc.NAMESPACE]
    (schedule,) = config["schedule"]
    assert schedule["crontab"] == "17 3 * * *"
    assert secret["group"] == schedule["group"]  # one group: every run sees the Secret's snapshot
