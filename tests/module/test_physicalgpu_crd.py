"""The PhysicalGPU CRD (crds/physicalgpu.yaml) and its Russian twin stay in sync with the models.

The models in ``deckhouse_gpu.domain.physicalgpu`` are what the components write; the CRD is what
the API server accepts. Any drift between them (a renamed field, a new enum value, an optional
field that became required) must fail here rather than as a pruned field or a rejected status
update on a real cluster.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.domain import physicalgpu as pg
from deckhouse_gpu.domain.codec import encode, field_key, openapi_schema

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "physicalgpu.yaml"
RU_FILE = ROOT / "crds" / "doc-ru-physicalgpu.yaml"

# Keys that only constrain or document values; the structural shape is what remains.
VALIDATION_KEYS = frozenset(
    {
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "required",
    }
)
CYRILLIC = re.compile("[\u0400-\u04ff]")

Schema = dict[str, Any]


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as stream:
        data = yaml.safe_load(stream)
    assert isinstance(data, dict), f"{path} is not a YAML mapping"
    return data


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return load(CRD_FILE)


@pytest.fixture(scope="module")
def ru() -> dict[str, Any]:
    return load(RU_FILE)


@pytest.fixture(scope="module")
def version(crd: dict[str, Any]) -> dict[str, Any]:
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == pg.VERSION]
    assert isinstance(entry, dict)
    return entry


@pytest.fixture(scope="module")
def root(version: dict[str, Any]) -> Schema:
    schema = version["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


@pytest.fixture(scope="module")
def status(root: Schema) -> Schema:
    schema = root["properties"]["status"]
    assert isinstance(schema, dict)
    return schema


# --- helpers -------------------------------------------------------------------------------------


def walk(schema: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    """Every schema node with a readable path: ``status.pciInfo.address``, ``status.conditions[]``."""
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}" if path else name)
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")


def node_at(schema: Schema, path: str) -> Schema:
    """The node of ``walk``'s path ``path`` (relative to ``schema``)."""
    for candidate, node in walk(schema, ""):
        if candidate == path:
            return node
    raise KeyError(path)


def structural(schema: Any) -> Any:
    """``schema`` without descriptions and validation-only keys: what ``openapi_schema`` produces."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in VALIDATION_KEYS or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: structural(child) for name, child in value.items()}
        elif key == "items":
            out[key] = structural(value)
        else:
            out[key] = value
    return out


def differences(expected: Any, actual: Any, path: str = "status") -> list[str]:
    """Human-readable differences between two JSON values, each naming its path."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found: list[str] = []
        for key in sorted(expected.keys() - actual.keys()):
            found.append(f"{path}.{key}: in the models, missing in the CRD ({expected[key]!r})")
        for key in sorted(actual.keys() - expected.keys()):
            found.append(f"{path}.{key}: in the CRD, not in the models ({actual[key]!r})")
        for key in sorted(expected.keys() & actual.keys()):
            found.extend(differences(expected[key], actual[key], f"{path}.{key}"))
        return found
    if expected != actual:
        return [f"{path}: models say {expected!r}, the CRD says {actual!r}"]
    return []


def allows_none(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def required_mismatches(tp: Any, schema: Schema, path: str) -> list[str]:
    """Compares every object's ``required`` with the fields of its dataclass that cannot be None."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return required_mismatches(inner, schema, path)
    if origin is list:
        (item,) = typing.get_args(tp)
        return required_mismatches(item, schema["items"], f"{path}[]")
    if not dataclasses.is_dataclass(tp):
        return []
    hints = typing.get_type_hints(tp)
    fields = dataclasses.fields(tp)
    expected = sorted(field_key(f) for f in fields if not allows_none(hints[f.name]))
    actual = sorted(schema.get("required", []))
    found = []
    if expected != actual:
        found.append(f"{path}: {getattr(tp, '__name__', tp)} needs required={expected}, the CRD has {actual}")
    for f in fields:
        found.extend(
            required_mismatches(hints[f.name], schema["properties"][field_key(f)], f"{path}.{field_key(f)}")
        )
    return found


TOKEN = re.compile(r'\.(?P<name>\w+)|\[\?\(@\.(?P<field>\w+)=="(?P<value>[^"]*)"\)\]')
METADATA_FIELDS = {"name", "creationTimestamp", "labels", "annotations", "deletionTimestamp"}


def resolve(root: Schema, json_path: str) -> Schema | None:
    """The schema node a printer column's JSONPath reads; None for standard metadata fields.

    Supports the forms printer columns use: ``.a.b`` and ``.list[?(@.key=="value")].field``.
    """
    tokens = list(TOKEN.finditer(json_path))
    covered = "".join(match.group(0) for match in tokens)
    assert covered == json_path, f"{json_path}: unsupported JSONPath syntax"
    if tokens[0].group("name") == "metadata":
        assert len(tokens) == 2, json_path
        assert tokens[1].group("name") in METADATA_FIELDS, json_path
        return None
    node = root
    for token in tokens:
        if token.group("name"):
            properties = node.get("properties", {})
            assert token.group("name") in properties, f"{json_path}: no property {token.group('name')!r}"
            node = properties[token.group("name")]
        else:
            assert node.get("type") == "array", f"{json_path}: a filter on a non-list"
            node = node["items"]
            assert token.group("field") in node.get("properties", {}), f"{json_path}: filter field"
    return node


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
}


def has_type(kind: str, value: Any) -> bool:
    # bool is an int in Python but never a JSON integer.
    return isinstance(value, JSON_TYPES[kind]) and not (kind == "integer" and isinstance(value, bool))


def validate(schema: Schema, value: Any, path: str = "status") -> list[str]:
    """A small OpenAPI validator for the keywords the CRD uses, to check encoded model values."""
    kind = schema["type"]
    if not has_type(kind, value):
        return [f"{path}: {value!r} is not {kind}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and not re.fullmatch(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value} < {schema['minimum']}")
    if schema.get("format") == "date-time":
        try:
            datetime.datetime.fromisoformat(value)
        except ValueError:
            errors.append(f"{path}: {value!r} is not a date-time")
    if kind == "object":
        properties = schema.get("properties", {})
        errors.extend(f"{path}.{key}: required" for key in schema.get("required", []) if key not in value)
        for key, item in value.items():
            if key not in properties:
                errors.append(f"{path}.{key}: not in the CRD (the API server would prune it)")
            else:
                errors.extend(validate(properties[key], item, f"{path}.{key}"))
    if kind == "array":
        for index, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{path}[{index}]"))
    return errors


def description_paths(schema: Schema) -> set[str]:
    return {path for path, node in walk(schema, "") if "description" in node}


SOME_TIME = "2025-01-02T03:04:05Z"


def a30_status() -> pg.PhysicalGPUStatus:
    """A fully populated status with the values of a real A30 (specification section 4.2)."""
    named = pg.NamedID
    profiles = [
        pg.MigProfile(14, "1g.6gb", 5949, 1, 4, 14, 1, 1, 0, 0, 0, [pg.MigPlacement(i, 1) for i in range(4)]),
        pg.MigProfile(21, "1g.6gb+me", 5949, 1, 1, placements=[pg.MigPlacement(i, 1) for i in range(4)]),
        pg.MigProfile(5, "2g.12gb", 12032, 2, 2, placements=[pg.MigPlacement(0, 2), pg.MigPlacement(2, 2)]),
        pg.MigProfile(6, "2g.12gb+me", 12032, 2, 1),
        pg.MigProfile(0, "4g.24gb", 24125, 4, 1, placements=[pg.MigPlacement(0, 4)]),
    ]
    return pg.PhysicalGPUStatus(
        node_info=pg.NodeInfo(
            "worker-1", pg.OSInfo("ubuntu", "22.04", "Ubuntu 22.04.4 LTS"), "5.15.0-91", True
        ),
        pci_info=pg.PCIInfo(
            address="0000:02:00.0",
            class_=pg.PCIClass("0302", "3D controller"),
            vendor=named("10de", "NVIDIA Corporation"),
            device=named("20b7", "GA100GL [A30 PCIe]"),
            subsystem=pg.PCISubsystem("10de", "1532", "A30"),
            iommu_group=17,
            numa_node=0,
        ),
        capabilities=pg.Capabilities(
            product_name="NVIDIA A30",
            memory_mib=24576,
            vendor=pg.Vendor.NVIDIA,
            nvidia=pg.NvidiaCapabilities(
                compute_cap="8.0",
                product_architecture="Ampere",
                board_part_number="900-21001-0040-100",
                compute_types=["FP32", "FP64", "FP16", "BF16", "TF32", "INT8", "INT4"],
                power_limit_min_w=100,
                power_limit_max_w=165,
                mig_supported=True,
                mig=pg.MigCapabilities(total_slices=4, profiles=profiles),
            ),
        ),
        conditions=[
            pg.Condition(
                "DriverReady", pg.ConditionStatus.TRUE, "ValidatorReady", "", "2025-01-02T03:04:05Z", 1
            ),
            pg.Condition("HardwareHealthy", pg.ConditionStatus.TRUE, "NVMLOk", "ok", "2025-01-02T03:04:05Z"),
        ],
        current_state=pg.CurrentState(
            driver_type=pg.DriverType.NVIDIA,
            driver_name="nvidia",
            nvidia=pg.NvidiaState(
                gpu_uuid="GPU-5c8a6f1e-2b7d-4e0a-9f33-0123456789ab",
                driver_version="580.76.05",
                cuda_version="13.0",
                power_limit_current_w=165,
                power_limit_enforced_w=165,
                mig=pg.NvidiaMigState(pg.MigMode.DISABLED),
            ),
        ),
    )


# --- (a) structure ---------------------------------------------------------------------------------


def test_status_schema_matches_the_models(status: Schema) -> None:
    found = differences(openapi_schema(pg.PhysicalGPUStatus), structural(status))
    assert not found, "CRD status schema drifted from the models:\n" + "\n".join(found)


def test_difference_report_names_the_path() -> None:
    expected = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
    }
    actual = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
    }
    assert differences(expected, actual) == [
        "status.properties.a.properties.b.type: models say 'integer', the CRD says 'string'"
    ]


def test_crd_identity(crd: dict[str, Any], version: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{pg.PLURAL}.{pg.GROUP}"
    assert crd["metadata"]["labels"] == {"module": "gpu", "heritage": "deckhouse"}
    spec = crd["spec"]
    assert spec["group"] == pg.GROUP
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == pg.KIND
    assert spec["names"]["plural"] == pg.PLURAL
    assert spec["names"]["shortNames"] == ["pgpu"]
    assert spec["names"]["categories"] == ["deckhouse", "gpu"]
    assert [v["name"] for v in spec["versions"]] == [pg.VERSION]
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_spec_is_an_empty_object(root: Schema) -> None:
    spec = root["properties"]["spec"]
    assert structural(spec) == {"type": "object"}


def test_schema_is_structural(root: Schema) -> None:
    """What a real API server demands: a type on every node, no defaults in status, sane keywords."""
    allowed_formats = {"date-time", "int64", "int32"}
    for path, node in walk(root, ""):
        assert node.get("type") in {"object", "array", "string", "integer", "boolean", "number"}, path
        assert "default" not in node, f"{path}: defaults are not applied under status"
        assert "nullable" not in node, path
        assert "additionalProperties" not in node, path
        for key in node:
            assert key in VALIDATION_KEYS | {"type", "properties", "items", "enum"} or key in {
                "x-kubernetes-list-type",
                "x-kubernetes-list-map-keys",
            }, f"{path}: unexpected keyword {key}"
        if "format" in node:
            assert node["format"] in allowed_formats, path
        if "pattern" in node:
            assert node["type"] == "string", path
            re.compile(node["pattern"])
        for name in node.get("required", []):
            assert name in node.get("properties", {}), f"{path}: required {name!r} is not a property"
        if node["type"] == "array":
            assert "items" in node, path
        for value in node.get("enum", []):
            assert isinstance(value, str), f"{path}: enum value {value!r} is not a string (quote it)"


# --- (b) descriptions ---------------------------------------------------------------------------


def test_every_node_has_a_description(root: Schema) -> None:
    missing = [
        path or "<root>" for path, node in walk(root, "") if not str(node.get("description", "")).strip()
    ]
    assert not missing, f"schema nodes without a description: {missing}"


def test_english_crd_has_no_cyrillic() -> None:
    lines = [n for n, line in enumerate(CRD_FILE.read_text("utf-8").splitlines(), 1) if CYRILLIC.search(line)]
    assert not lines, f"Cyrillic in {CRD_FILE.name} on lines {lines}"


# --- (c) the Russian twin -----------------------------------------------------------------------


def test_ru_twin_has_the_same_descriptions(root: Schema, ru: dict[str, Any]) -> None:
    (ru_version,) = ru["spec"]["versions"]
    assert ru_version["name"] == pg.VERSION
    ru_root = ru_version["schema"]["openAPIV3Schema"]
    english, russian = description_paths(root), description_paths(ru_root)
    assert not english - russian, f"not translated: {sorted(english - russian)}"
    assert not russian - english, f"translated but absent from the CRD: {sorted(russian - english)}"


def test_ru_twin_holds_only_descriptions(crd: dict[str, Any], ru: dict[str, Any]) -> None:
    assert set(ru) == {"spec"}
    assert set(ru["spec"]) == {"versions"}
    assert [v["name"] for v in ru["spec"]["versions"]] == [v["name"] for v in crd["spec"]["versions"]]
    for entry in ru["spec"]["versions"]:
        assert set(entry) == {"name", "schema"}
        assert set(entry["schema"]) == {"openAPIV3Schema"}
        for path, node in walk(entry["schema"]["openAPIV3Schema"], ""):
            extra = set(node) - {"description", "properties", "items"}
            assert not extra, f"{path or '<root>'}: the twin may hold only descriptions, found {extra}"
            if "description" in node:
                text = node["description"]
                assert isinstance(text, str), path
                assert CYRILLIC.search(text), f"{path or '<root>'}: description is not in Russian"


# --- (d) list-map conditions and printer columns ------------------------------------------------------


def test_conditions_are_a_list_map_keyed_by_type(status: Schema) -> None:
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert "type" in item["required"], "list-map keys must be required"
    properties = item["properties"]
    assert properties["lastTransitionTime"]["format"] == "date-time"
    assert properties["reason"]["maxLength"] == 1024
    assert properties["reason"]["minLength"] == 1
    assert properties["message"]["maxLength"] == 32768
    assert properties["type"]["maxLength"] == 316
    assert properties["observedGeneration"]["minimum"] == 0


def test_printer_columns_are_the_operator_view(version: dict[str, Any]) -> None:
    columns = [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Node", 0),
        ("Model", 0),
        ("Memory(MiB)", 0),
        ("MIG", 0),
        ("DriverReady", 0),
        ("HardwareHealthy", 0),
        ("Age", 0),
        ("Address", 1),
        ("Driver", 1),
        ("Product", 1),
        ("UUID", 1),
    ]


def test_printer_columns_match_the_model(version: dict[str, Any]) -> None:
    """``PRINTER_COLUMNS`` renders the simulator's ``kubectl get`` view; it must be the CRD's."""
    in_crd = [
        pg.PrinterColumn(c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
        for c in version["additionalPrinterColumns"]
    ]
    assert in_crd == list(pg.PRINTER_COLUMNS)


def test_printer_columns_resolve_to_schema_properties(root: Schema, version: dict[str, Any]) -> None:
    column_types = {"string": "string", "integer": "integer", "boolean": "boolean", "number": "number"}
    for column in version["additionalPrinterColumns"]:
        node = resolve(root, column["jsonPath"])
        if node is None:
            assert column["type"] == "date", column["name"]
            continue
        assert column_types.get(column["type"]) == node["type"], f"{column['name']}: type mismatch"


@pytest.mark.parametrize(
    "json_path",
    [
        ".status.pciInfo.nope",
        '.status.conditions[?(@.nope=="DriverReady")].status',
        '.status.nodeInfo[?(@.type=="X")].nodeName',
        ".status.pciInfo..address",
    ],
)
def test_resolve_rejects_paths_that_do_not_exist(root: Schema, json_path: str) -> None:
    with pytest.raises(AssertionError):
        resolve(root, json_path)


def test_condition_columns_filter_on_known_condition_types(version: dict[str, Any]) -> None:
    filtered = {
        match.group("value")
        for column in version["additionalPrinterColumns"]
        for match in TOKEN.finditer(column["jsonPath"])
        if match.group("field")
    }
    assert filtered == {"DriverReady", "HardwareHealthy"}


# --- (e) required fields -------------------------------------------------------------------------


def test_required_lists_match_non_optional_fields(status: Schema) -> None:
    found = required_mismatches(pg.PhysicalGPUStatus, status, "status")
    assert not found, "\n".join(found)


def test_required_covers_the_documented_minimum(status: Schema) -> None:
    assert set(node_at(status, "pciInfo")["required"]) == {"address", "class", "vendor", "device"}
    assert set(node_at(status, "pciInfo.subsystem")["required"]) == {"vendorID", "deviceID"}
    assert set(node_at(status, "capabilities.nvidia.mig")["required"]) == {"totalSlices", "profiles"}
    assert set(node_at(status, "currentState.nvidia.mig")["required"]) == {"mode"}
    assert set(node_at(status, "capabilities.nvidia.mig.profiles[]")["required"]) == {
        "profileID",
        "name",
        "memoryMiB",
        "sliceCount",
        "maxInstances",
    }


# --- (f) validation patterns --------------------------------------------------------------------------

HEX4_GOOD = ["10de", "20b7", "1002", "0000"]
HEX4_BAD = ["10DE", "0x10de", "10d", "10dee", "10de\n", "", "g0de"]


@pytest.mark.parametrize(
    ("path", "good", "bad"),
    [
        (
            "pciInfo.address",
            ["0000:02:00.0", "0000:af:1f.7", "0001:c1:00.1"],
            ["0000:02:00", "02:00.0", "0000:02:00.8", "0000:AF:00.0", "0000:02:00.0\n", "0000-02-00-0", ""],
        ),
        (
            "pciInfo.class.code",
            ["0302", "0300", "030200"],
            ["0x0302", "030", "03020", "0302000", "030g", "0302 "],
        ),
        ("pciInfo.vendor.id", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.device.id", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.subsystem.vendorID", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.subsystem.deviceID", HEX4_GOOD, HEX4_BAD),
        (
            "conditions[].reason",
            ["NVMLUnavailable", "DriverNotReady", "A", "Driver_not:ready,2"],
            ["", "1Reason", "Not Ready", "Reason-", "Reason:"],
        ),
        (
            "conditions[].type",
            ["DriverReady", "HardwareHealthy", "gpu.deckhouse.io/Custom"],
            ["", "Driver Ready", "-Driver", "Driver/"],
        ),
        ("capabilities.nvidia.computeCap", ["8.0", "9.0", "12.10"], ["8", "v8.0", "8.0.1", "8,0"]),
        ("currentState.nvidia.cudaVersion", ["13.0", "12.8"], ["13", "13.0.1", "cuda13.0"]),
    ],
)
def test_patterns(status: Schema, path: str, good: list[str], bad: list[str]) -> None:
    pattern = node_at(status, path)["pattern"]
    rejected = [value for value in good if not re.fullmatch(pattern, value)]
    accepted = [value for value in bad if re.fullmatch(pattern, value)]
    assert not rejected, f"{path}: real values rejected: {rejected}"
    assert not accepted, f"{path}: bad values accepted: {accepted}"


def test_counts_are_not_negative(status: Schema) -> None:
    integers = [(path, node) for path, node in walk(status, "") if node["type"] == "integer"]
    assert integers
    unbounded = [path for path, node in integers if node.get("minimum", -1) < 0]
    assert not unbounded, f"integers without minimum >= 0: {unbounded}"


# --- encoded model values against the CRD ---------------------------------------------------------


def test_a_real_status_passes_the_crd_validation(status: Schema) -> None:
    errors = validate(status, encode(a30_status()))
    assert not errors, "\n".join(errors)


def test_a_minimal_status_passes_the_crd_validation(status: Schema) -> None:
    minimal = pg.PhysicalGPUStatus(
        pci_info=pg.PCIInfo("0000:02:00.0", pg.PCIClass("0302"), pg.NamedID("10de"), pg.NamedID("20b7"))
    )
    assert validate(status, encode(minimal)) == []


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"pci_info": {"address": "0000:02:00"}}, "status.pciInfo.address"),
        ({"pci_info": {"vendor": pg.NamedID("10DE")}}, "status.pciInfo.vendor.id"),
        ({"pci_info": {"numa_node": -1}}, "status.pciInfo.numaNode"),
        (
            {"current_state": {"nvidia": pg.NvidiaState(cuda_version="13")}},
            "status.currentState.nvidia.cudaVersion",
        ),
    ],
)
def test_bad_values_fail_the_crd_validation(status: Schema, changes: dict[str, Any], fragment: str) -> None:
    value = a30_status()
    for name, fields in changes.items():
        value = dataclasses.replace(value, **{name: dataclasses.replace(getattr(value, name), **fields)})
    errors = validate(status, encode(value))
    assert any(error.startswith(fragment) for error in errors), errors


def test_a_condition_with_a_bad_reason_fails_the_crd_validation(status: Schema) -> None:
    bad = pg.Condition("DriverReady", pg.ConditionStatus.FALSE, "Not ready", "", SOME_TIME)
    errors = validate(status, encode(pg.PhysicalGPUStatus(conditions=[bad])))
    assert errors == ["status.conditions[0].reason: 'Not ready' does not match " + bad_reason_pattern(status)]


def bad_reason_pattern(status: Schema) -> str:
    pattern = node_at(status, "conditions[].reason")["pattern"]
    assert isinstance(pattern, str)
    return pattern
