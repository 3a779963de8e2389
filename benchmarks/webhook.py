# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The opaque-config admission webhook under a steady load (testkit/webhook_load.py): GPU_WEBHOOK_RATE
reviews per second (default 200) for GPU_WEBHOOK_SECONDS (default 30) over 32 kept-alive TLS
connections, the server in a process of its own; latency from when each request was due."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchmarks.common import line
from testkit.webhook_load import load, webhook

RATE = float(os.environ.get("GPU_WEBHOOK_RATE", "200"))
SECONDS = float(os.environ.get("GPU_WEBHOOK_SECONDS", "30"))


def run() -> None:
    print(f"admission webhook: {RATE:g} reviews/s for {SECONDS:g} s (GPU_WEBHOOK_RATE, GPU_WEBHOOK_SECONDS)")
    with (
        tempfile.TemporaryDirectory(prefix="gpu-bench-webhook-") as tmp,
        webhook(Path(tmp)) as (port, context),
    ):
        result = load(port, context, RATE, SECONDS)
    line("reviews sent", result.sent, "", 0)
    line("answered per second", len(result.latencies_ms) / result.seconds, "/s")
    line("errors (connection, status, wrong verdict)", result.errors, "", 0)
    if result.first_error:
        print(f"  first error: {result.first_error}")
    for label, fraction in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        line(f"latency {label}", result.percentile(fraction), "ms", 2)
