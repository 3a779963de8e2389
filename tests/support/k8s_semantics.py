"""Semantic rules of built-in Kubernetes types that the API server enforces and an OpenAPI schema
check does not see, for the kinds the module renders.

A ``matchFields`` term on ``metadata.name`` with two values is well-formed for the OpenAPI schema
and rejected by the API server (``ValidateNodeFieldSelectorRequirement``): that is how three
DaemonSets passed every test and failed on a cluster with two GPU nodes. The rules here follow
``pkg/apis/core/validation``, ``pkg/apis/apps/validation``, ``pkg/apis/policy/validation``,
``pkg/apis/admissionregistration/validation`` and ``apimachinery``'s name and label checks, for the
fields the module actually sets; messages name the field path as the server does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Obj = Mapping[str, Any]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
SELECTOR_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
ENV_FIELD_PATHS = {
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
}
HOST_PATH_TYPES = {
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
}
VOLUME_SOURCES = {
    "hostPath",
    "emptyDir",
    "secret",
    "configMap",
    "projected",
    "downwardAPI",
    "persistentVolumeClaim",
}
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
MAX_ANNOTATIONS_BYTES = 256 * 1024
# What etcd accepts in one request by default (--max-request-bytes 1.5 MiB); the API server refuses
# larger objects with "etcdserver: request is too large".
MAX_OBJECT_BYTES = 1536 * 1024


def qualified_name_errors(value: str, path: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS subdomain prefix and a name of at most 63 characters."""
    prefix, _, name = value.rpartition("/")
    errors = []
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        errors.append(f"{path}: Invalid value: {value!r}: prefix part must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        errors.append(
            f"{path}: Invalid value: {value!r}: name part must be a qualified name of at most 63 characters"
        )
    return errors


def label_errors(labels: Mapping[str, Any] | None, path: str) -> list[str]:
    errors = []
    for key, value in (labels or {}).items():
        errors += qualified_name_errors(key, f"{path}")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(
                f"{path}: Invalid value: {value!r}: a label value must be at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends"
            )
    return errors


def annotation_errors(annotations: Mapping[str, Any] | None, path: str) -> list[str]:
    errors = []
    total = 0
    for key, value in (annotations or {}).items():
        errors += qualified_name_errors(key, path)
        total += len(key) + len(str(value))
    if total > MAX_ANNOTATIONS_BYTES:
        errors.append(f"{path}: Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")
    return errors


def iana_port_name_errors(name: str, path: str) -> list[str]:
    if len(name) > 15 or not IANA_SVC_NAME.match(name) or "--" in name or not re.search("[a-z]", name):
        return [
            f"{path}: Invalid value: {name!r}: must be no more than 15 characters, lowercase alphanumerics and '-', with at least one letter and no '--'"
        ]
    return []


def quantity_errors(value: Any, path: str) -> list[str]:
    if isinstance(value, int) or (isinstance(value, str) and QUANTITY.match(value)):
        return []
    return [f"{path}: Invalid value: {value!r}: must match the regular expression of a quantity"]


def node_selector_requirement_errors(requirement: Obj, path: str) -> list[str]:
    operator, values = requirement.get("operator"), requirement.get("values") or []
    errors = qualified_name_errors(requirement.get("key", ""), f"{path}.key")
    if operator not in SELECTOR_OPERATORS:
        errors.append(f'{path}.operator: Invalid value: "{operator}": not a valid selector operator')
    elif operator in ("In", "NotIn") and not values:
        errors.append(f"{path}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            f"{path}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    elif operator in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
        errors.append(
            f"{path}.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        )
    return errors


def node_field_requirement_errors(requirement: Obj, path: str) -> list[str]:
    """``ValidateNodeFieldSelectorRequirement``: metadata.name only, In/NotIn with exactly one value."""
    errors = []
    if requirement.get("key") != "metadata.name":
        errors.append(
            f'{path}.key: Invalid value: "{requirement.get("key")}": not a valid field selector key'
        )
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator not in ("In", "NotIn"):
        errors.append(f'{path}.operator: Invalid value: "{operator}": not a valid selector operator')
    elif len(values) != 1:
        errors.append(
            f"{path}.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
        )
    return errors


def affinity_errors(affinity: Obj | None, path: str) -> list[str]:
    errors: list[str] = []
    node = (affinity or {}).get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        at = f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not terms:
            errors.append(f"{at}: Required value: must have at least one node selector term")
        for t, term in enumerate(terms):
            for r, requirement in enumerate(term.get("matchExpressions") or []):
                errors += node_selector_requirement_errors(requirement, f"{at}[{t}].matchExpressions[{r}]")
            for r, requirement in enumerate(term.get("matchFields") or []):
                errors += node_field_requirement_errors(requirement, f"{at}[{t}].matchFields[{r}]")
    for kind in ("podAffinity", "podAntiAffinity"):
        for w, weighted in enumerate(
            (affinity or {}).get(kind, {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ):
            at = f"{path}.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{w}]"
            if not 1 <= int(weighted.get("weight", 0)) <= 100:
                errors.append(f"{at}.weight: Invalid value: must be in the range 1-100")
            if not weighted.get("podAffinityTerm", {}).get("topologyKey"):
                errors.append(f"{at}.podAffinityTerm.topologyKey: Required value: can not be empty")
    return errors


def toleration_errors(tolerations: Iterable[Obj], path: str) -> list[str]:
    errors = []
    for index, toleration in enumerate(tolerations):
        at = f"{path}[{index}]"
        key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
        if key:
            errors += qualified_name_errors(key, f"{at}.key")
        elif operator != "Exists":
            errors.append(
                f"{at}.operator: Invalid value: {operator!r}: operator must be Exists when `key` is empty"
            )
        if operator == "Exists" and toleration.get("value"):
            errors.append(f"{at}.operator: Invalid value: value must be empty when `operator` is 'Exists'")
        if operator not in ("Equal", "Exists"):
            errors.append(f"{at}.operator: Unsupported value: {operator!r}")
        effect = toleration.get("effect", "")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(f"{at}.effect: Unsupported value: {effect!r}")
        if "tolerationSeconds" in toleration and effect != "NoExecute":
            errors.append(
                f"{at}.effect: Invalid value: effect must be 'NoExecute' when `tolerationSeconds` is set"
            )
    return errors


def volume_errors(volumes: list[Obj], path: str) -> list[str]:
    errors = []
    seen: set[str] = set()
    for index, volume in enumerate(volumes):
        at = f"{path}[{index}]"
        name = volume.get("name", "")
        if not DNS1123_LABEL.match(name) or len(name) > 63:
            errors.append(f"{at}.name: Invalid value: {name!r}: must be a DNS-1123 label")
        if name in seen:
            errors.append(f"{at}.name: Duplicate value: {name!r}")
        seen.add(name)
        sources = [key for key in volume if key != "name"]
        if len(sources) != 1:
            errors.append(f"{at}: Invalid value: must specify exactly one volume source, found {sources}")
            continue
        source, spec = sources[0], volume[sources[0]] or {}
        if source not in VOLUME_SOURCES:
            errors.append(f"{at}: volume source {source} is not one the module may use")
        if source == "hostPath":
            host = spec.get("path", "")
            if not host or ".." in host.split("/"):
                errors.append(
                    f"{at}.hostPath.path: Invalid value: {host!r}: must be non-empty and must not contain '..'"
                )
            if spec.get("type", "") not in HOST_PATH_TYPES:
                errors.append(f"{at}.hostPath.type: Unsupported value: {spec.get('type')!r}")
        if source == "emptyDir":
            if spec.get("medium", "") not in ("", "Memory"):
                errors.append(f"{at}.emptyDir.medium: Unsupported value: {spec.get('medium')!r}")
            if "sizeLimit" in spec:
                errors += quantity_errors(spec["sizeLimit"], f"{at}.emptyDir.sizeLimit")
        if source == "secret" and not spec.get("secretName"):
            errors.append(f"{at}.secret.secretName: Required value")
        if source == "configMap" and not spec.get("name"):
            errors.append(f"{at}.configMap.name: Required value")
    return errors


def probe_errors(probe: Obj, kind: str, ports: set[str], path: str) -> list[str]:
    errors = []
    handlers = [h for h in PROBE_HANDLERS if h in probe]
    if len(handlers) != 1:
        errors.append(f"{path}: Required value: must specify exactly one handler type, found {handlers}")
    if kind in ("livenessProbe", "startupProbe") and probe.get("successThreshold", 1) != 1:
        errors.append(f"{path}.successThreshold: Invalid value: must be 1")
    for field, minimum in (
        ("periodSeconds", 1),
        ("timeoutSeconds", 1),
        ("failureThreshold", 1),
        ("initialDelaySeconds", 0),
    ):
        if field in probe and int(probe[field]) < minimum:
            errors.append(f"{path}.{field}: Invalid value: must be greater than or equal to {minimum}")
    for handler in ("httpGet", "tcpSocket", "grpc"):
        port = (probe.get(handler) or {}).get("port")
        if isinstance(port, str):
            errors += iana_port_name_errors(port, f"{path}.{handler}.port")
            # The server checks only the form; the kubelet fails the probe on a name it cannot resolve.
            if port not in ports:
                errors.append(
                    f"{path}.{handler}.port: Invalid value: {port!r}: no container port of that name"
                )
        elif isinstance(port, int) and not 1 <= port <= 65535:
            errors.append(f"{path}.{handler}.port: Invalid value: {port}: must be between 1 and 65535")
    path_value = (probe.get("httpGet") or {}).get("path")
    if path_value is not None and not str(path_value).startswith("/"):
        errors.append(f"{path}.httpGet.path: Invalid value: must start with /")
    return errors


def resource_errors(resources: Obj, path: str) -> list[str]:
    errors = []
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for section, values in (("requests", requests), ("limits", limits)):
        for name, value in values.items():
            if "/" not in name and name not in STANDARD_RESOURCES and not name.startswith("hugepages-"):
                errors.append(
                    f"{path}.{section}[{name}]: Invalid value: must be a standard resource type or fully qualified"
                )
            errors += quantity_errors(value, f"{path}.{section}[{name}]")
    for name, value in requests.items():
        if name in limits and _quantity(value) > _quantity(limits[name]):
            errors.append(
                f"{path}.requests[{name}]: Invalid value: {value!r}: must be less than or equal to {name} limit of {limits[name]}"
            )
    return errors


_SUFFIX = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def _quantity(value: Any) -> float:
    text = str(value)
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text[-1:] in _SUFFIX and not text[-1:].isdigit():
        return float(text[:-1]) * _SUFFIX[text[-1]]
    return float(text)


def container_errors(container: Obj, volumes: set[str], path: str) -> list[str]:
    errors = []
    name = container.get("name", "")
    if not DNS1123_LABEL.match(name) or len(name) > 63:
        errors.append(f"{path}.name: Invalid value: {name!r}: must be a DNS-1123 label")
    if not container.get("image"):
        errors.append(f"{path}.image: Required value")
    ports: set[str] = set()
    for index, port in enumerate(container.get("ports") or []):
        at = f"{path}.ports[{index}]"
        if not 1 <= int(port.get("containerPort", 0)) <= 65535:
            errors.append(f"{at}.containerPort: Invalid value: must be between 1 and 65535")
        if "name" in port:
            errors += iana_port_name_errors(port["name"], f"{at}.name")
            if port["name"] in ports:
                errors.append(f"{at}.name: Duplicate value: {port['name']!r}")
            ports.add(port["name"])
    for index, variable in enumerate(container.get("env") or []):
        at = f"{path}.env[{index}]"
        if not ENV_VAR_NAME.match(variable.get("name", "")):
            errors.append(
                f"{at}.name: Invalid value: {variable.get('name')!r}: a valid environment variable name"
            )
        if "value" in variable and "valueFrom" in variable:
            errors.append(f"{at}.valueFrom: Invalid value: may not be specified when `value` is not empty")
        field = ((variable.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if (
            field is not None
            and field not in ENV_FIELD_PATHS
            and not re.match(r"^metadata\.(labels|annotations)\['[^']+'\]$", field)
        ):
            errors.append(f"{at}.valueFrom.fieldRef.fieldPath: Unsupported value: {field!r}")
    privileged = bool((container.get("securityContext") or {}).get("privileged"))
    mounts: set[str] = set()
    for index, mount in enumerate(container.get("volumeMounts") or []):
        at = f"{path}.volumeMounts[{index}]"
        if mount.get("name") not in volumes:
            errors.append(f"{at}.name: Not found: {mount.get('name')!r}")
        target = mount.get("mountPath", "")
        if not target:
            errors.append(f"{at}.mountPath: Required value")
        if target in mounts:
            errors.append(f"{at}.mountPath: Invalid value: {target!r}: must be unique")
        mounts.add(target)
        propagation = mount.get("mountPropagation")
        if propagation not in (None, "None", "HostToContainer", "Bidirectional"):
            errors.append(f"{at}.mountPropagation: Unsupported value: {propagation!r}")
        if propagation == "Bidirectional" and not privileged:
            errors.append(
                f"{at}.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"
            )
        sub = mount.get("subPath", "")
        if sub and (sub.startswith("/") or ".." in sub.split("/")):
            errors.append(f"{at}.subPath: Invalid value: {sub!r}: must be a relative path without '..'")
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        if kind in container:
            errors += probe_errors(container[kind], kind, ports, f"{path}.{kind}")
    errors += resource_errors(container.get("resources") or {}, f"{path}.resources")
    context = container.get("securityContext") or {}
    if context.get("allowPrivilegeEscalation") is False and context.get("privileged"):
        errors.append(
            f"{path}.securityContext: Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
        )
    return errors


def pod_spec_errors(spec: Obj, path: str) -> list[str]:
    errors: list[str] = []
    volumes = spec.get("volumes") or []
    errors += volume_errors(volumes, f"{path}.volumes")
    names = {v.get("name") for v in volumes}
    seen: set[str] = set()
    for section in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(section) or []):
            at = f"{path}.{section}[{index}]"
            errors += container_errors(container, names, at)
            if container.get("name") in seen:
                errors.append(f"{at}.name: Duplicate value: {container.get('name')!r}")
            seen.add(container.get("name", ""))
    if not spec.get("containers"):
        errors.append(f"{path}.containers: Required value")
    errors += label_errors(spec.get("nodeSelector"), f"{path}.nodeSelector")
    errors += affinity_errors(spec.get("affinity"), f"{path}.affinity")
    errors += toleration_errors(spec.get("tolerations") or [], f"{path}.tolerations")
    account = spec.get("serviceAccountName", "")
    if account and not DNS1123_SUBDOMAIN.match(account):
        errors.append(f"{path}.serviceAccountName: Invalid value: {account!r}")
    if spec.get("restartPolicy", "Always") != "Always":
        errors.append(
            f"{path}.restartPolicy: Unsupported value: only Always is allowed in a workload template"
        )
    if spec.get("hostNetwork"):
        for section in ("initContainers", "containers"):
            for container in spec.get(section) or []:
                for port in container.get("ports") or []:
                    if port.get("hostPort", port["containerPort"]) != port["containerPort"]:
                        errors.append(f"{path}: hostPort must match containerPort when hostNetwork is set")
    return errors


def _selector_matches(selector: Obj, labels: Mapping[str, Any]) -> bool:
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if (operator == "In" and labels.get(key) not in values) or (
            operator == "NotIn" and labels.get(key) in values
        ):
            return False
        if (operator == "Exists" and key not in labels) or (operator == "DoesNotExist" and key in labels):
            return False
    return True


def _int_or_percent_errors(value: Any, path: str) -> list[str]:
    if isinstance(value, int) and value >= 0:
        return []
    if isinstance(value, str) and re.fullmatch(r"\d+%", value) and int(value[:-1]) <= 100:
        return []
    return [f"{path}: Invalid value: {value!r}: must be a non-negative integer or a percentage up to 100%"]


def _is_zero(value: Any) -> bool:
    return value in (0, "0%")


def workload_errors(obj: Obj) -> list[str]:
    kind, spec = obj["kind"], obj.get("spec") or {}
    template = spec.get("template") or {}
    errors = pod_spec_errors(template.get("spec") or {}, "spec.template.spec")
    errors += label_errors((template.get("metadata") or {}).get("labels"), "spec.template.metadata.labels")
    errors += annotation_errors(
        (template.get("metadata") or {}).get("annotations"), "spec.template.metadata.annotations"
    )
    selector = spec.get("selector") or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append("spec.selector: Invalid value: empty selector is invalid for a workload")
    elif not _selector_matches(selector, (template.get("metadata") or {}).get("labels") or {}):
        errors.append(
            "spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`"
        )
    strategy = spec.get("updateStrategy" if kind == "DaemonSet" else "strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    for field in ("maxSurge", "maxUnavailable"):
        if field in rolling:
            errors += _int_or_percent_errors(rolling[field], f"spec.strategy.rollingUpdate.{field}")
    surge, unavailable = (
        rolling.get("maxSurge", 0 if kind == "DaemonSet" else "25%"),
        rolling.get("maxUnavailable", 1 if kind == "DaemonSet" else "25%"),
    )
    if _is_zero(surge) and _is_zero(unavailable):
        errors.append(
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: may not be 0 when `maxSurge` is 0"
        )
    if kind == "Deployment" and int(spec.get("replicas", 1)) < 0:
        errors.append("spec.replicas: Invalid value: must be greater than or equal to 0")
    return errors


def service_errors(obj: Obj) -> list[str]:
    errors = []
    name = obj["metadata"]["name"]
    if not DNS1035_LABEL.match(name) or len(name) > 63:
        errors.append(f"metadata.name: Invalid value: {name!r}: a Service name must be a DNS-1035 label")
    ports = (obj.get("spec") or {}).get("ports") or []
    seen: set[str] = set()
    for index, port in enumerate(ports):
        at = f"spec.ports[{index}]"
        if len(ports) > 1 and not port.get("name"):
            errors.append(f"{at}.name: Required value")
        if port.get("name"):
            if not DNS1123_LABEL.match(port["name"]):
                errors.append(f"{at}.name: Invalid value: {port['name']!r}: must be a DNS-1123 label")
            if port["name"] in seen:
                errors.append(f"{at}.name: Duplicate value: {port['name']!r}")
            seen.add(port["name"])
        if not 1 <= int(port.get("port", 0)) <= 65535:
            errors.append(f"{at}.port: Invalid value: must be between 1 and 65535")
        target = port.get("targetPort")
        if isinstance(target, str):
            errors += iana_port_name_errors(target, f"{at}.targetPort")
    errors += label_errors((obj.get("spec") or {}).get("selector"), "spec.selector")
    return errors


def pdb_errors(obj: Obj) -> list[str]:
    spec = obj.get("spec") or {}
    errors = []
    if "minAvailable" in spec and "maxUnavailable" in spec:
        errors.append("spec: Invalid value: minAvailable and maxUnavailable cannot be both set")
    for field in ("minAvailable", "maxUnavailable"):
        if field in spec:
            errors += _int_or_percent_errors(spec[field], f"spec.{field}")
    return errors


def webhook_errors(obj: Obj) -> list[str]:
    errors = []
    names: set[str] = set()
    for index, webhook in enumerate(obj.get("webhooks") or []):
        at = f"webhooks[{index}]"
        name = webhook.get("name", "")
        if not DNS1123_SUBDOMAIN.match(name) or name.count(".") < 2:
            errors.append(
                f"{at}.name: Invalid value: {name!r}: should be a domain with at least three segments separated by dots"
            )
        if name in names:
            errors.append(f"{at}.name: Duplicate value: {name!r}")
        names.add(name)
        versions = webhook.get("admissionReviewVersions") or []
        if not {"v1", "v1beta1"} & set(versions):
            errors.append(
                f"{at}.admissionReviewVersions: Required value: must include at least one of v1, v1beta1"
            )
        if webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            errors.append(f"{at}.sideEffects: Unsupported value: {webhook.get('sideEffects')!r}")
        if not 1 <= int(webhook.get("timeoutSeconds", 10)) <= 30:
            errors.append(
                f"{at}.timeoutSeconds: Invalid value: the timeout value must be between 1 and 30 seconds"
            )
        client = webhook.get("clientConfig") or {}
        if ("url" in client) == ("service" in client):
            errors.append(f"{at}.clientConfig: Required value: exactly one of url or service is required")
        service = client.get("service") or {}
        if "path" in service and not str(service["path"]).startswith("/"):
            errors.append(f"{at}.clientConfig.service.path: Invalid value: must start with a '/'")
        if not 1 <= int(service.get("port", 443)) <= 65535:
            errors.append(f"{at}.clientConfig.service.port: Invalid value: port is not valid")
        errors += _match_condition_errors(webhook.get("matchConditions") or [], f"{at}.matchConditions")
        for r, rule in enumerate(webhook.get("rules") or []):
            for field in ("operations", "apiGroups", "apiVersions", "resources"):
                values = rule.get(field) or []
                if not values:
                    errors.append(f"{at}.rules[{r}].{field}: Required value")
                if "*" in values and len(values) > 1:
                    errors.append(
                        f"{at}.rules[{r}].{field}: Invalid value: if '*' is present, must not specify other values"
                    )
    return errors


def _match_condition_errors(conditions: list[Obj], path: str) -> list[str]:
    errors = []
    if len(conditions) > 64:
        errors.append(f"{path}: Too many: {len(conditions)}: must have at most 64 items")
    seen: set[str] = set()
    for index, condition in enumerate(conditions):
        name = condition.get("name", "")
        errors += qualified_name_errors(name, f"{path}[{index}].name")
        if name in seen:
            errors.append(f"{path}[{index}].name: Duplicate value: {name!r}")
        seen.add(name)
        if not condition.get("expression"):
            errors.append(f"{path}[{index}].expression: Required value")
    return errors


def policy_errors(obj: Obj) -> list[str]:
    spec = obj.get("spec") or {}
    errors = _match_condition_errors(spec.get("matchConditions") or [], "spec.matchConditions")
    if obj["kind"] == "ValidatingAdmissionPolicy":
        if not spec.get("validations") and not spec.get("auditAnnotations"):
            errors.append(
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item"
            )
        seen: set[str] = set()
        for index, variable in enumerate(spec.get("variables") or []):
            name = variable.get("name", "")
            if not C_IDENTIFIER.match(name):
                errors.append(
                    f"spec.variables[{index}].name: Invalid value: {name!r}: must be a C identifier"
                )
            if name in seen:
                errors.append(f"spec.variables[{index}].name: Duplicate value: {name!r}")
            seen.add(name)
        for index, validation in enumerate(spec.get("validations") or []):
            reason = validation.get("reason")
            if reason not in (None, "Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"):
                errors.append(f"spec.validations[{index}].reason: Unsupported value: {reason!r}")
    else:
        actions = spec.get("validationActions") or []
        if not actions or len(set(actions)) != len(actions) or not set(actions) <= {"Deny", "Warn", "Audit"}:
            errors.append(
                "spec.validationActions: Invalid value: must be a non-empty set of Deny, Warn, Audit"
            )
        if {"Deny", "Warn"} <= set(actions):
            errors.append("spec.validationActions: Invalid value: must not contain both Deny and Warn")
        if not spec.get("policyName"):
            errors.append("spec.policyName: Required value")
    return errors


def rbac_errors(obj: Obj) -> list[str]:
    errors = []
    for index, rule in enumerate(obj.get("rules") or []):
        if not rule.get("verbs"):
            errors.append(f"rules[{index}].verbs: Required value: verbs must contain at least one value")
        if rule.get("nonResourceURLs") and obj.get("kind") == "Role":
            errors.append(
                f"rules[{index}].nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs"
            )
        if not rule.get("nonResourceURLs") and not rule.get("resources"):
            errors.append(
                f"rules[{index}].resources: Required value: resource rules must supply at least one resource"
            )
    return errors


# RBAC objects take any path segment (ValidateRBACName): "d8:gpu:gpu-controller" is fine there.
PATH_SEGMENT = re.compile(r"^(?!\.\.?$)[^/%]+$")
NAME_RULES = {
    "Namespace": (DNS1123_LABEL, 63),
    "Service": (DNS1035_LABEL, 63),
    "Role": (PATH_SEGMENT, 253),
    "ClusterRole": (PATH_SEGMENT, 253),
    "RoleBinding": (PATH_SEGMENT, 253),
    "ClusterRoleBinding": (PATH_SEGMENT, 253),
}
CHECKS = {
    "DaemonSet": workload_errors,
    "Deployment": workload_errors,
    "Service": service_errors,
    "PodDisruptionBudget": pdb_errors,
    "ValidatingWebhookConfiguration": webhook_errors,
    "MutatingWebhookConfiguration": webhook_errors,
    "ValidatingAdmissionPolicy": policy_errors,
    "ValidatingAdmissionPolicyBinding": policy_errors,
    "Role": rbac_errors,
    "ClusterRole": rbac_errors,
}


def object_errors(obj: Obj, size: int | None = None) -> list[str]:
    """Every rule above that applies to ``obj``: metadata for all, the kind's own rules."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name", "")
    errors = []
    pattern, limit = NAME_RULES.get(obj["kind"], (DNS1123_SUBDOMAIN, 253))
    if not pattern.match(name) or len(name) > limit:
        errors.append(f"metadata.name: Invalid value: {name!r}")
    errors += label_errors(metadata.get("labels"), "metadata.labels")
    errors += annotation_errors(metadata.get("annotations"), "metadata.annotations")
    if size is not None and size > MAX_OBJECT_BYTES:
        errors.append(f"<object>: Too long: {size} bytes, etcd accepts at most {MAX_OBJECT_BYTES}")
    check = CHECKS.get(obj["kind"])
    if check is not None:
        errors += check(obj)
    return [f"{obj['kind']}/{name}: {error}" for error in errors]


def iter_errors(objects: Iterable[Obj], sizes: Iterable[int]) -> Iterator[str]:
    for obj, size in zip(objects, sizes, strict=True):
        yield from object_errors(obj, size)
