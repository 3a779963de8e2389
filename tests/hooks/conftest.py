# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Hooks import their shared code as ``lib.*``, as Deckhouse runs them from ``hooks/``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

HOOKS = Path(__file__).resolve().parents[2] / "hooks"
if str(HOOKS) not in sys.path:
    sys.path.insert(0, str(HOOKS))


def load_hook(name: str) -> ModuleType:
    """A hook file as a module (hook files are scripts, not importable by name)."""
    spec = importlib.util.spec_from_file_location(f"gpu_hook_{name}", HOOKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hook_config(name: str) -> Any:
    """What the hook prints for ``--config``, as addon-operator runs it once to learn its bindings;
    the hook file must also be executable, or Deckhouse never runs it."""
    assert os.access(HOOKS / f"{name}.py", os.X_OK), f"{name}.py is not executable"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOKS), *sys.path])}
    command = [sys.executable, str(HOOKS / f"{name}.py"), "--config"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=True)
    return yaml.safe_load(done.stdout)
