"""The example DeviceClasses and claims (docs/examples) against what the driver really publishes.

(a) The DeviceClasses are valid objects (DESIGN.md F2.1).
(b) Every selector is evaluated by the module's DRA CEL engine (deckhouse_gpu/domain/cel)
    against every device of the pools rendered from simulated cards of each model, for 1.34 and
    1.35, on a plain node, a sharing node, a node with MIG switched off and after the fallback; each
    class must select exactly the devices it is meant for and fail on none (an evaluation error
    fails the Pod's scheduling on a cluster).
(c) The expressions use only functions that a 1.34 API server accepts in new expressions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.adapters.sim.scenario import parse_scenario
from deckhouse_gpu.domain.apimachinery.quantity import Quantity
from deckhouse_gpu.domain.cel import CompiledSelector, SelectorEngine, SelectorError, device_view
from deckhouse_gpu.domain.offers.model import mig_name, physical_name
from deckhouse_gpu.services.slice_preview import render_nodes
from deckhouse_gpu.simulator.simulation import SimulatedCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
DRIVER = "gpu.deckhouse.io"
MODELS = ("a30", "a100-40gb", "a100-80gb", "h100-80gb", "l40s", "t4")  # the simulator's models
ADDRESSES = {"a30": ("0000:17:00.0", "0000:31:00.0")}  # two cards in one pool; one elsewhere
SHARING, MIG_LABEL = f"{DRIVER}/sharing", f"{DRIVER}/mig"

# (c) What a 1.34 API server accepts in new expressions: libraries introduced before 1.34
# (DESIGN.md F3.2; its NewExpressions environment is that of 1.33). Extend it only
# with functions that entry dates before 1.34: ext.Lists v3, for one, is refused.
ALLOWED_FUNCTIONS = {
    # CEL standard functions and macros
    *("has", "size", "int", "uint", "double", "string", "bool", "matches", "startsWith", "endsWith"),
    *("contains", "all", "exists", "exists_one", "map", "filter"),
    # Kubernetes quantity library (1.28)
    *("quantity", "isQuantity", "sign", "compareTo", "isGreaterThan", "isLessThan", "add", "sub"),
    *("isInteger", "asInteger", "asApproximateFloat"),
    # Kubernetes semver library (1.33)
    *("semver", "isSemver", "major", "minor", "patch"),
}
# allowMultipleAllocations is declared only with DRAConsumableCapacity on; v1.34.9 with the gate
# on accepted it in a new DeviceClass (DESIGN.md F9).
DEVICE_FIELDS = {"driver", "attributes", "capacity", "allowMultipleAllocations"}

_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_NAME}(\.{_NAME})*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _docs(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc is not None]


CLASSES = {c["metadata"]["name"]: c for c in _docs("deviceclasses.yaml")}
CLAIMS = _docs("claims.yaml")


ENGINE = SelectorEngine()


def _selectors(spec: dict[str, Any]) -> list[CompiledSelector]:
    return [ENGINE.compile(entry["cel"]["expression"]) for entry in spec.get("selectors") or []]


SELECTORS = {name: _selectors(c["spec"]) for name, c in CLASSES.items()}


def extended_resource_problem(name: str) -> str | None:
    """The core IsExtendedResourceName check (DESIGN.md F2.1), None when the name is valid."""
    if "/" not in name or "kubernetes.io/" in name:
        return "needs a domain outside kubernetes.io"
    if name.startswith("requests."):
        return "must not start with requests."
    prefix, _, part = f"requests.{name}".partition("/")
    if "/" in part or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix):
        return "requests.<name> is not a qualified name: bad prefix"
    if len(part) > 63 or not _QUALIFIED_NAME_PART.fullmatch(part):
        return "requests.<name> is not a qualified name: bad name"
    return None


# --- the rendered pools and what they are meant to hold ------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    labels: tuple[tuple[str, str], ...] = ()
    partitionable: bool = True  # the API server keeps the fields (DESIGN.md D3 fallback when not)
    consumable: bool = True

    @property
    def shared(self) -> bool:  # DESIGN.md D6: opt-in per node
        return dict(self.labels).get(SHARING) == "true" and self.consumable

    @property
    def mig(self) -> bool:  # DESIGN.md D6: never beside shared offers; off per node; needs counters
        return not self.shared and dict(self.labels).get(MIG_LABEL) != "false" and self.partitionable


VARIANTS = (
    Variant("plain"),
    Variant("sharing", ((SHARING, "true"),)),
    Variant("mig-off", ((MIG_LABEL, "false"),)),
    Variant("fallback", ((SHARING, "true"),), partitionable=False, consumable=False),
)
CASES = [(minor, variant) for minor in (34, 35) for variant in VARIANTS]


@dataclass(frozen=True)
class Offer:
    node: str
    name: str
    model: str
    kind: str  # "whole", "shared" or "mig"
    memory_mib: int
    profile: str | None = None


@pytest.fixture(scope="module")
def cards() -> list[dict[str, Any]]:
    """PhysicalGPUs as the real components write them, from a simulated node per model."""
    nodes = [
        {
            "name": f"node-{m}",
            "gpus": [{"model": m, "address": a} for a in ADDRESSES.get(m, ("0000:3b:00.0",))],
        }
        for m in MODELS
    ]
    cluster = SimulatedCluster(parse_scenario("deviceclasses", yaml.safe_dump({"nodes": nodes})))
    try:
        cluster.start()
        # settle() cannot see a watch event still on its way to a loop (a loaded machine delays
        # the delivery past its quiet period), so wait for what this fixture needs, within a bound.
        deadline = time.monotonic() + 60
        while True:
            found = cluster.physical_gpus()
            unread = [
                (c["metadata"]["name"], c["status"])
                for c in found
                if not c["status"].get("capabilities", {}).get("memoryMiB")
            ]
            if not unread or time.monotonic() > deadline:
                break
            cluster.settle()
    finally:
        cluster.close()
    assert len(found) == 7
    assert unread == [], "a card was not read"
    return found


def intended_offers(cards: list[dict[str, Any]], variant: Variant) -> set[Offer]:
    """The offers DESIGN.md D2, D3 and D6 say each card gives, named as DESIGN.md D5 says."""
    offers = set()
    for card in cards:
        node, address = card["status"]["nodeInfo"]["nodeName"], card["status"]["pciInfo"]["address"]
        model, caps = node.removeprefix("node-"), card["status"]["capabilities"]
        kind = "shared" if variant.shared else "whole"
        offers.add(Offer(node, physical_name(address), model, kind, caps["memoryMiB"]))
        profiles = ((caps.get("nvidia") or {}).get("mig") or {}).get("profiles") or []
        for profile in profiles if variant.mig else []:
            for placement in profile["placements"]:
                name = mig_name(address, profile["name"], placement["start"])
                offers.add(Offer(node, name, model, "mig", profile["memoryMiB"], profile["name"]))
    return offers


def rendered_devices(
    cards: list[dict[str, Any]], minor: int, variant: Variant
) -> Iterator[tuple[str, dict[str, Any]]]:
    labels = dict(variant.labels)
    for piece in render_nodes(cards, minor, labels, variant.partitionable, variant.consumable):
        for device in piece["spec"].get("devices") or []:
            yield piece["spec"]["nodeName"], device


FOREIGN = [  # another driver's GPUs in the same cluster, with names that look like ours
    {"name": "gpu-0", "attributes": {"deviceType": {"string": "Physical"}, "device": {"string": "a30-pcie"}}},
    {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}}, "capacity": {"memory": {"value": "80Gi"}}},
]


@cache
def _evaluate(class_name: str, view_key: str) -> bool | str:
    """Memoized: the same device content recurs across versions and variants."""
    device = {key: value for key, value in json.loads(view_key).items() if value is not None}
    view = device_view(device["driver"], device)
    try:
        return all(s.matches(view) for s in SELECTORS[class_name])
    except SelectorError as error:
        return str(error)


def selected(
    class_name: str, devices: list[tuple[str, str, dict[str, Any]]]
) -> tuple[set[tuple[str, str]], list[str]]:
    chosen, errors = set(), []
    for node, driver, device in devices:
        seen = {key: device.get(key) for key in ("attributes", "capacity", "allowMultipleAllocations")}
        key = json.dumps({**seen, "driver": driver}, sort_keys=True)  # what CEL sees of the device
        result = _evaluate(class_name, key)
        if isinstance(result, str):
            errors.append(f"{node}/{device['name']}: {result}")
        elif result:
            chosen.add((node, device["name"]))
    return chosen, errors


def _offers_of(
    model: str, kinds: tuple[str, ...], profile_slug: str | None = None
) -> Callable[[Offer], bool]:
    def wanted(offer: Offer) -> bool:
        slug = (offer.profile or "").replace("+", "-")
        return offer.model == model and offer.kind in kinds and profile_slug in (None, slug)

    return wanted


def intent(class_name: str) -> Callable[[Offer], bool]:
    """What each example class is for, from its name."""
    special: dict[str, Callable[[Offer], bool]] = {
        "gpu-memory-40gi": lambda o: o.kind != "mig" and o.memory_mib >= 40 * 1024,
        "gpu-mig": lambda o: o.kind == "mig",
        "gpu-shared": lambda o: o.kind == "shared",
    }
    if class_name in special:
        return special[class_name]
    for model in MODELS:
        if class_name == f"gpu-{model}":
            return _offers_of(model, ("whole", "shared"))
        if class_name == f"gpu-{model}-shared":
            return _offers_of(model, ("shared",))
        if class_name.startswith(f"gpu-{model}-mig-"):
            return _offers_of(model, ("mig",), class_name.removeprefix(f"gpu-{model}-mig-"))
    raise AssertionError(f"{class_name}: no intent known for this example class; add one here")


# --- (a) structure -------------------------------------------------------------------------------


def test_device_classes_are_valid_objects() -> None:
    names = [doc["metadata"]["name"] for doc in _docs("deviceclasses.yaml")]
    assert len(names) == len(set(names)), "duplicate DeviceClass names"
    resources = []
    for name, cls in CLASSES.items():
        assert (cls["apiVersion"], cls["kind"]) == ("resource.k8s.io/v1", "DeviceClass")
        assert len(name) <= 253, name
        assert _SUBDOMAIN.fullmatch(name), name
        spec = cls["spec"]
        assert set(spec) <= {"selectors", "config", "extendedResourceName"}, name
        assert 1 <= len(spec["selectors"]) <= 32, name
        assert len(spec.get("config") or []) <= 32, name
        assert all(set(s) == {"cel"} and set(s["cel"]) == {"expression"} for s in spec["selectors"]), name
        if "extendedResourceName" in spec:
            resource = spec["extendedResourceName"]
            assert extended_resource_problem(resource) is None, (name, extended_resource_problem(resource))
            assert resource.startswith(f"{DRIVER}/"), name
            resources.append(resource)
    assert len(resources) == len(set(resources)), "two classes claim one extended resource"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("gpu.deckhouse.io/a30", True),
        ("gpu.deckhouse.io/a100-40gb-1g.5gb-me", True),
        ("gpu.deckhouse.io/a30-1g.6gb+me", False),
        ("a30", False),
        ("kubernetes.io/a30", False),
        ("requests.gpu.deckhouse.io/a30", False),
        ("gpu.deckhouse.io/-a30", False),
        (f"gpu.deckhouse.io/{'a' * 64}", False),
    ],
)
def test_extended_resource_name_check(name: str, valid: bool) -> None:
    assert (extended_resource_problem(name) is None) is valid


# --- (b) selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(("minor", "variant"), CASES, ids=[f"1.{m}-{v.name}" for m, v in CASES])
def test_each_class_selects_exactly_its_devices(
    cards: list[dict[str, Any]], minor: int, variant: Variant
) -> None:
    devices = [(node, DRIVER, device) for node, device in rendered_devices(cards, minor, variant)]
    offers = intended_offers(cards, variant)
    assert {(n, d["name"]) for n, _, d in devices} == {(o.node, o.name) for o in offers}
    devices += [("node-a30", "gpu.nvidia.com", device) for device in FOREIGN]
    problems = []
    for name in CLASSES:
        chosen, errors = selected(name, devices)
        wanted = {(o.node, o.name) for o in offers if intent(name)(o)}
        if errors or chosen != wanted:
            problems.append(
                f"{name}: extra {sorted(chosen - wanted)}, missing {sorted(wanted - chosen)}, {errors[:3]}"
            )
    assert not problems, "\n".join(problems)


def test_every_model_and_profile_has_a_class(cards: list[dict[str, Any]]) -> None:
    plain = intended_offers(cards, VARIANTS[0])
    kinds = {(o.model, "mig", o.profile) for o in plain if o.kind == "mig"}
    kinds |= {(m, kind, None) for m in MODELS for kind in ("whole", "shared")}
    covered = set()
    for name in CLASSES:
        covered |= {k for k in kinds if intent(name)(Offer("", "", k[0], k[1], 0, k[2]))}
    assert kinds - covered == set()


def test_examples_pick_the_a30_devices(cards: list[dict[str, Any]]) -> None:
    devices = [(n, DRIVER, d) for n, d in rendered_devices(cards, 35, VARIANTS[0])]
    a30 = [physical_name(address) for address in ADDRESSES["a30"]]
    assert selected("gpu-a30", devices)[0] == {("node-a30", name) for name in a30}
    assert selected("gpu-a30-mig-1g.6gb", devices)[0] == {
        ("node-a30", f"{n}-mig-1g-6gb-{s}") for n in a30 for s in range(4)
    }
    assert selected("gpu-memory-40gi", devices)[0] == {(f"node-{m}", "gpu-0000-3b-00-0") for m in MODELS[1:5]}
    assert selected("gpu-a30-shared", devices)[0] == set()


# --- the claims ------------------------------------------------------------------------------------


def _templates() -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in CLAIMS if c["kind"] == "ResourceClaimTemplate"}


def test_pod_extended_resources_name_one_class() -> None:
    resources = {c["spec"].get("extendedResourceName"): n for n, c in CLASSES.items()}
    for pod in (c for c in CLAIMS if c["kind"] == "Pod"):
        for container in pod["spec"]["containers"]:
            for resource in container["resources"].get("limits") or {}:
                assert resource in resources, f"{pod['metadata']['name']}: {resource} maps to no class"
            for claim in container["resources"].get("claims") or []:
                names = {c["name"]: c for c in pod["spec"]["resourceClaims"]}
                assert names[claim["name"]]["resourceClaimTemplateName"] in _templates()


def test_shared_claim_asks_for_a_share_the_devices_allow(cards: list[dict[str, Any]]) -> None:
    request = _templates()["a30-half"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    share = Quantity.parse(request["capacity"]["requests"]["sharePercent"])
    devices = [(n, DRIVER, d) for n, d in rendered_devices(cards, 35, VARIANTS[1])]
    chosen = selected(request["deviceClassName"], devices)[0]
    assert {n for n, _ in chosen} == {"node-a30"}
    assert len(chosen) == 2
    for node, _, device in devices:
        if (node, device["name"]) in chosen:
            policy = device["capacity"]["sharePercent"]["requestPolicy"]["validRange"]
            low, high, step = (Quantity.parse(policy[k]).value for k in ("min", "max", "step"))
            assert low <= share.value <= high
            assert (share.value - low) % step == 0


@pytest.mark.parametrize("variant", VARIANTS[:2], ids=lambda v: v.name)
def test_mig_claim_selects_the_a30_2g_instances(cards: list[dict[str, Any]], variant: Variant) -> None:
    request = _templates()["a30-mig-2g"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    selectors = SELECTORS[request["deviceClassName"]] + _selectors(request)
    chosen = {
        (node, device["name"])
        for node, device in rendered_devices(cards, 34, variant)
        if all(s.matches(device_view(DRIVER, device)) for s in selectors)
    }
    wanted = {(o.node, o.name) for o in intended_offers(cards, variant) if o.profile == "2g.12gb"}
    assert chosen == wanted
    assert len(wanted) == (4 if variant.mig else 0)


# --- (c) functions ---------------------------------------------------------------------------------


def _all_selectors() -> Iterator[CompiledSelector]:
    for selectors in SELECTORS.values():
        yield from selectors
    for template in _templates().values():
        for request in template["spec"]["spec"]["devices"]["requests"]:
            yield from _selectors(request["exactly"])


def test_selectors_use_only_what_a_1_34_api_server_accepts() -> None:
    for selector in _all_selectors():
        assert selector.functions <= ALLOWED_FUNCTIONS, selector.expression
        assert selector.device_fields <= DEVICE_FIELDS, selector.expression


def test_cel_glue_follows_kubernetes_semantics() -> None:
    device = {
        "attributes": {"model": {"string": "x"}, "resource.kubernetes.io/pcieRoot": {"string": "pci0000:3b"}},
        "capacity": {"memory": {"value": "40960Mi"}},
    }
    view = device_view(DRIVER, device)
    holds = {
        'device.attributes["gpu.deckhouse.io"].model == "x"': True,  # unqualified: the driver's domain
        'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:3b"': True,
        'has(device.attributes["example.com"].model)': False,  # unknown domain: an empty map
        'device.capacity["gpu.deckhouse.io"].memory == quantity("40Gi")': True,  # by value
        "device.allowMultipleAllocations": False,
    }
    for expression, expected in holds.items():
        assert ENGINE.compile(expression).matches(view) is expected, expression
    for wrong in (
        'device.attributes["gpu.deckhouse.io/model"] == "x"',  # DESIGN.md S7.2's form: a map is not a string
        'device.attributes["gpu.deckhouse.io"].missing == "x"',  # unknown name: an error
        'device.capacity["gpu.deckhouse.io"].memory >= quantity("1Gi")',  # quantities use compareTo
        'device.attributes["gpu.deckhouse.io"].model',  # not a bool
    ):
        with pytest.raises(SelectorError):
            ENGINE.compile(wrong).matches(view)


# --- the CEL and YAML examples of docs/DRA.md and docs/DRA.ru.md -----------------------------------

DOCS = [EXAMPLES.parent / "DRA.md", EXAMPLES.parent / "DRA.ru.md"]
_TABLE_CEL = re.compile(r"^\|.*\| `((?:device\.|has\().*)` \|$")


def doc_cel_examples() -> list[str]:
    """The CEL example of every table row that ends with one (the attribute and capacity tables)."""
    return [m[1] for doc in DOCS for line in doc.read_text().splitlines() if (m := _TABLE_CEL.match(line))]


def test_doc_cel_examples_are_safe_and_select_something(cards: list[dict[str, Any]]) -> None:
    examples = doc_cel_examples()
    assert len(examples) >= 2 * 19, "the attribute and capacity tables of both languages"
    devices = [d for v in VARIANTS[:2] for _, d in rendered_devices(cards, 35, v)]
    views = [device_view(DRIVER, device) for device in devices]
    for expression in sorted(set(examples)):
        selector = ENGINE.compile(expression)
        assert selector.functions <= ALLOWED_FUNCTIONS, expression
        assert selector.device_fields <= DEVICE_FIELDS, expression
        # A list, not a generator: every device is evaluated, so an unguarded example fails.
        assert any([selector.matches(view) for view in views]), f"selects nothing: {expression}"


def test_doc_yaml_objects_are_the_examples() -> None:
    shown = 0
    for doc in DOCS:
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL):
            obj = yaml.safe_load(block)
            if isinstance(obj, dict) and obj.get("kind") == "DeviceClass":
                assert obj == CLASSES[obj["metadata"]["name"]], f"{doc.name}: differs from the example"
                shown += 1
    assert shown == 2
