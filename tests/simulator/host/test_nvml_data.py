# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-model NVML data files: they load, and their MIG tables are geometrically possible.

The consistency checks are there to catch typos in numbers copied from NVIDIA's tables: a
placement off the card, a start that is not aligned, an instance count the placements cannot
hold, or a partition that would need more SMs, memory or engines than the card has.
"""

import re

import pytest

from deckhouse_gpu.domain.inventory.nvml_snapshot import GpuInstanceProfile
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS
from deckhouse_gpu.simulator.host.nvml_data import (
    MigGeometry,
    ModelData,
    ModelDataError,
    known_models,
    load_model,
    parse_model,
)

MIG_MODELS = ["a30", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"]
ARCHITECTURES = {"Turing": (7, 5), "Ampere": (8, 0), "Ada Lovelace": (8, 9), "Hopper": (9, 0)}
NAME = re.compile(r"^(\d+)g\.(\d+)gb(\+me|\+gfx|-me|\+me\.all)?$")


def geometry(key: str) -> tuple[ModelData, MigGeometry]:
    model = load_model(key)
    assert model.mig is not None
    return model, model.mig


def test_every_catalogue_model_has_a_data_file_that_loads():
    assert known_models() == sorted(GPU_MODELS)
    for key in known_models():
        model = load_model(key)
        assert model.key == key
        assert model.sources
        assert model.power.min_w <= model.power.default_w <= model.power.max_w
        assert ARCHITECTURES[model.architecture] == model.compute_capability, key


def test_only_the_mig_parts_have_profiles():
    for key in known_models():
        assert (load_model(key).mig is not None) == (key in MIG_MODELS), key


def test_names_as_nvml_reports_them():
    names = {key: load_model(key).name for key in known_models()}
    assert names == {
        "a30": "NVIDIA A30",
        "a100-40gb": "NVIDIA A100-PCIE-40GB",
        "a100-80gb": "NVIDIA A100 80GB PCIe",
        "h100-80gb": "NVIDIA H100 80GB HBM3",
        "h200-141gb": "NVIDIA H200",
        "l40s": "NVIDIA L40S",
        "t4": "Tesla T4",
    }


@pytest.mark.parametrize("key", MIG_MODELS)
def test_profile_ids_and_names_are_unique_and_well_formed(key):
    _, mig = geometry(key)
    ids = [profile.profile_id for profile in mig.profiles]
    names = [profile.name for profile in mig.profiles]
    assert len(set(ids)) == len(ids)
    assert len(set(names)) == len(names)
    for profile in mig.profiles:
        match = NAME.match(profile.name)
        assert match, profile.name
        assert int(match.group(1)) == profile.slice_count, profile.name
        # The "Ngb" in a name is nominal: NVML's size is within a GiB of it, or an eighth of it on
        # the H200 (its 1g.18gb has 16 GiB, as a real card reported on driver 580).
        gib = profile.memory_mib / 1024
        assert abs(int(match.group(2)) - gib) <= max(1.0, gib / 8), profile.name


@pytest.mark.parametrize("key", MIG_MODELS)
def test_placements_fit_the_card_and_are_aligned(key):
    _, mig = geometry(key)
    for profile in mig.profiles:
        assert profile.placements, profile.name
        assert len({placement.size for placement in profile.placements}) == 1, profile.name
        for placement in profile.placements:
            assert placement.start % placement.size == 0, (profile.name, placement)
            assert placement.start + placement.size <= mig.memory_slices, (profile.name, placement)


@pytest.mark.parametrize("key", MIG_MODELS)
def test_instance_counts_agree_with_placements(key):
    _, mig = geometry(key)
    for profile in mig.profiles:
        disjoint = _disjoint(profile)
        assert profile.instance_count * profile.slice_count <= mig.compute_slices, profile.name
        if profile.name.endswith("+me"):
            # The card has one set of media extensions, so fewer fit than the placements allow.
            assert profile.instance_count <= disjoint, profile.name
        else:
            assert profile.instance_count == disjoint, profile.name


@pytest.mark.parametrize("key", MIG_MODELS)
def test_memory_follows_the_memory_slices(key):
    model, mig = geometry(key)
    for profile in mig.profiles:
        share = model.memory_total_mib * profile.placements[0].size / mig.memory_slices
        assert profile.memory_mib <= share, profile.name


@pytest.mark.parametrize("key", MIG_MODELS)
def test_the_full_card_profile_covers_every_slice(key):
    model, mig = geometry(key)
    full = [profile for profile in mig.profiles if profile.slice_count == mig.compute_slices]
    assert len(full) == 1
    assert full[0].instance_count == 1
    assert [(p.start, p.size) for p in full[0].placements] == [(0, mig.memory_slices)]
    assert full[0].multiprocessors <= model.multiprocessors
    assert full[0].memory_mib <= model.memory_total_mib


@pytest.mark.parametrize("key", MIG_MODELS)
def test_media_extension_profiles_mirror_their_base_profile(key):
    _, mig = geometry(key)
    by_name = {profile.name: profile for profile in mig.profiles}
    for name, extended in by_name.items():
        if not name.endswith("+me"):
            continue
        base = by_name[name.removesuffix("+me")]
        assert (extended.memory_mib, extended.slice_count, extended.multiprocessors) == (
            base.memory_mib,
            base.slice_count,
            base.multiprocessors,
        )
        assert extended.placements == base.placements
        assert extended.jpeg_engines >= 1
        assert extended.ofa_engines >= 1


@pytest.mark.parametrize("key", MIG_MODELS)
def test_no_partition_needs_more_than_the_card_has(key):
    model, mig = geometry(key)
    full = next(profile for profile in mig.profiles if profile.slice_count == mig.compute_slices)
    budget = _engines(full)
    partitions = list(_partitions(mig))
    assert len(partitions) > len(mig.profiles)  # the walk really explored mixed geometries
    for chosen in partitions:
        label = [profile.name for profile in chosen]
        assert sum(p.multiprocessors for p in chosen) <= model.multiprocessors, label
        assert sum(p.memory_mib for p in chosen) <= model.memory_total_mib, label
        used = [sum(counts) for counts in zip(*(_engines(p) for p in chosen), strict=True)] if chosen else []
        assert all(total <= limit for total, limit in zip(used, budget, strict=False)), label


def test_seven_small_instances_fill_an_a100():
    _, mig = geometry("a100-40gb")
    small = next(profile for profile in mig.profiles if profile.name == "1g.5gb")
    assert [p.start for p in small.placements] == [0, 1, 2, 3, 4, 5, 6]
    assert next(p for p in mig.profiles if p.name == "1g.10gb").profile_id == 15


def test_h100_has_the_double_memory_small_profile():
    _, mig = geometry("h100-80gb")
    profile = next(p for p in mig.profiles if p.name == "1g.20gb")
    assert profile.profile_id == 15
    assert [(p.start, p.size) for p in profile.placements] == [(0, 2), (2, 2), (4, 2), (6, 2)]


GOOD = """
source: [a datasheet]
model: x
name: NVIDIA X
memory_total_mib: 1024
compute_capability: "8.0"
architecture: Ampere
board_part_number: 900-0
multiprocessors: 8
power_limit_w: {min: 50, max: 100, default: 100}
mig:
  supported: true
  compute_slices: 2
  memory_slices: 2
  profiles:
    - {id: 1, name: 1g.1gb, memory_mib: 500, slices: 1, instances: 2, multiprocessors: 4,
       copy_engines: 1, decoders: 0, encoders: 0, jpeg: 0, ofa: 0,
       placements: {starts: [0, 1], size: 1}}
"""


def test_a_minimal_file_parses():
    model = parse_model("x.yaml", GOOD)
    assert model.mig is not None
    assert model.mig.profiles[0].placements[1].start == 1


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("source: [a datasheet]", "source: []", "source"),
        ("name: NVIDIA X", "name: ''", "name"),
        ('"8.0"', '"eight"', "compute_capability"),
        ("memory_total_mib: 1024", "memory_total_mib: true", "memory_total_mib"),
        ("min: 50", "min: 150", "power_limit_w"),
        ("supported: true", "supported: maybe", r"mig\.supported"),
        ("name: 1g.1gb", "name: 1g.1GB", r"mig\.profiles\[0\]\.name"),
        ("decoders: 0", "decoders: -1", r"mig\.profiles\[0\]\.decoders"),
        ("slices: 1,", "slices: 3,", r"mig\.profiles\[0\]\.slices"),
        ("starts: [0, 1], size: 1", "starts: [1], size: 2", "not aligned"),
        ("starts: [0, 1], size: 1", "starts: [0, 2], size: 1", "runs past"),
        ("starts: [0, 1], size: 1", "starts: [0, 0], size: 1", "listed twice"),
        ("placements: {starts: [0, 1], size: 1}", "placements: [0, 1]", "placements"),
    ],
)
def test_bad_files_name_the_file_and_the_field(old, new, message):
    assert old in GOOD
    with pytest.raises(ModelDataError, match=rf"^x\.yaml: .*{message}"):
        parse_model("x.yaml", GOOD.replace(old, new))


def test_duplicate_profile_ids_are_rejected():
    profile = GOOD[GOOD.index("    - {id: 1") :]
    text = GOOD + profile.replace("name: 1g.1gb", "name: 1g.1gb+me")
    with pytest.raises(ModelDataError, match="duplicate profile_id: 1"):
        parse_model("x.yaml", text)


def test_a_model_without_mig_lists_no_profiles():
    text = GOOD.replace("supported: true", "supported: false")
    with pytest.raises(ModelDataError, match="without MIG"):
        parse_model("x.yaml", text)


def test_not_yaml_and_not_a_mapping():
    with pytest.raises(ModelDataError, match="not valid YAML"):
        parse_model("x.yaml", "a: [")
    with pytest.raises(ModelDataError, match="mapping at the top level"):
        parse_model("x.yaml", "- 1")


def test_an_unknown_model_lists_the_known_ones():
    with pytest.raises(ModelDataError, match="a100-40gb, a100-80gb, a30"):
        load_model("v100")


def _disjoint(profile: GpuInstanceProfile) -> int:
    count, end = 0, -1
    for placement in sorted(profile.placements, key=lambda p: p.start):
        if placement.start >= end:
            count, end = count + 1, placement.start + placement.size
    return count


def _engines(profile: GpuInstanceProfile) -> tuple[int, ...]:
    return (
        profile.copy_engines,
        profile.decoders,
        profile.encoders,
        profile.jpeg_engines,
        profile.ofa_engines,
    )


def _partitions(mig: MigGeometry):
    """Every set of instances that can coexist: memory slices disjoint, compute slices within the
    card, each profile within its instance count, and one set of media extensions in all."""
    items = [(profile, placement) for profile in mig.profiles for placement in profile.placements]

    def walk(index, used, compute, chosen):
        if index == len(items):
            yield chosen
            return
        yield from walk(index + 1, used, compute, chosen)
        profile, placement = items[index]
        span = set(range(placement.start, placement.start + placement.size))
        if span & used or compute + profile.slice_count > mig.compute_slices:
            return
        if sum(p is profile for p in chosen) >= profile.instance_count:
            return
        if profile.name.endswith("+me") and any(p.name.endswith("+me") for p in chosen):
            return
        yield from walk(index + 1, used | span, compute + profile.slice_count, [*chosen, profile])

    return walk(0, set(), 0, [])
