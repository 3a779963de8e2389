# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The dry runs' files: PhysicalGPUs read from a manifest, objects written as YAML documents.

A module of its own so that a node's gpu-handler, which never runs a dry run, never loads PyYAML
(about 1 MiB of every GPU node's memory)."""

from __future__ import annotations

from typing import Any, TextIO

import yaml

from deckhouse_gpu.adapters.files.manifest_files import load_objects
from deckhouse_gpu.domain.inventory import physicalgpu as pg


def load_physicalgpus(path: str) -> list[dict[str, Any]]:
    return load_objects(path, pg.KIND)


def write_yaml(objects: list[dict[str, Any]], out: TextIO) -> None:
    out.write(yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True))
