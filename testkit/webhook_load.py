# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A steady load on gpu-dra-controller's admission webhook: its HTTPS server and review
(adapters/process/admission_server.py, services/allocation/config_admission.py) in a process of
their own, as in the pod, and clients sending AdmissionReviews at a fixed rate over kept-alive TLS
connections, as the API server does.

The rate is open-loop: request i is due at ``i / rate`` seconds, whether or not the earlier ones
have been answered, and its latency counts from that moment, so a server that falls behind shows
it in the percentiles instead of slowing the clients down. An error is a failed connection, a
status other than 200, or a review whose verdict is not the expected one.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import itertools
import json
import queue
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PATH = "/validate-opaque-config"
DRIVER = "gpu.deckhouse.io"
API = "gpu.deckhouse.io/v1alpha1"


def write_certificate(directory: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (tls.crt, tls.key); returns the certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-dra-controller.d8-gpu.svc")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    (directory / "tls.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return directory / "tls.crt"


def _claim(parameters: dict[str, Any], percent: str = "50") -> dict[str, Any]:
    exactly = {"deviceClassName": "gpu-shared", "capacity": {"requests": {"sharePercent": percent}}}
    config = [{"requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": parameters}}]
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}], "config": config}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": spec,
    }


def _review(index: int, obj: dict[str, Any]) -> bytes:
    request = {
        "uid": f"00000000-0000-4000-8000-{index:012d}",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": obj["kind"]},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": obj["kind"].lower() + "s"},
        "operation": "CREATE",
        "object": obj,
    }
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


MPS = {
    "strategy": "MPS",
    "mps": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "8Gi"},
}
# What the clients send in turn, with the verdict each must get.
REVIEWS: list[tuple[bytes, bool]] = [
    (_review(1, _claim({"apiVersion": API, "kind": "GPUConfig", "sharing": MPS})), True),
    (
        _review(2, _claim({"apiVersion": API, "kind": "GPUConfig", "sharing": {"strategy": "TimeSlicing"}})),
        True,
    ),
    (_review(3, _claim({"apiVersion": API, "kind": "GPUConfig", "sharing": MPS}, percent="25")), False),
    (
        _review(4, _claim({"apiVersion": API, "kind": "GPUConfig", "sharing": {"strategy": "Nonsense"}})),
        False,
    ),
]


@contextmanager
def webhook(directory: Path) -> Iterator[tuple[int, ssl.SSLContext]]:
    """The webhook serving on loopback in a process of its own: its port and a client TLS context."""
    certificate = write_certificate(directory)
    code = (
        "import sys, threading; from deckhouse_gpu.adapters.process.admission_server import serve_admission; "
        "from deckhouse_gpu.services.allocation.config_admission import review; "
        f"s = serve_admission(('127.0.0.1', 0), {str(certificate)!r}, {str(directory / 'tls.key')!r}, "
        "review); "
        "print(s.server_address[1], flush=True); sys.stdin.read(); s.shutdown()"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        context = ssl.create_default_context(cafile=str(certificate))
        yield port, context
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


@dataclass(frozen=True)
class LoadResult:
    sent: int
    errors: int
    latencies_ms: list[float]  # of the answered requests, from when each was due
    seconds: float
    first_error: str

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def load(
    port: int, context: ssl.SSLContext, rate: float, seconds: float, connections: int = 32
) -> LoadResult:
    """``rate`` reviews per second for ``seconds`` over up to ``connections`` connections."""
    due: queue.Queue[tuple[int, float] | None] = queue.Queue()
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client() -> None:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
        while (item := due.get()) is not None:
            index, at = item
            body, allowed = REVIEWS[index % len(REVIEWS)]
            try:
                connection.request("POST", PATH, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = json.loads(response.read())
                problem = "" if response.status == 200 else f"status {response.status}"
                if not problem and answer["response"]["allowed"] is not allowed:
                    problem = f"review {index % len(REVIEWS)}: allowed is {answer['response']['allowed']}"
            except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
                problem = f"{type(error).__name__}: {error}"
                connection.close()
            with lock:
                if problem:
                    errors.append(problem)
                else:
                    latencies.append((time.perf_counter() - at) * 1000)
        connection.close()

    workers = [threading.Thread(target=client, daemon=True) for _ in range(connections)]
    for worker in workers:
        worker.start()
    started = time.perf_counter()
    total = int(rate * seconds)
    for index in itertools.count():
        if index >= total:
            break
        at = started + index / rate
        time.sleep(max(0.0, at - time.perf_counter()))
        due.put((index, at))
    for _ in workers:
        due.put(None)
    for worker in workers:
        worker.join(timeout=60)
    return LoadResult(
        total, len(errors), latencies, time.perf_counter() - started, errors[0] if errors else ""
    )
