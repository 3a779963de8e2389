# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The values Deckhouse would hand to Helm for given settings, built the way Deckhouse builds them.

The settings get their schema defaults (as Deckhouse's OpenAPI defaulting does), the hooks' pure
logic fills ``internal`` (derive_settings), and the result must validate against
``openapi/config-values.yaml`` and ``openapi/values.yaml``. The global values are the few that
Deckhouse provides and the templates read: the image registry and digests (the module's and the
platform's common ones), highAvailability.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft4Validator

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "openapi"
HOOKS = ROOT / "hooks"
if str(HOOKS) not in sys.path:
    sys.path.insert(0, str(HOOKS))

from lib.settings import derive  # noqa: E402

from tests.support.module_images import COMMON_IMAGES, RUNTIME_IMAGES  # noqa: E402

REGISTRY = "registry.example.com/deckhouse/ce/modules/gpu"
# The images werf builds; each gets a fake but well-formed digest.
IMAGES = tuple(sorted(RUNTIME_IMAGES))


def load_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = yaml.safe_load((OPENAPI / name).read_text())
    return schema


def problems(schema: dict[str, Any], value: Any) -> list[str]:
    found = Draft4Validator(schema).iter_errors(value)
    return sorted(
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}" for error in found
    )


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Fills defaults as the OpenAPI defaulting of Deckhouse does: an absent property with a
    ``default`` gets it, and objects are descended into (so nested defaults apply too)."""
    if schema.get("type") != "object" or not isinstance(value, dict):
        return value
    filled = dict(value)
    for name, child in (schema.get("properties") or {}).items():
        if name not in filled and "default" in child:
            filled[name] = copy.deepcopy(child["default"])
        if name in filled:
            filled[name] = with_defaults(child, filled[name])
    return filled


def digest(image: str) -> str:
    return "sha256:" + (image.encode().hex() * 8)[:64]


def module_values(
    settings: dict[str, Any] | None = None,
    *,
    cluster_ha: bool = False,
    registry: dict[str, str] | None = None,
    images: tuple[str, ...] = IMAGES,
) -> dict[str, Any]:
    config_schema, values_schema = load_schema("config-values.yaml"), load_schema("values.yaml")
    given = settings or {}
    assert problems(config_schema, given) == [], problems(config_schema, given)
    module = with_defaults(config_schema, copy.deepcopy(given))
    global_values: dict[str, Any] = {
        "highAvailability": cluster_ha,
        "modulesImages": {
            "registry": {"base": REGISTRY},
            "digests": {
                "gpu": {image: digest(image) for image in images},
                # The platform's own images every module may use (templates/_helpers.tpl gpu.commonImage).
                "common": {image: digest(image) for image in COMMON_IMAGES},
            },
        },
    }
    module["internal"] = {"settings": derive(module, global_values)}
    if registry is not None:
        module["registry"] = registry
    module = with_defaults(values_schema, module)
    assert problems(values_schema, module) == [], problems(values_schema, module)
    return {"global": global_values, "gpu": module}
