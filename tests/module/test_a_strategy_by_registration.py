# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A sharing strategy added by its module and its registration alone (DESIGN.md D20, "What a change
touches") flows through what asks the registry, with no edit of those modules: a GPUClass asks for
it and renders its config, the opaque config decodes and encodes it, its plan keeps its card
setting, and the settle gives a simulated card that setting and gives it back.

``Rotation`` is made up for the test: its card setting (``fanMode``) is one no strategy had, so on
real hardware it would also need its applier in adapters/nvml/card_settings_nvidia.py, as D20
says (and the adapter refuses it until then, tests/adapters/nvml/test_card_settings_nvidia.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar
from unittest.mock import create_autospec

import pytest

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.json_words import join
from deckhouse_gpu.domain.config.opaque_config import decode, encode
from deckhouse_gpu.domain.config.opaque_types import API_VERSION, GPUConfig
from deckhouse_gpu.domain.config.sharing_strategy import (
    FieldReader,
    PlanReader,
    SharingConfig,
    SharingPlan,
    SharingStrategy,
)
from deckhouse_gpu.domain.gpuclass.render import opaque_config, summary
from deckhouse_gpu.domain.gpuclass.spec import InvalidSpec, parse_spec
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import card_settings, device_sharing
from deckhouse_gpu.ports.sharing import MpsDaemons
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.services.prepare.sharing_settle import settle_cards
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings

NAME = "Rotation"
CARD = "0000:17:00.0"
FAN = CardSetting("fanMode", "fan", "Auto", ("Auto", "Quiet", "Max"), frozenset({"Quiet", "Max"}))


@dataclass(frozen=True)
class Rotation(SharingConfig):
    fan: str = "Auto"


@dataclass(frozen=True)
class RotationPlan(SharingPlan):
    strategy: ClassVar[str] = NAME
    fan: str = "Auto"


class RotationStrategy:
    name = NAME
    field = "rotation"
    nvidia_field = "rotationConfig"
    device_types: tuple[str, ...] = ("Physical",)
    config: type[SharingConfig] = Rotation
    card_setting: CardSetting | None = FAN
    class_fields: Mapping[str, str] = {"fan": "the fan is a setting of the whole card"}

    def refusal(self, device_type: str) -> str:
        return f"{NAME} is not available for {device_type} devices"

    def read(self, reader: FieldReader, value: Any, path: str) -> Rotation:
        fields = (reader.fields(value, path, self.field, ("fan",)) if value is not None else {}) or {}
        fan = fields.get("fan", FAN.default)
        if fan not in FAN.values:
            reader.fail(join(path, "fan"), f"{fan!r} is not one of {', '.join(FAN.values)}")
            return Rotation()
        return Rotation(fan)

    def write(self, config: SharingConfig) -> dict[str, Any]:
        assert isinstance(config, Rotation)
        return {"fan": config.fan}

    def card_policy(self, config: SharingConfig) -> str:
        assert isinstance(config, Rotation)
        return f"{NAME} (fan {config.fan})"

    def share_cap(self, config: SharingConfig) -> tuple[str, int] | None:
        return None

    def plan(
        self, config: SharingConfig, share: Fraction | None, memory_mib: int | None, asked_mib: int | None
    ) -> RotationPlan:
        assert isinstance(config, Rotation)
        return RotationPlan(config.fan)

    def plan_json(self, plan: SharingPlan) -> dict[str, Any]:
        assert isinstance(plan, RotationPlan)
        return {"rotationFan": plan.fan}

    def plan_read(self, reader: PlanReader) -> RotationPlan:
        return RotationPlan(reader.value("rotationFan", str) or FAN.default)

    def plan_card_policy(self, plan: SharingPlan) -> str:
        assert isinstance(plan, RotationPlan)
        return self.card_policy(Rotation(plan.fan))

    def describe(self, plan: SharingPlan) -> str:
        assert isinstance(plan, RotationPlan)
        return f"{NAME} with fan {plan.fan}"

    def card_value(self, plan: SharingPlan) -> str:
        assert isinstance(plan, RotationPlan)
        return plan.fan

    def class_settings(self, fields: dict[str, Any], path: str, problems: list[str]) -> Rotation | None:
        fan = fields.get("fan")
        if fan is None:
            return None
        if fan not in FAN.values:
            problems.append(f"{join(path, 'fan')}: {fan!r} is not one of {', '.join(FAN.values)}")
            return None
        return Rotation(fan)

    def class_words(self, config: SharingConfig | None) -> str:
        return f"{NAME} share"


ROTATION: SharingStrategy = RotationStrategy()


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its line in features.py (CARD_SETTINGS follows STRATEGIES there)."""
    monkeypatch.setattr(features, "STRATEGIES", (*features.STRATEGIES, ROTATION))
    monkeypatch.setattr(features, "CARD_SETTINGS", (*features.CARD_SETTINGS, FAN))


def test_a_gpuclass_asks_for_it_and_renders_its_config() -> None:
    spec = parse_spec({"deviceKind": "Share", "sharing": {"strategy": NAME, "fan": "Max"}})
    [config] = opaque_config(spec)
    assert config["opaque"]["parameters"]["sharing"] == {"strategy": NAME, "rotation": {"fan": "Max"}}
    assert summary(spec) == "Rotation share, of any model"
    with pytest.raises(InvalidSpec, match=r"spec.sharing.fan: only with strategy Rotation \(the fan is"):
        parse_spec({"deviceKind": "Share", "sharing": {"strategy": "MPS", "fan": "Max"}})
    with pytest.raises(InvalidSpec, match="is not TimeSlicing or MPS or Rotation"):
        parse_spec({"deviceKind": "Share", "sharing": {"strategy": "Spinning"}})


def test_the_opaque_config_decodes_and_encodes_it() -> None:
    parameters = {
        "apiVersion": API_VERSION,
        "kind": "GpuConfig",
        "sharing": {"strategy": NAME, "rotation": {"fan": "Quiet"}},
    }
    config = decode(parameters)
    assert config == GPUConfig(Rotation("Quiet"))
    assert encode(config) == parameters


def test_its_plan_asks_its_card_setting_and_the_settle_makes_it_and_gives_it_back() -> None:
    plan = device_sharing(GPUConfig(Rotation("Max")), Fraction(50), 24576)
    assert plan == RotationPlan("Max")
    device = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", CARD, "Physical", share_id="s1", sharing=plan)
    entry = ClaimEntry("u1", "ns", "c1", "PrepareCompleted", (device,))
    assert card_settings([entry]) == {CARD: {"fanMode": "Max"}}

    settings = SimCardSettings([CARD])
    host = SharingHost(settings, create_autospec(MpsDaemons, instance=True), "/plugin", "w1")
    settle_cards([CARD], Checkpoint("boot", {"u1": entry}), host, strict=True)
    assert settings.read(CARD, FAN) == "Max"
    settle_cards([CARD], Checkpoint("boot"), host, strict=True)  # the last share gone
    assert settings.read(CARD, FAN) == "Auto"
    assert [call for call in settings.calls if call[0] == FAN.name] == [
        ("fanMode", CARD, "Max"),
        ("fanMode", CARD, "Auto"),
    ]
