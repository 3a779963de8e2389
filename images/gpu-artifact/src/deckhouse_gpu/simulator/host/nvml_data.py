# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Per-model NVML data files for the simulated NVML: what the driver reports for each card model.

One YAML file per model key in ``nvml_models/`` (the same keys as ``gpu_catalog``). Each file
names its sources; this module only checks that the file is well formed and that its MIG table
is geometrically possible, so a typo fails loudly with the file and the field in the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, TypeGuard

import yaml

from deckhouse_gpu.domain.inventory.nvml_snapshot import GpuInstanceProfile, Placement

PROFILE_NAME = re.compile(r"^\d+g\.\d+gb(\+me|\+gfx|-me|\+me\.all)?$")
_COUNTS = ("copy_engines", "decoders", "encoders", "jpeg", "ofa")


class ModelDataError(ValueError):
    """A model data file is missing, unreadable or inconsistent."""


@dataclass(frozen=True)
class PowerLimits:
    min_w: int
    max_w: int
    default_w: int


@dataclass(frozen=True)
class MigGeometry:
    compute_slices: int
    memory_slices: int
    profiles: tuple[GpuInstanceProfile, ...]


@dataclass(frozen=True)
class ModelData:
    key: str
    sources: tuple[str, ...]
    name: str
    memory_total_mib: int
    compute_capability: tuple[int, int]
    architecture: str
    board_part_number: str
    multiprocessors: int
    power: PowerLimits
    mig: MigGeometry | None  # None: the model has no MIG


def _folder() -> Any:
    return resources.files("deckhouse_gpu.simulator.host") / "nvml_models"


def known_models() -> list[str]:
    return sorted(
        item.name.removesuffix(".yaml") for item in _folder().iterdir() if item.name.endswith(".yaml")
    )


@cache
def load_model(key: str) -> ModelData:
    """The data of one model key; cached, since the files never change while a process runs."""
    candidate = _folder() / f"{key}.yaml"
    if not candidate.is_file():
        raise ModelDataError(f"no NVML data for model {key!r}; known: {', '.join(known_models())}")
    model = parse_model(f"{key}.yaml", candidate.read_text())
    if model.key != key:
        raise ModelDataError(f"{key}.yaml: model: {model.key!r} does not match the file name")
    return model


def parse_model(where: str, text: str) -> ModelData:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ModelDataError(f"{where}: not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise ModelDataError(f"{where}: expected a mapping at the top level")
    sources = data.get("source")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s for s in sources):
        raise ModelDataError(f"{where}: source: expected a non-empty list of document names")
    power = _mapping(where, data, "power_limit_w")
    limits = PowerLimits(*(_int(where, power, name, "power_limit_w.") for name in ("min", "max", "default")))
    if not limits.min_w <= limits.default_w <= limits.max_w:
        raise ModelDataError(f"{where}: power_limit_w: expected min <= default <= max")
    return ModelData(
        key=_str(where, data, "model"),
        sources=tuple(sources),
        name=_str(where, data, "name"),
        memory_total_mib=_int(where, data, "memory_total_mib"),
        compute_capability=_capability(where, data),
        architecture=_str(where, data, "architecture"),
        board_part_number=_str(where, data, "board_part_number"),
        multiprocessors=_int(where, data, "multiprocessors"),
        power=limits,
        mig=_mig(where, _mapping(where, data, "mig")),
    )


def _mig(where: str, raw: dict[str, Any]) -> MigGeometry | None:
    supported = raw.get("supported")
    if not isinstance(supported, bool):
        raise ModelDataError(f"{where}: mig.supported: expected true or false")
    if not supported:
        if raw.get("profiles"):
            raise ModelDataError(f"{where}: mig.profiles: a model without MIG lists no profiles")
        return None
    compute = _int(where, raw, "compute_slices", "mig.")
    memory = _int(where, raw, "memory_slices", "mig.")
    entries = raw.get("profiles")
    if not isinstance(entries, list) or not entries:
        raise ModelDataError(f"{where}: mig.profiles: expected a non-empty list")
    profiles = tuple(
        _profile(where, f"mig.profiles[{i}].", entry, compute, memory) for i, entry in enumerate(entries)
    )
    for field in ("profile_id", "name"):
        values = [getattr(profile, field) for profile in profiles]
        duplicates = sorted({str(value) for value in values if values.count(value) > 1})
        if duplicates:
            raise ModelDataError(f"{where}: mig.profiles: duplicate {field}: {', '.join(duplicates)}")
    return MigGeometry(compute, memory, profiles)


def _profile(where: str, path: str, raw: Any, compute: int, memory: int) -> GpuInstanceProfile:
    if not isinstance(raw, dict):
        raise ModelDataError(f"{where}: {path.rstrip('.')}: expected a mapping")
    name = _str(where, raw, "name", path)
    if not PROFILE_NAME.match(name):
        raise ModelDataError(
            f"{where}: {path}name: {name!r} is not a profile name like 1g.10gb or 1g.10gb+me"
        )
    slices = _int(where, raw, "slices", path)
    if slices > compute:
        raise ModelDataError(
            f"{where}: {path}slices: {slices} is more than the card's {compute} compute slices"
        )
    counts = [_int(where, raw, field, path, minimum=0) for field in _COUNTS]
    return GpuInstanceProfile(
        profile_id=_int(where, raw, "id", path, minimum=0),
        name=name,
        memory_mib=_int(where, raw, "memory_mib", path),
        slice_count=slices,
        instance_count=_int(where, raw, "instances", path),
        multiprocessors=_int(where, raw, "multiprocessors", path),
        copy_engines=counts[0],
        decoders=counts[1],
        encoders=counts[2],
        jpeg_engines=counts[3],
        ofa_engines=counts[4],
        placements=_placements(where, f"{path}placements", raw.get("placements"), memory),
    )


def _placements(where: str, path: str, raw: Any, memory: int) -> tuple[Placement, ...]:
    # Written as nvidia-smi mig -lgipp prints them: one size and the list of starts.
    if not isinstance(raw, dict):
        raise ModelDataError(f"{where}: {path}: expected {{starts: [...], size: N}}")
    size = _int(where, raw, "size", f"{path}.")
    starts = raw.get("starts")
    if not isinstance(starts, list) or not starts or not all(_is_int(s) and s >= 0 for s in starts):
        raise ModelDataError(f"{where}: {path}.starts: expected a non-empty list of slice indexes")
    if len(set(starts)) != len(starts):
        raise ModelDataError(f"{where}: {path}.starts: a start is listed twice")
    for start in starts:
        if start % size:
            raise ModelDataError(f"{where}: {path}: start {start} is not aligned to size {size}")
        if start + size > memory:
            raise ModelDataError(f"{where}: {path}: {start}:{size} runs past the {memory} memory slices")
    return tuple(Placement(start, size) for start in sorted(starts))


def _capability(where: str, data: dict[str, Any]) -> tuple[int, int]:
    text = _str(where, data, "compute_capability")
    match = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not match:
        raise ModelDataError(f'{where}: compute_capability: expected major.minor like "8.0", got {text!r}')
    return int(match.group(1)), int(match.group(2))


def _mapping(where: str, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ModelDataError(f"{where}: {key}: expected a mapping")
    return value


def _str(where: str, data: dict[str, Any], key: str, path: str = "") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ModelDataError(f"{where}: {path}{key}: expected a non-empty string, got {value!r}")
    return value


def _int(where: str, data: dict[str, Any], key: str, path: str = "", minimum: int = 1) -> int:
    value = data.get(key)
    if not _is_int(value) or value < minimum:
        raise ModelDataError(f"{where}: {path}{key}: expected an integer >= {minimum}, got {value!r}")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    # YAML's true/false are ints to Python; a boolean where a count belongs is a typo.
    return isinstance(value, int) and not isinstance(value, bool)
