"""Hooks import their shared code as ``lib.*``, as Deckhouse runs them from ``hooks/``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
