# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ModuleConfig settings schema: what an operator may write, what is rejected and why, the
defaults a bare ``enabled: true`` gets, and the Russian twin that Deckhouse shows in its docs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.module_values import problems, with_defaults

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "openapi"


def load(name: str) -> dict[str, Any]:
    document = yaml.safe_load((OPENAPI / name).read_text())
    assert isinstance(document, dict)
    return document


CONFIG = load("config-values.yaml")
VALUES = load("values.yaml")


def examples(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any], Any]]:
    given = list(schema.get("x-examples", [])) + ([schema["x-example"]] if "x-example" in schema else [])
    for example in given:
        yield path or "<root>", schema, example
    for name, child in (schema.get("properties") or {}).items():
        yield from examples(child, f"{path}.{name}" if path else name)


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from nodes(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict) and (
        schema["items"].get("properties") or "description" in schema["items"]
    ):
        yield from nodes(schema["items"], f"{path}[]")  # a list of objects: its fields are settings too


@pytest.mark.parametrize(
    ("path", "example"),
    [pytest.param(path, example, id=f"{path}-{i}") for i, (path, _, example) in enumerate(examples(CONFIG))],
)
def test_every_example_is_valid(path: str, example: Any) -> None:
    schema = dict(nodes(CONFIG))[path if path != "<root>" else ""]
    assert problems(schema, example) == []


def test_a_bare_module_config_gets_safe_defaults() -> None:
    settings = with_defaults(CONFIG, {})
    assert problems(CONFIG, settings) == []
    assert settings == {
        "logLevel": "Info",
        "managedNodes": {"optOutLabel": "gpu.deckhouse.io/disabled"},
        "nvidiaDriverRoot": "/",
        "cdiRoot": "/etc/cdi",
        "dra": {
            "partitionableDevices": "Auto",
            "consumableCapacity": "Auto",
            "deviceTaints": "Auto",
            "migOffers": "Auto",
            "migProfiles": [],
        },
        "health": {"gracePeriodSeconds": 30},
        "monitoring": {"dcgm": {"enabled": True}},
    }
    # No default: when unset, the module follows the cluster's global mode.
    assert "highAvailability" not in settings


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({"logLevel": "Verbose"}, "logLevel: 'Verbose' is not one of"),
        ({"highAvailability": "yes"}, "highAvailability: 'yes' is not of type 'boolean'"),
        ({"nvidiaDriverRoot": "run/nvidia/driver"}, "nvidiaDriverRoot: 'run/nvidia/driver' does not match"),
        ({"nvidiaDriverRoot": "/run//driver"}, "nvidiaDriverRoot: '/run//driver' does not match"),
        (
            {"nvidiaDriverRoot": "/run/nvidia/driver/"},
            "nvidiaDriverRoot: '/run/nvidia/driver/' does not match",
        ),
        ({"cdiRoot": "/tmp/cdi"}, "cdiRoot: '/tmp/cdi' does not match"),
        ({"dra": {"partitionableDevices": "auto"}}, "dra.partitionableDevices: 'auto' is not one of"),
        ({"dra": {"consumableCapacity": "On"}}, "dra.consumableCapacity: 'On' is not one of"),
        ({"dra": {"deviceTaints": "off"}}, "dra.deviceTaints: 'off' is not one of"),
        (
            {"health": {"gracePeriodSeconds": -1}},
            "health.gracePeriodSeconds: -1 is less than the minimum of 0",
        ),
        (
            {"health": {"gracePeriodSeconds": 7200}},
            "health.gracePeriodSeconds: 7200 is greater than the maximum",
        ),
        (
            {"health": {"gracePeriodSeconds": "30s"}},
            "health.gracePeriodSeconds: '30s' is not of type 'integer'",
        ),
        ({"monitoring": {"dcgm": {"enabled": "false"}}}, "monitoring.dcgm.enabled: 'false' is not of type"),
        ({"managedNodes": {"optOutLabel": "no gpu"}}, "managedNodes.optOutLabel: 'no gpu' does not match"),
        (
            {"managedNodes": {"optOutLabel": "Example.com/x"}},
            "managedNodes.optOutLabel: 'Example.com/x' does not",
        ),
        ({"managedNodes": {"optOutLabel": "a/" + "x" * 64}}, "managedNodes.optOutLabel: 'a/xxxxx"),
        ({"managedNodes": {"nodeSelector": {"role": 1}}}, "managedNodes.nodeSelector.role: 1 is not of type"),
    ],
)
def test_invalid_settings_are_rejected_naming_the_field(settings: dict[str, Any], complaint: str) -> None:
    found = problems(CONFIG, settings)
    assert len(found) == 1, found
    assert found[0].startswith(complaint), found


@pytest.mark.parametrize(
    "label", ["gpu.deckhouse.io/disabled", "no-gpu", "example.com/no_gpu.v2", "a/" + "x" * 63]
)
def test_valid_label_keys_are_accepted(label: str) -> None:
    assert problems(CONFIG, {"managedNodes": {"optOutLabel": label}}) == []


def test_enum_values_are_camel_case_and_high_availability_has_no_default() -> None:
    # Both are rules of Deckhouse's module linter (dmt).
    for path, node in nodes(CONFIG):
        for value in node.get("enum", []):
            assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", value), f"{path}: enum value {value!r}"
    assert "default" not in CONFIG["properties"]["highAvailability"]


def test_every_setting_is_described_in_english_and_russian() -> None:
    russian = load("doc-ru-config-values.yaml")
    twin = dict(nodes(russian))
    english = [(path, node) for path, node in nodes(CONFIG) if path]
    assert sorted(path for path, _ in english) == sorted(path for path in twin if path)
    for path, node in english:
        assert node.get("description", "").strip(), f"{path} has no description"
        assert twin[path].get("description", "").strip(), f"{path} has no Russian description"
        assert re.search("[\u0400-\u04ff]", twin[path]["description"]), (
            f"{path}: the Russian text is not Russian"
        )
    for path, node in twin.items():
        assert set(node) <= {"description", "properties", "items"}, (
            f"{path}: the twin holds only descriptions"
        )


def test_values_extend_the_settings_and_declare_the_hook_values() -> None:
    assert VALUES["x-extend"] == {"schema": "config-values.yaml"}
    internal = VALUES["properties"]["internal"]
    assert internal["default"] == {}
    merged = with_defaults(VALUES, {"internal": {}})
    assert merged["internal"] == {
        "settings": {},
        "webhookCert": {"ca": "", "crt": "", "key": ""},
    }
    assert problems(VALUES, merged) == []
    assert problems(VALUES, {"internal": {"settings": {"logLevel": "trace"}}}) == [
        "internal.settings.logLevel: 'trace' is not one of ['debug', 'info', 'warning', 'error']"
    ]


@pytest.mark.parametrize("page", ["CONFIGURATION.md", "CONFIGURATION.ru.md"])
def test_the_module_config_in_the_docs_is_valid(page: str) -> None:
    text = (ROOT / "docs" / page).read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    config = yaml.safe_load(block.group(1))
    assert (config["kind"], config["metadata"]["name"]) == ("ModuleConfig", "gpu")
    assert problems(CONFIG, config["spec"]["settings"]) == []
    assert "<!-- SCHEMA -->" in text  # where the site renders the settings from the schema
