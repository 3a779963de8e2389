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

from deckhouse_gpu.domain.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.domain.config.opaque_types import (
    API_VERSION,
    KINDS,
    LEGACY_API_VERSION,
    MPS,
    SPELLINGS,
    ConfigType,
    DeviceConfig,
    GPUConfig,
    MIGConfig,
    Sharing,
    TimeSliceInterval,
    TimeSlicing,
    VFIOConfig,
    api_version_of,
    kind_of,
)

MAX_PARAMETERS_BYTES = 10 * 1024  # the API server's OpaqueParametersMaxLength
MIB = 1024 * 1024


_NO_MIG_TIME_SLICING = (
    "TimeSlicing is not available for MIG devices: the time-slice interval is a setting of the whole"
    " card, and processes in one MIG instance are time-sliced anyway; use MPS"
)


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
        return ConfigError(Problem(_join(prefix, p.path), p.reason) for p in self.problems)


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
    sharing = getattr(config, "sharing", None)
    if isinstance(sharing, TimeSlicing):
        out["sharing"] = {"strategy": "TimeSlicing", "timeSlicing": {"interval": str(sharing.interval)}}
    elif isinstance(sharing, MPS):
        mps: dict[str, Any] = {}
        if sharing.default_active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.default_active_thread_percentage
        if sharing.default_pinned_device_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = sharing.default_pinned_device_memory_limit.text
        out["sharing"] = {"strategy": "MPS", "mps": mps}
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path and key else path or key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list | tuple) else "an object"


def _shown(value: Any) -> str:
    """A string quoted as in JSON, anything else by its type."""
    return json.dumps(value) if isinstance(value, str) else _json_type(value)


def _one_of(names: Iterable[str]) -> str:
    return ", ".join(names)


# NVIDIA's DRA driver names these sharing fields differently; its users copy them.
_NVIDIA_FIELDS = {"timeSlicingConfig": "timeSlicing", "mpsConfig": "mps"}


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
        return f"{_shown(kind)} is not one of {_one_of(kinds)}"
    other = api_version_of(kind)
    if other is not None and other != version:
        return (
            f"{_shown(kind)} is a kind of {other}, not of {version}: "
            f"use kind {kind_of(meant, version)}, or apiVersion {other}"
        )
    right = kind_of(meant, version)
    if right.lower() == kind.lower():
        return f"{_shown(kind)} is not one of {_one_of(kinds)}: kinds are case-sensitive, use {right}"
    return f"{_shown(kind)} is not one of {_one_of(kinds)}: did you mean {right}?"


class _Reader:
    """Walks the JSON, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: str, reason: str) -> None:
        self.problems.append(Problem(path, reason))

    def fields(self, value: Any, path: str, owner: str, known: tuple[str, ...]) -> dict[str, Any] | None:
        """The object's fields without nulls, reporting unknown ones; None when not an object."""
        if not isinstance(value, Mapping):
            self.fail(path, f"must be an object, not {_json_type(value)}")
            return None
        for key in value:
            if key not in known:
                ours = _NVIDIA_FIELDS.get(str(key))
                hint = f"; NVIDIA's {key} is {ours} here" if ours in known else ""
                self.fail(_join(path, str(key)), f"unknown field ({owner} has {_one_of(known)}{hint})")
        return {key: item for key, item in value.items() if key in known and item is not None}

    def config(self, parameters: Any) -> DeviceConfig | None:
        if not isinstance(parameters, Mapping):
            self.fail("", f"must be a JSON object, not {_json_type(parameters)}")
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
        if "sharing" not in fields:
            return GPUConfig() if config is GPUConfig else MIGConfig()
        if config is GPUConfig:
            return GPUConfig(self.sharing(fields["sharing"], "sharing", ("TimeSlicing", "MPS")))
        sharing = self.sharing(fields["sharing"], "sharing", ("MPS",))
        return MIGConfig(sharing if isinstance(sharing, MPS) else None)

    def envelope(self, version: Any, kind: Any) -> ConfigType | None:
        """The config ``apiVersion`` and ``kind`` name together, or None with the problems found."""
        kinds = SPELLINGS.get(version) if isinstance(version, str) else None
        if version is None:
            self.fail("apiVersion", f"required, {_use_version(kind)}")
        elif kinds is None and isinstance(version, str) and version.lower() in SPELLINGS:
            self.fail(
                "apiVersion",
                f"{_shown(version)} is not supported: it is case-sensitive, use {version.lower()}",
            )
        elif kinds is None:
            self.fail("apiVersion", f"{_shown(version)} is not supported, {_use_version(kind)}")
        if kinds is not None:
            if kind is None:
                self.fail("kind", f"required, one of {_one_of(kinds)}")
            elif isinstance(kind, str) and kind in kinds:
                return kinds[kind]
            else:
                self.fail("kind", _wrong_kind(kind, version))
        elif kind is None:
            self.fail("kind", f"required, one of {_one_of(KINDS)}")
        elif not isinstance(kind, str) or api_version_of(kind) is None:
            self.fail("kind", _wrong_kind(kind, API_VERSION))
        return None

    def sharing(self, value: Any, path: str, strategies: tuple[str, ...]) -> Sharing | None:
        known = ("strategy", "timeSlicing", "mps") if "TimeSlicing" in strategies else ("strategy", "mps")
        fields = self.fields(value, path, "sharing", known)
        if fields is None:
            return None
        strategy = fields.get("strategy")
        where = _join(path, "strategy")
        if strategy is None:
            self.fail(where, f"required, one of {_one_of(strategies)}")
        elif strategy == "TimeSlicing" and "TimeSlicing" not in strategies:
            self.fail(where, _NO_MIG_TIME_SLICING)
        elif strategy not in strategies:
            self.fail(where, f"{_shown(strategy)} is not one of {_one_of(strategies)}")
        for key, name in (("timeSlicing", "TimeSlicing"), ("mps", "MPS")):
            if key in fields and strategy in strategies and strategy != name:
                self.fail(_join(path, key), f"set only with strategy {name}, not {strategy}")
        time_slicing = self.time_slicing(fields.get("timeSlicing"), _join(path, "timeSlicing"))
        mps = self.mps(fields.get("mps"), _join(path, "mps"))
        if strategy == "TimeSlicing":
            return time_slicing
        return mps if strategy == "MPS" else None

    def time_slicing(self, value: Any, path: str) -> TimeSlicing:
        fields = self.fields(value, path, "timeSlicing", ("interval",)) if value is not None else {}
        interval = (fields or {}).get("interval", TimeSliceInterval.DEFAULT.value)
        if interval in list(TimeSliceInterval):
            return TimeSlicing(TimeSliceInterval(interval))
        self.fail(_join(path, "interval"), f"{_shown(interval)} is not one of {_one_of(TimeSliceInterval)}")
        return TimeSlicing()

    def mps(self, value: Any, path: str) -> MPS:
        known = ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit")
        fields = (self.fields(value, path, "mps", known) if value is not None else {}) or {}
        percentage = fields.get("defaultActiveThreadPercentage")
        if percentage is not None:
            percentage = self.integer(percentage, _join(path, known[0]), 1, 100)
        limit = fields.get("defaultPinnedDeviceMemoryLimit")
        if limit is not None:
            limit = self.pinned_memory(limit, _join(path, known[1]))
        return MPS(percentage, limit)

    def integer(self, value: Any, path: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, not {_json_type(value)}")
            return None
        if value < low:
            self.fail(path, f"{value} is below the minimum {low}")
        elif value > high:
            self.fail(path, f"{value} is above the maximum {high}")
        return value if low <= value <= high else None

    def pinned_memory(self, value: Any, path: str) -> Quantity | None:
        # Kubernetes accepts a quantity as a JSON string or number; so do we.
        if isinstance(value, bool) or not isinstance(value, str | int):
            self.fail(path, f"must be a quantity such as 8Gi, not {_json_type(value)}")
            return None
        try:
            quantity = Quantity.parse(str(value))
        except QuantityError:
            self.fail(path, f"{json.dumps(value)} is not a quantity such as 512Mi or 8Gi")
            return None
        if quantity.value < MIB:
            self.fail(path, f"{json.dumps(value)} is below the minimum 1Mi")
        elif quantity.value % MIB != 0:
            # CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes MiB: refuse what would be silently rounded.
            self.fail(path, f"{json.dumps(value)} is not a whole number of Mi (MPS limits memory in MiB)")
        else:
            return quantity
        return None
