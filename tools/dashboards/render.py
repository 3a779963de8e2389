# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which dashboards exist and where they go: monitoring/grafana-dashboards/<folder>/<name>.json,
the folder being the Grafana folder Deckhouse puts them in (``main`` is "Main")."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from . import cluster, internals, node
from .kit import Board

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "monitoring" / "grafana-dashboards"
DASHBOARDS: dict[str, Callable[[], Board]] = {
    "main/gpu-cluster.json": cluster.build,
    "main/gpu-node.json": node.build,
    "main/gpu-internals.json": internals.build,
}


def render() -> dict[str, str]:
    """Relative path -> the dashboard's JSON text."""
    return {path: build().to_json() for path, build in DASHBOARDS.items()}


def write(directory: Path) -> list[Path]:
    written = []
    for relative, text in render().items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gen-dashboards", description="Writes the module's Grafana dashboards."
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"default: {OUTPUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    for path in write(args.output):
        print(path)
    return 0
