"""The allocator's rules, one by one, on small slices (DESIGN.md F3, F4)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deckhouse_gpu.domain.allocation.claims import ClaimError
from deckhouse_gpu.domain.allocation.semantics import Semantics
from tests.support.allocation import (
    IS_GPU,
    World,
    claim_object,
    device,
    device_class,
    exactly,
    first_available,
    resource_slice,
)

V134 = Semantics("1.34")
V135 = Semantics("1.35")


def gpus(*names: str, **fields: object) -> list[dict[str, object]]:
    return [device(n, **fields) for n in names]  # type: ignore[arg-type]


# -- devices, counts, modes ------------------------------------------------------------------


def test_exact_count_takes_devices_in_slice_order_and_never_twice() -> None:
    world = World([resource_slice("s", gpus("a", "b", "c"))])
    assert world.devices(claim_object("one", exactly("gpu", count=2))) == [["a", "b"]]
    assert world.devices(claim_object("two", exactly("gpu", count=2))) is None
    assert world.devices(claim_object("three", exactly("gpu"))) == [["c"]]


def test_claims_of_one_pod_fit_together_or_not_at_all() -> None:
    world = World([resource_slice("s", gpus("a", "b"))])
    assert (
        world.devices(claim_object("x", exactly("gpu")), claim_object("y", exactly("gpu", count=2))) is None
    )
    assert world.state.in_use == set()
    assert world.devices(claim_object("x", exactly("gpu")), claim_object("y", exactly("gpu"))) == [
        ["a"],
        ["b"],
    ]


def test_all_mode_takes_every_matching_device_and_needs_at_least_one() -> None:
    world = World([resource_slice("s", [*gpus("a", "b"), device("nic", kind="nic")])])
    assert world.devices(claim_object("all", exactly("gpu", allocationMode="All"))) == [["a", "b"]]
    assert world.devices(claim_object("again", exactly("gpu", allocationMode="All"))) is None


def test_all_mode_fails_when_one_of_its_devices_is_in_use() -> None:
    world = World([resource_slice("s", gpus("a", "b"))])
    world.devices(claim_object("first", exactly("gpu")))
    assert world.devices(claim_object("all", exactly("gpu", allocationMode="All"))) is None


def test_first_available_tries_subrequests_in_order_with_the_whole_search() -> None:
    world = World(
        [resource_slice("s", [device("big", kind="big"), *gpus("a", "b")])],
        [device_class("gpu"), device_class("big", 'device.attributes["gpu.deckhouse.io"].kind == "big"')],
    )
    wanted = claim_object(
        "c",
        first_available(
            "r", {"name": "large", "deviceClassName": "big"}, {"name": "small", "deviceClassName": "gpu"}
        ),
        exactly("other", "big"),
    )
    outcome = world.allocate(wanted)
    assert outcome.allocations is not None
    # "large" would take the only big device that "other" needs: the search goes on to "small".
    assert [(r["request"], r["device"]) for r in outcome.allocations[0]["devices"]["results"]] == [
        ("r/small", "a"),
        ("other", "big"),
    ]


def test_admin_access_gets_a_device_in_use_and_leaves_it_in_use() -> None:
    world = World([resource_slice("s", gpus("a"))])
    world.devices(claim_object("user", exactly("gpu")))
    outcome = world.allocate(claim_object("admin", exactly("gpu", adminAccess=True)))
    assert outcome.allocations is not None
    (result,) = outcome.allocations[0]["devices"]["results"]
    assert result["adminAccess"] is True
    world.commit(outcome)
    assert world.devices(claim_object("monitor", exactly("gpu", adminAccess=True))) == [["a"]]


def test_selectors_of_the_class_and_of_the_request_both_apply() -> None:
    world = World(
        [resource_slice("s", [device("a", attributes={"mem": 10}), device("b", attributes={"mem": 40})])]
    )
    expression = 'device.attributes["gpu.deckhouse.io"].mem >= 20'
    big: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    assert world.devices(claim_object("c", exactly("gpu", **big))) == [["b"]]


def test_devices_with_binding_conditions_are_not_offered_without_that_feature() -> None:
    world = World([resource_slice("s", [device("a", bindingConditions=["Ready"]), device("b")])])
    assert world.devices(claim_object("c", exactly("gpu"))) == [["b"]]


# -- pools -------------------------------------------------------------------------------------


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = resource_slice("old", gpus("a"), generation=1)
    new = resource_slice("new", gpus("b"), generation=2)
    assert World([old, new]).devices(claim_object("c", exactly("gpu"))) == [["b"]]


@pytest.mark.parametrize(("semantics", "expected"), [(V134, [["a"]]), (V135, None)])
def test_incomplete_pools_serve_exact_count_on_134_only(semantics: Semantics, expected: object) -> None:
    world = World([resource_slice("s1", gpus("a"), count=2)], semantics=semantics)
    assert world.devices(claim_object("c", exactly("gpu"))) == expected


@pytest.mark.parametrize("semantics", [V134, V135])
def test_all_mode_on_an_incomplete_pool_is_an_error(semantics: Semantics) -> None:
    world = World([resource_slice("s1", gpus("a"), count=2)], semantics=semantics)
    outcome = world.allocate(claim_object("c", exactly("gpu", allocationMode="All")))
    assert outcome.allocations is None
    assert outcome.error == "claim ns/c request gpu: allocationMode All needs complete, valid pools"


def test_135_drops_a_pool_whose_newer_generation_is_still_being_published() -> None:
    # Generation 2 has one of its two slices on another node so far: the pool is obsolete here.
    slices = [
        resource_slice("n1-g1", gpus("a"), generation=1, count=1),
        resource_slice("n2-g2", gpus("b"), node="n2", generation=2, count=2),
    ]
    assert World(slices, semantics=V135).devices(claim_object("c", exactly("gpu"))) == [["a"]]
    slices[1]["spec"]["nodeName"] = "n1"
    assert World(slices, semantics=V135).devices(claim_object("c", exactly("gpu"))) is None


def test_duplicate_device_names_abort_on_134() -> None:
    world = World(
        [resource_slice("s1", gpus("a"), count=2), resource_slice("s2", gpus("a"), count=2)], semantics=V134
    )
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == "pool gpu.deckhouse.io/p1 is invalid: duplicate device name a"


def test_invalid_pools_are_skipped_on_135_and_named_when_nothing_fits() -> None:
    bad = [resource_slice("s1", gpus("a"), count=2), resource_slice("s2", gpus("a"), count=2)]
    good = resource_slice("g", gpus("b"), pool="p2")
    assert World([*bad, good], semantics=V135).devices(claim_object("c", exactly("gpu"))) == [["b"]]
    outcome = World(bad, semantics=V135).allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: duplicate device name a"
    )


def test_135_counter_references_to_missing_sets_make_the_pool_invalid() -> None:
    counters = resource_slice("c", counters={"card": {"memory": "10Gi"}}, count=2)
    devices = resource_slice("d", [device("a", consumes={"nope": {"memory": "1Gi"}})], count=2)
    outcome = World([counters, devices], semantics=V135).allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: device a consumes from missing "
        "counter set nope"
    )


@pytest.mark.parametrize(
    ("selection", "fits"),
    [
        ({"nodeName": "n1"}, True),
        ({"nodeName": "n2"}, False),
        ({"allNodes": True}, True),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}
                    ]
                }
            },
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]
                }
            },
            False,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                    ]
                }
            },
            True,
        ),
        ({}, False),  # nothing set: a future extension the scheduler ignores
    ],
)
def test_slice_node_selection(selection: dict[str, Any], fits: bool) -> None:
    world = World([resource_slice("s", gpus("a"), node=None, **selection)])
    found = world.allocate(claim_object("c", exactly("gpu")), labels={"gpu": "yes"})
    assert (found.allocations is not None) is fits


def test_per_device_node_selection_needs_partitionable_devices() -> None:
    slices = [
        resource_slice(
            "s",
            [device("a", nodeName="n2"), device("b", nodeName="n1")],
            node=None,
            perDeviceNodeSelection=True,
        )
    ]
    assert World(slices).devices(claim_object("c", exactly("gpu"))) == [["b"]]
    off = Semantics(partitionable=False)
    assert World(slices, semantics=off).devices(claim_object("c", exactly("gpu"))) is None


# -- counters ------------------------------------------------------------------------------------


def card_135(node: str = "n1") -> list[dict[str, object]]:
    """A card as the module publishes it on 1.35: counters in one slice, devices in another."""
    whole = device("card", consumes={"c0": {"memory": "24Gi", "slices": "4"}})
    small = [
        device(f"mig-{i}", kind="mig", consumes={"c0": {"memory": "6Gi", "slices": "1"}}) for i in range(4)
    ]
    return [
        resource_slice("counters", counters={"c0": {"memory": "24Gi", "slices": "4"}}, count=2, node=node),
        resource_slice("devices", [whole, *small], count=2, node=node),
    ]


def card_134() -> list[dict[str, object]]:
    whole = device("card", consumes={"c0": {"memory": "24Gi", "slices": "4"}})
    small = [
        device(f"mig-{i}", kind="mig", consumes={"c0": {"memory": "6Gi", "slices": "1"}}) for i in range(4)
    ]
    return [resource_slice("combined", [whole, *small], counters={"c0": {"memory": "24Gi", "slices": "4"}})]


MIG_CLASSES = [
    device_class("gpu"),
    device_class("mig", 'device.attributes["gpu.deckhouse.io"].kind == "mig"'),
]


@pytest.mark.parametrize(("slices", "semantics"), [(card_134(), V134), (card_135(), V135)])
def test_a_whole_card_and_its_partitions_exclude_each_other(
    slices: list[dict[str, object]], semantics: Semantics
) -> None:
    world = World(slices, MIG_CLASSES, semantics)
    assert world.devices(claim_object("m1", exactly("m", "mig"))) == [["mig-0"]]
    assert world.devices(claim_object("whole", exactly("g", "gpu"))) is None
    assert world.devices(claim_object("m2", exactly("m", "mig", count=3))) == [["mig-1", "mig-2", "mig-3"]]
    assert world.devices(claim_object("m3", exactly("m", "mig"))) is None


def test_counters_are_not_checked_without_partitionable_devices_they_just_never_fit() -> None:
    world = World(card_134(), MIG_CLASSES, Semantics("1.34", partitionable=False))
    assert world.devices(claim_object("m", exactly("m", "mig"))) is None


def test_134_counts_counters_per_slice_and_135_per_pool() -> None:
    # Two slices of one pool each declare a set named c0; on 1.34 each slice has its own.
    def two_slices(semantics: Semantics) -> World:
        first = resource_slice(
            "s1", [device("a", consumes={"c0": {"n": "1"}})], counters={"c0": {"n": "1"}}, count=2
        )
        second = resource_slice(
            "s2", [device("b", consumes={"c0": {"n": "1"}})], counters={"c0": {"n": "1"}}, count=2
        )
        return World([first, second], semantics=semantics)

    assert two_slices(V134).devices(claim_object("c", exactly("gpu", count=2))) == [["a", "b"]]
    # 1.35: the same set twice in one pool makes it invalid.
    assert two_slices(V135).allocate(claim_object("c", exactly("gpu"))).error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: duplicate counter set c0"
    )


def test_counters_of_a_device_rejected_later_stay_charged_unless_strict() -> None:
    # "card" passes the counter check, then its taint rejects it; the scheduler keeps its counters
    # charged for the rest of the pass, so no MIG device fits in the same pass (quirk a).
    tainted = device(
        "card",
        consumes={"c0": {"memory": "24Gi"}},
        taints=[{"key": "maint", "value": "", "effect": "NoSchedule"}],
    )
    mig = device("mig-0", kind="gpu", consumes={"c0": {"memory": "6Gi"}})
    slices = [resource_slice("s", [tainted, mig], counters={"c0": {"memory": "24Gi"}})]
    assert World(slices, semantics=V134).devices(claim_object("c", exactly("gpu"))) is None
    strict = Semantics("1.34", strict=True)
    assert World(slices, semantics=strict).devices(claim_object("c", exactly("gpu"))) == [["mig-0"]]


# -- taints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "semantics", "fits"),
    [
        ("NoSchedule", V135, False),
        ("NoExecute", V135, False),
        ("None", V135, True),  # 1.35 enforces only NoSchedule and NoExecute
        ("None", V134, False),  # 1.34 wants every taint tolerated
        ("NoSchedule", Semantics(taints=False), True),
    ],
)
def test_taints(effect: str, semantics: Semantics, fits: bool) -> None:
    world = World(
        [resource_slice("s", [device("a", taints=[{"key": "k", "value": "v", "effect": effect}])])],
        semantics=semantics,
    )
    assert (world.devices(claim_object("c", exactly("gpu"))) is not None) is fits


@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        ({"key": "k", "operator": "Equal", "value": "v"}, True),
        ({"key": "k", "operator": "Equal", "value": "w"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_tolerations_are_matched_and_copied_into_the_result(toleration: dict[str, str], fits: bool) -> None:
    world = World(
        [resource_slice("s", [device("a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])])]
    )
    outcome = world.allocate(claim_object("c", exactly("gpu", tolerations=[toleration])))
    assert (outcome.allocations is not None) is fits
    if outcome.allocations:
        (result,) = outcome.allocations[0]["devices"]["results"]
        assert result["tolerations"] == [{k: v for k, v in {"operator": "Equal", **toleration}.items()}]


# -- constraints -------------------------------------------------------------------------------


def test_match_attribute_keeps_devices_of_one_claim_alike() -> None:
    devices = [
        device("a", attributes={"model": "A30"}),
        device("b", attributes={"model": "H100"}),
        device("c", attributes={"model": "A30"}),
    ]
    same = {"constraints": [{"matchAttribute": "gpu.deckhouse.io/model"}]}
    world = World([resource_slice("s", devices)])
    assert world.devices(claim_object("x", exactly("gpu", count=2), **same)) == [["a", "c"]]
    assert world.devices(claim_object("y", exactly("gpu", count=2), **same)) is None


def test_match_attribute_rejects_devices_without_the_attribute() -> None:
    world = World([resource_slice("s", [device("a"), device("b", attributes={"model": "A30"})])])
    constraint = {"constraints": [{"matchAttribute": "gpu.deckhouse.io/model"}]}
    assert world.devices(claim_object("x", exactly("gpu"), **constraint)) == [["b"]]


def test_match_attribute_applies_only_to_the_requests_it_names() -> None:
    devices = [device("a", attributes={"model": "A30"}), device("b", attributes={"model": "H100"})]
    constraint = {"constraints": [{"requests": ["one"], "matchAttribute": "gpu.deckhouse.io/model"}]}
    world = World([resource_slice("s", devices)])
    assert world.devices(claim_object("x", exactly("one"), exactly("two"), **constraint)) == [["a", "b"]]


@pytest.mark.parametrize(("semantics", "expected"), [(V135, [["a", "c"]]), (V134, [["a", "b"]])])
def test_distinct_attribute_compares_values_on_135_only(
    semantics: Semantics, expected: list[list[str]]
) -> None:
    # 1.34 compares pointers to the values, which never match across devices (DESIGN.md F4.4).
    devices = [
        device("a", attributes={"root": "r0"}),
        device("b", attributes={"root": "r0"}),
        device("c", attributes={"root": "r1"}),
    ]
    constraint = {"constraints": [{"distinctAttribute": "gpu.deckhouse.io/root"}]}
    world = World([resource_slice("s", devices)], semantics=semantics)
    assert world.devices(claim_object("x", exactly("one"), exactly("two"), **constraint)) == [
        [expected[0][0], expected[0][1]]
    ]


# -- consumable capacity ---------------------------------------------------------------------


def shared_card(**policy: object) -> dict[str, object]:
    request_policy = policy or {"default": "100", "validRange": {"min": "1", "max": "100", "step": "1"}}
    return device(
        "card", multi=True, capacity={"sharePercent": {"value": "100", "requestPolicy": request_policy}}
    )


def share(name: str, percent: str | None) -> dict[str, object]:
    fields: dict[str, Any] = {"capacity": {"requests": {"sharePercent": percent}}} if percent else {}
    return claim_object(name, exactly("gpu", **fields))


def test_shares_fill_a_card_and_each_gets_its_own_share_id() -> None:
    world = World([resource_slice("s", [shared_card()])])
    first = world.allocate(share("a", "50"))
    assert first.allocations is not None
    (result,) = first.allocations[0]["devices"]["results"]
    assert result["consumedCapacity"] == {"sharePercent": "50"}
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", result["shareID"]
    )
    world.commit(first)
    assert world.devices(share("b", "60")) is None  # 50 + 60 > 100, as on a real 1.35 scheduler
    assert world.devices(share("c", "40")) == [["card"]]
    assert world.devices(share("d", "11")) is None
    assert world.devices(share("e", "10")) == [["card"]]


def test_a_claim_without_a_capacity_request_takes_the_policy_default() -> None:
    world = World([resource_slice("s", [shared_card()])])
    outcome = world.allocate(share("whole", None))
    assert outcome.allocations is not None
    assert outcome.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"sharePercent": "100"}


@pytest.mark.parametrize(
    ("policy", "requested", "consumed"),
    [
        ({"validRange": {"min": "10", "max": "100", "step": "10"}}, "25", "30"),  # rounded up to a step
        ({"validRange": {"min": "10", "max": "100", "step": "10"}}, "5", "10"),  # raised to the minimum
        ({"validRange": {"min": "10"}}, "13", "13"),  # no step: as requested
        ({"validValues": ["25", "50", "100"]}, "30", "50"),  # the first valid value above
    ],
)
def test_request_policies_round_the_consumed_amount(
    policy: dict[str, object], requested: str, consumed: str
) -> None:
    world = World([resource_slice("s", [shared_card(**policy)])])
    outcome = world.allocate(share("c", requested))
    assert outcome.allocations is not None
    assert outcome.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"sharePercent": consumed}


@pytest.mark.parametrize(
    ("policy", "requested"),
    [
        ({"validRange": {"min": "10", "max": "50"}}, "60"),  # above the maximum
        ({"validValues": ["25", "50"]}, "60"),  # no valid value that large
    ],
)
def test_requests_the_policy_cannot_serve_do_not_fit(policy: dict[str, object], requested: str) -> None:
    world = World([resource_slice("s", [shared_card(**policy)])])
    assert world.devices(share("c", requested)) is None


def test_a_capacity_the_device_lacks_skips_it() -> None:
    world = World([resource_slice("s", [device("plain"), shared_card()])])
    asks = claim_object("c", exactly("gpu", capacity={"requests": {"memory": "1Gi"}}))
    assert world.devices(asks) is None


def test_a_shared_device_counts_its_counters_only_for_the_first_share_unless_strict() -> None:
    # Observed on a real 1.35 scheduler (DESIGN.md F9): a 50 % share of a device that
    # consumes a whole counter set does not keep a later claim off that set (quirk b).
    shared = device(
        "card-shared",
        multi=True,
        consumes={"c0": {"memory": "24Gi"}},
        capacity={
            "sharePercent": {
                "value": "100",
                "requestPolicy": {"default": "100", "validRange": {"min": "1", "max": "100"}},
            }
        },
    )
    mig = device("mig-0", kind="mig", consumes={"c0": {"memory": "6Gi"}})
    slices = [
        resource_slice("counters", counters={"c0": {"memory": "24Gi"}}, count=2),
        resource_slice("devices", [shared, mig], count=2),
    ]
    for semantics, expected in ((V135, [["mig-0"]]), (Semantics(strict=True), None)):
        world = World(slices, MIG_CLASSES, semantics)
        assert world.devices(share("half", "50")) == [["card-shared"]]
        assert world.devices(claim_object("m", exactly("m", "mig"))) == expected


# -- results -----------------------------------------------------------------------------------


def test_the_result_pins_the_node_and_carries_class_then_claim_config() -> None:
    opaque = {"opaque": {"driver": "gpu.deckhouse.io", "parameters": {"kind": "GpuConfig"}}}
    mine = {"opaque": {"driver": "gpu.deckhouse.io", "parameters": {"kind": "Mine"}}}
    other = {"requests": ["nope"], "opaque": {"driver": "x", "parameters": {}}}
    world = World([resource_slice("s", gpus("a"))], [device_class("gpu", IS_GPU, config=[opaque])])
    outcome = world.allocate(claim_object("c", exactly("gpu"), config=[mine, other]))
    assert outcome.allocations == [
        {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.deckhouse.io", "pool": "p1", "device": "a"}],
                "config": [
                    {"source": "FromClass", "requests": ["gpu"], **opaque},
                    {"source": "FromClaim", **mine},
                ],
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        }
    ]


def test_devices_available_everywhere_need_no_node_selector() -> None:
    world = World([resource_slice("s", gpus("a"), node=None, allNodes=True)])
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.allocations is not None
    assert "nodeSelector" not in outcome.allocations[0]


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "semantics", "message"),
    [
        (
            claim_object("c", exactly("gpu", "missing")),
            V135,
            "claim ns/c request gpu: device class missing not found",
        ),
        (
            claim_object("c", exactly("gpu", selectors=[{"cel": {"expression": " "}}])),
            V135,
            "claim ns/c request gpu: empty CEL selector",
        ),
        (
            share("c", "10"),
            Semantics(consumable=False),
            "claim ns/c request gpu: capacity requests require the DRAConsumableCapacity feature",
        ),
        (
            claim_object("c", first_available("r", {"name": "s", "deviceClassName": "gpu"})),
            Semantics(prioritized_list=False),
            "claim ns/c request r: firstAvailable requires the DRAPrioritizedList feature",
        ),
        (
            claim_object("c", exactly("gpu", adminAccess=True)),
            Semantics(admin_access=False),
            "claim ns/c request gpu: adminAccess requires the DRAAdminAccess feature",
        ),
        (
            claim_object("c", exactly("gpu", count=33)),
            V135,
            "claim ns/c asks for at least 33 devices, more than 32",
        ),
    ],
)
def test_claims_the_scheduler_refuses(claim: dict[str, object], semantics: Semantics, message: str) -> None:
    world = World([resource_slice("s", gpus("a"))], semantics=semantics)
    with pytest.raises(ClaimError, match=re.escape(message)):
        world.claim(claim)


def test_a_selector_that_fails_to_evaluate_is_an_error_not_a_misfit() -> None:
    world = World(
        [resource_slice("s", gpus("a"))],
        [device_class("gpu", 'device.attributes["gpu.deckhouse.io"].missing == "x"')],
    )
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.allocations is None
    assert outcome.error is not None
    assert outcome.error.startswith("CEL selector failed: ")


def test_the_inventory_builder_parses_only_changed_slices() -> None:
    from deckhouse_gpu.domain.allocation.model import InventoryBuilder  # noqa: PLC0415

    first = resource_slice("a", gpus("x"))
    second = resource_slice("b", gpus("y"))
    first["metadata"]["resourceVersion"] = "1"
    second["metadata"]["resourceVersion"] = "1"
    builder = InventoryBuilder()
    before = builder.build([first, second])
    second["metadata"]["resourceVersion"] = "2"
    second["spec"]["devices"][0]["name"] = "z"
    after = builder.build([first, second])
    assert after.slices[0] is before.slices[0]  # unchanged: the same parsed slice, warm caches
    assert [d.name for d in after.slices[1].devices] == ["z"]
    assert [s.name for s in builder.build([second]).slices] == ["b"]
    unversioned = resource_slice("c", gpus("w"))
    assert builder.build([unversioned]).slices[0] is not builder.build([unversioned]).slices[0]
