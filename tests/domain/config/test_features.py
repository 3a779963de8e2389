# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The registry of sharing strategies (domain/config/features.py, DESIGN.md D20) is the one list:
what the GPUClass CRD's enum allows, what a GPUClass spec reads, what the opaque config decodes
for each device type, what the checkpoint accepts and what the example configs show are its names,
and no module of the package spells a strategy's name outside the strategy's own module."""

from __future__ import annotations

import ast
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

import deckhouse_gpu
from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.opaque_config import ConfigError, decode, encode
from deckhouse_gpu.domain.config.opaque_types import API_VERSION, DRIVER, ConfigType, kind_of
from deckhouse_gpu.domain.gpuclass.spec import InvalidSpec, parse_spec
from deckhouse_gpu.domain.prepare.checkpoint import SHARING_STRATEGIES

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(deckhouse_gpu.__file__).parent
STRATEGY_MODULES = {
    PACKAGE / "domain" / "config" / f"{type(strategy).__module__.rsplit('.', 1)[1]}.py": strategy.name
    for strategy in features.STRATEGIES
}


def crd_strategies() -> list[list[str]]:
    """The sharing.strategy enum of every served version of the GPUClass CRD."""
    crd = yaml.safe_load((ROOT / "crds" / "gpuclass.yaml").read_text())
    return [
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["sharing"]["properties"][
            "strategy"
        ]["enum"]
        for version in crd["spec"]["versions"]
    ]


def test_the_crd_the_gpuclass_spec_and_the_checkpoint_allow_the_registered_strategies() -> None:
    names = list(features.names())
    assert crd_strategies()
    assert all(enum == names for enum in crd_strategies())
    for name in names:  # a GPUClass may ask for each, and for nothing else
        sharing = parse_spec({"deviceKind": "Share", "sharing": {"strategy": name}}).sharing
        assert sharing is not None
        assert sharing.strategy == name
    with pytest.raises(InvalidSpec, match=" or ".join(names)):
        parse_spec({"deviceKind": "Share", "sharing": {"strategy": "Unregistered"}})
    assert tuple(names) == SHARING_STRATEGIES


def test_the_crd_gives_each_class_field_to_the_strategy_that_takes_it() -> None:
    """A GPUClass's spec.sharing fields are the strategies' ``class_fields``, and the CRD's rule
    for each lets it only with its strategy, as the controller's check does (spec.py)."""
    crd = yaml.safe_load((ROOT / "crds" / "gpuclass.yaml").read_text())
    owners = {field: strategy.name for strategy in features.STRATEGIES for field in strategy.class_fields}
    for version in crd["spec"]["versions"]:
        sharing = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["sharing"]
        assert set(sharing["properties"]) - {"strategy"} == set(owners)
        rules = {rule["fieldPath"]: rule["rule"] for rule in sharing["x-kubernetes-validations"]}
        assert rules == {
            f".{field}": f"!has(self.{field}) || self.strategy == '{name}'" for field, name in owners.items()
        }
        for field, name in owners.items():
            other = next(s.name for s in features.STRATEGIES if s.name != name)
            with pytest.raises(InvalidSpec, match=f"spec.sharing.{field}: only with strategy {name}"):
                parse_spec(
                    {
                        "deviceKind": "Share",
                        "sharing": {
                            "strategy": other,
                            field: sharing["properties"][field].get("enum", [1])[0],
                        },
                    }
                )


def opaque_parameters(node: Any) -> list[dict[str, Any]]:
    """Every ``opaque.parameters`` of the driver in a YAML document, however deep."""
    if isinstance(node, list):
        return [found for item in node for found in opaque_parameters(item)]
    if not isinstance(node, dict):
        return []
    opaque = node.get("opaque")
    here = [opaque["parameters"]] if isinstance(opaque, dict) and opaque.get("driver") == DRIVER else []
    return here + [found for value in node.values() for found in opaque_parameters(value)]


def test_the_example_configs_show_every_registered_strategy_and_decode() -> None:
    examples = ROOT / "docs" / "examples" / "claim-configs.yaml"
    found = [p for document in yaml.safe_load_all(examples.read_text()) for p in opaque_parameters(document)]
    shown = {features.strategy_of(s).name for p in found if (s := features.sharing_of(decode(p))) is not None}
    assert shown == set(features.names())


def parameters(kind: str, sharing: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "sharing": sharing}


@pytest.mark.parametrize(("device_type", "config_type"), list(features.DEVICE_TYPES.items()))
def test_a_config_of_each_device_type_decodes_exactly_the_strategies_registered_for_it(
    device_type: str, config_type: ConfigType
) -> None:
    kind = kind_of(config_type)
    for strategy in features.STRATEGIES:
        given = parameters(kind, {"strategy": strategy.name})
        if device_type in strategy.device_types:
            config = decode(given)
            sharing = features.sharing_of(config)
            assert isinstance(sharing, strategy.config)
            assert features.strategy_of(sharing) is strategy
            assert decode(encode(config)) == config
        else:
            with pytest.raises(ConfigError) as refused:
                decode(given)
            assert str(refused.value) == f"sharing.strategy: {strategy.refusal(device_type)}"
    allowed = ", ".join(s.name for s in features.strategies_for(device_type))
    with pytest.raises(ConfigError) as unknown:
        decode(parameters(kind, {"strategy": "Exclusive"}))
    assert str(unknown.value) == f'sharing.strategy: "Exclusive" is not one of {allowed}'


def test_a_strategys_settings_are_accepted_only_with_that_strategy() -> None:
    kind = kind_of(features.DEVICE_TYPES["Physical"])
    for strategy in features.STRATEGIES:
        for other in features.STRATEGIES:
            given = parameters(kind, {"strategy": other.name, strategy.field: {}})
            if other is strategy:
                assert isinstance(features.sharing_of(decode(given)), strategy.config)
                continue
            with pytest.raises(ConfigError) as refused:
                decode(given)
            assert f"sharing.{strategy.field}: set only with strategy {strategy.name}" in str(refused.value)


def test_nvidias_field_names_get_a_hint_to_ours() -> None:
    kind = kind_of(features.DEVICE_TYPES["Physical"])
    for strategy in features.STRATEGIES:
        with pytest.raises(ConfigError) as refused:
            decode(parameters(kind, {"strategy": strategy.name, strategy.nvidia_field: {}}))
        assert f"NVIDIA's {strategy.nvidia_field} is {strategy.field} here" in str(refused.value)


def test_shares_without_config_sit_only_beside_the_cards_default() -> None:
    default = features.card_policy(None)
    assert default == features.card_policy(features.CARD_DEFAULT)
    policies = {s.name: s.card_policy(s.read(_Quiet(), None, "")) for s in features.STRATEGIES}
    assert list(policies.values()).count(default) == 1  # only the default strategy at its defaults


def test_each_strategy_plans_a_device_and_keeps_the_plan_in_checkpoint_fields_of_its_own() -> None:
    """What prepare applies under a strategy is the strategy's: its plan names it, goes through
    the checkpoint's fields and back unchanged, and asks of the card what its settings ask."""
    owners: dict[str, str] = {}
    for strategy in features.STRATEGIES:
        config = strategy.read(_Quiet(), None, "")
        assert strategy.share_cap(config) is None  # its defaults cap no client below a share
        for share in (None, Fraction(25), Fraction(100)):
            plan = strategy.plan(config, share, 24576, None)
            assert plan.strategy == strategy.name
            assert features.planned_by(plan) is strategy
            written = strategy.plan_json(plan)
            assert strategy.plan_read(_Fields(written)) == plan
            assert strategy.plan_card_policy(plan) == strategy.card_policy(config)
            assert all(owners.setdefault(key, strategy.name) == strategy.name for key in written)
    device = {"request", "pool", "device", "card", "kind", "shareID", "profileID", "placementStart"}
    assert not set(owners) & (device | {"placementSize", "uuid", "sharing", "vfio"})


class _Fields:
    """A device record's fields as the checkpoint's decoder lends them to a strategy."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def value(self, key: str, kind: type) -> Any:
        found = self.record.get(key)
        assert found is None or isinstance(found, kind)
        return found

    def one_of(self, key: str, value: str, allowed: tuple[str, ...]) -> str:
        assert value in allowed
        return value


class _Quiet:
    """A reader for a strategy's defaults: nothing to read, so nothing may fail."""

    def fail(self, path: str, reason: str) -> None:
        raise AssertionError(f"{path}: {reason}")

    def fields(self, value: Any, path: str, owner: str, known: tuple[str, ...]) -> dict[str, Any] | None:
        return {}

    def integer(self, value: Any, path: str, low: int, high: int) -> int | None:
        raise AssertionError(path)


def spelled_names(path: Path, names: set[str] | None = None) -> list[tuple[int, str]]:
    """Every string constant of the module that is exactly a registered strategy's name (or one of
    ``names``)."""
    names = set(features.names()) if names is None else names
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_no_module_spells_a_strategys_name_but_the_strategys_own() -> None:
    assert set(STRATEGY_MODULES) <= set(PACKAGE.rglob("*.py"))
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "kubelet_gen" in path.parts:
            continue
        spelled = [(line, name) for line, name in spelled_names(path) if STRATEGY_MODULES.get(path) != name]
        if spelled:
            found[str(path.relative_to(PACKAGE))] = spelled
    assert found == {}
    for path, name in STRATEGY_MODULES.items():
        assert [value for _, value in spelled_names(path)] == [name]  # named once, by its NAME


def test_no_module_spells_a_card_settings_name_but_its_strategys_own() -> None:
    """The settle, the port and the simulated card take a card setting's name from the setting."""
    names = {setting.name for setting in features.CARD_SETTINGS}
    assert len(names) == len(features.CARD_SETTINGS)
    owners = {
        path: {strategy.card_setting.name}
        for path, strategy in zip(STRATEGY_MODULES, features.STRATEGIES, strict=True)
        if strategy.card_setting is not None
    }
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        spelled = [
            (line, name) for line, name in spelled_names(path, names) if name not in owners.get(path, ())
        ]
        if spelled:
            found[str(path.relative_to(PACKAGE))] = spelled
    assert found == {}


# Modules that import a strategy's own module besides the registry, each for a reason DESIGN.md
# D20 gives: every other module asks the registry, so a branch on a strategy's types (an
# isinstance of its plan, its settings built by hand) cannot come back unnoticed.
STRATEGY_IMPORTERS = {
    "domain/config/features.py": "the registry",
    "domain/prepare/mps.py": "MPS's control daemon, a host helper of its own",
    "services/prepare/prepare_sharing_steps.py": "the start-mps step and the MPS client's edits",
    "adapters/nvml/card_settings_nvidia.py": "an applier per card setting: NVML and nvidia-smi are hardware",
    "simulator/host/sim_card_settings.py": "the simulated card's readers by name, for tests",
    "ports/sharing.py": "ComputeMode, where the tests import it from",
}


def strategy_importers() -> set[str]:
    strategies = {type(strategy).__module__ for strategy in features.STRATEGIES}
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            imported = []
            if isinstance(node, ast.ImportFrom) and node.module:
                imported = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            if set(imported) & strategies and path not in STRATEGY_MODULES:
                found.add(str(path.relative_to(PACKAGE)))
    return found


def test_only_the_modules_d20_lists_import_a_strategys_own_module() -> None:
    assert strategy_importers() == set(STRATEGY_IMPORTERS)
    design = (ROOT / "docs" / "internal" / "DESIGN.md").read_text()
    d20 = design[design.index("### D20.") :]
    for module in STRATEGY_IMPORTERS:
        assert f"`{module}`" in d20, module
