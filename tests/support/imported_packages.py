# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which heavy packages importing a command brings in: a fresh interpreter, so that nothing the test
process already loaded counts."""

from __future__ import annotations

import json
import subprocess
import sys


def heavy_packages_imported(module: str, packages: tuple[str, ...]) -> list[str]:
    """The top-level packages among ``packages`` that ``import module`` loads, sorted."""
    code = (
        f"import json, sys, {module}; "
        "tops = {name.split('.')[0] for name in sys.modules}; "
        f"print(json.dumps(sorted(tops & set({packages!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    found: list[str] = json.loads(done.stdout)
    return found
