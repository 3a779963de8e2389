"""Hooks import their shared code as ``lib.*``, as Deckhouse runs them from ``hooks/``."""

from __future__ import annotations

import sys
from pathlib import Path

HOOKS = Path(__file__).resolve().parents[2] / "hooks"
if str(HOOKS) not in sys.path:
    sys.path.insert(0, str(HOOKS))
