# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The strict decoder (and the encoder) of the opaque configuration of ``gpu.deckhouse.io``.

The objects a config may be (``GpuConfig``, ``MigDeviceConfig``, ``VfioDeviceConfig`` of
``resource.gpu.deckhouse.io/v1alpha1``, or the same under their legacy spelling ``GPUConfig``,
``MIGConfig``, ``VFIOConfig`` of ``gpu.deckhouse.io/v1alpha1``) and what each field means are in
``opaque_types``; ``decode`` turns the ``parameters`` of an opaque config into one of them, from
either spelling, and ``encode`` writes one back in the canonical spelling.

Decoding is strict, as the kubelet plugin must not guess: an unknown field, a wrong type, a value
out of range, an unknown ``kind`` or a missing or other ``apiVersion`` is a ``ConfigError`` whose
message names the field path (``sharing.mps.defaultActiveThreadPercentage: 150 is above the
maximum 100``). A near miss of the spelling (a kind of the other group, another case, NVIDIA's
kind or field names) is refused too, with the right spelling in the message. ``null`` is the
same as a left-out field, as in Kubernetes. Pure: JSON data in, frozen dataclasses out; the
admission webhook and gpu-handler's prepare decode with this one code, so a config that slipped
past the webhook fails at prepare with the same message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.json_words import join, json_type, one_of, shown
from deckhouse_gpu.domain.config.opaque_types import (
    API_VERSION,
    KINDS,
    LEGACY_API_VERSION,
    SPELLINGS,
    ConfigType,
    DeviceConfig,
    DeviceType,
    GPUConfig,
    MIGConfig,
    Sharing,
    VFIOConfig,
    api_version_of,
    kind_of,
)

MAX_PARAMETERS_BYTES = 10 * 1024  # the API server's OpaqueParametersMaxLength


@dataclass(frozen=True)
class Problem:
    path: str  # dotted, relative to the parameters; "" is the parameters themselves
    reason: str

    def __str__(self) -> str:
        return f"{self.path or 'parameters'}: {self.reason}"


class ConfigError(ValueError):
    """The parameters are not a valid config; ``problems`` lists every finding with its path."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))

    def under(self, prefix: str) -> ConfigError:
        """The same findings with paths rooted at ``prefix`` (the parameters' place in an object)."""
        return ConfigError(Problem(join(prefix, p.path), p.reason) for p in self.problems)


def decode(parameters: Any) -> DeviceConfig:
    """The config in ``parameters`` (parsed JSON), or ``ConfigError`` naming everything wrong."""
    size = len(json.dumps(parameters, ensure_ascii=False, separators=(",", ":"), default=repr).encode())
    if size > MAX_PARAMETERS_BYTES:
        raise ConfigError([Problem("", f"{size} bytes, above the limit of {MAX_PARAMETERS_BYTES}")])
    reader = _Reader()
    config = reader.config(parameters)
    if reader.problems or config is None:
        raise ConfigError(reader.problems)
    return config


def encode(config: DeviceConfig) -> dict[str, Any]:
    """The canonical parameters of a config: ``decode(encode(c)) == c``."""
    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": kind_of(config)}
    sharing = features.sharing_of(config)
    if sharing is not None:
        strategy = features.strategy_of(sharing)
        out["sharing"] = {"strategy": strategy.name, strategy.field: strategy.write(sharing)}
    return out


# NVIDIA's DRA driver names these sharing fields differently; its users copy them.
_NVIDIA_FIELDS = {strategy.nvidia_field: strategy.field for strategy in features.STRATEGIES}


def _loose(kind: str) -> str:
    """A kind without case or the word "device": GPUConfig, GpuConfig and gpudeviceconfig alike."""
    return kind.lower().replace("device", "")


def _meant(kind: Any) -> ConfigType | None:
    """The config a kind names in either spelling, or nearly names (case, "Device"); None: none."""
    if not isinstance(kind, str):
        return None
    for kinds in SPELLINGS.values():
        for name, config in kinds.items():
            if _loose(name) == _loose(kind):
                return config
    return None


def _use_version(kind: Any) -> str:
    """What to set as apiVersion, for the kind given when it is one of either spelling."""
    version = api_version_of(kind) if isinstance(kind, str) else None
    if version == API_VERSION:
        return f"for kind {kind} use {API_VERSION}"
    if version == LEGACY_API_VERSION:
        canonical = kind_of(SPELLINGS[version][kind])
        return f"for kind {kind} use {LEGACY_API_VERSION} (or {API_VERSION} with kind {canonical})"
    return f"use {API_VERSION} (or the older {LEGACY_API_VERSION})"


def _wrong_kind(kind: Any, version: str) -> str:
    """Why ``kind`` is not a kind of ``version``, naming the right spelling when it is a near miss."""
    kinds = SPELLINGS[version]
    meant = _meant(kind)
    if meant is None or not isinstance(kind, str):
        return f"{shown(kind)} is not one of {one_of(kinds)}"
    other = api_version_of(kind)
    if other is not None and other != version:
        return (
            f"{shown(kind)} is a kind of {other}, not of {version}: "
            f"use kind {kind_of(meant, version)}, or apiVersion {other}"
        )
    right = kind_of(meant, version)
    if right.lower() == kind.lower():
        return f"{shown(kind)} is not one of {one_of(kinds)}: kinds are case-sensitive, use {right}"
    return f"{shown(kind)} is not one of {one_of(kinds)}: did you mean {right}?"


class _Reader:
    """Walks the JSON, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: str, reason: str) -> None:
        self.problems.append(Problem(path, reason))

    def fields(self, value: Any, path: str, owner: str, known: tuple[str, ...]) -> dict[str, Any] | None:
        """The object's fields without nulls, reporting unknown ones; None when not an object."""
        if not isinstance(value, Mapping):
            self.fail(path, f"must be an object, not {json_type(value)}")
            return None
        for key in value:
            if key not in known:
                ours = _NVIDIA_FIELDS.get(str(key))
                hint = f"; NVIDIA's {key} is {ours} here" if ours in known else ""
                self.fail(join(path, str(key)), f"unknown field ({owner} has {one_of(known)}{hint})")
        return {key: item for key, item in value.items() if key in known and item is not None}

    def config(self, parameters: Any) -> DeviceConfig | None:
        if not isinstance(parameters, Mapping):
            self.fail("", f"must be a JSON object, not {json_type(parameters)}")
            return None
        version, kind = parameters.get("apiVersion"), parameters.get("kind")
        config = self.envelope(version, kind)
        if self.problems or config is None:  # another version or kind: the rest means nothing
            return None
        kind = str(kind)  # the spelling given, to name the object in messages
        if config is VFIOConfig:
            self.fields(parameters, "", kind, ("apiVersion", "kind"))
            return VFIOConfig()
        fields = self.fields(parameters, "", kind, ("apiVersion", "kind", "sharing")) or {}
        device = next(name for name, meant in features.DEVICE_TYPES.items() if meant is config)
        sharing = self.sharing(fields["sharing"], "sharing", device) if "sharing" in fields else None
        return MIGConfig(sharing) if config is MIGConfig else GPUConfig(sharing)

    def envelope(self, version: Any, kind: Any) -> ConfigType | None:
        """The config ``apiVersion`` and ``kind`` name together, or None with the problems found."""
        kinds = SPELLINGS.get(version) if isinstance(version, str) else None
        if version is None:
            self.fail("apiVersion", f"required, {_use_version(kind)}")
        elif kinds is None and isinstance(version, str) and version.lower() in SPELLINGS:
            self.fail(
                "apiVersion",
                f"{shown(version)} is not supported: it is case-sensitive, use {version.lower()}",
            )
        elif kinds is None:
            self.fail("apiVersion", f"{shown(version)} is not supported, {_use_version(kind)}")
        if kinds is not None:
            if kind is None:
                self.fail("kind", f"required, one of {one_of(kinds)}")
            elif isinstance(kind, str) and kind in kinds:
                return kinds[kind]
            else:
                self.fail("kind", _wrong_kind(kind, version))
        elif kind is None:
            self.fail("kind", f"required, one of {one_of(KINDS)}")
        elif not isinstance(kind, str) or api_version_of(kind) is None:
            self.fail("kind", _wrong_kind(kind, API_VERSION))
        return None

    def sharing(self, value: Any, path: str, device: DeviceType) -> Sharing | None:
        """The ``sharing`` of a config of ``device``: one of the strategies the registry allows it."""
        allowed = features.strategies_for(device)
        strategies = [strategy.name for strategy in allowed]
        fields = self.fields(value, path, "sharing", ("strategy", *(strategy.field for strategy in allowed)))
        if fields is None:
            return None
        strategy = fields.get("strategy")
        where = join(path, "strategy")
        named = features.named(strategy)
        if strategy is None:
            self.fail(where, f"required, one of {one_of(strategies)}")
        elif named is not None and named not in allowed:
            self.fail(where, named.refusal(device))
        elif strategy not in strategies:
            self.fail(where, f"{shown(strategy)} is not one of {one_of(strategies)}")
        for other in allowed:
            if other.field in fields and strategy in strategies and strategy != other.name:
                self.fail(join(path, other.field), f"set only with strategy {other.name}, not {strategy}")
        read = {
            other.name: other.read(self, fields.get(other.field), join(path, other.field))
            for other in allowed
        }
        return read.get(strategy) if isinstance(strategy, str) else None

    def integer(self, value: Any, path: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, not {json_type(value)}")
            return None
        if value < low:
            self.fail(path, f"{value} is below the minimum {low}")
        elif value > high:
            self.fail(path, f"{value} is above the maximum {high}")
        return value if low <= value <= high else None
