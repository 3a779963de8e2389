# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A kubeconfig file pointing at a local fake API server."""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_TOKEN = "test-token"


def write_kubeconfig(directory: Path, server_url: str, token: str = DEFAULT_TOKEN) -> str:
    path = directory / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
        "users": [{"name": "tester", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config))
    return str(path)
