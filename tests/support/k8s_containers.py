# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Volumes and containers of a pod spec as the API server checks them (``pkg/apis/core/validation``),
for the semantic rules of tests/support/k8s_semantics.py: volume sources and host paths, container
names, ports, environment, mounts, probes, resources and security context.
"""

from __future__ import annotations

import re

from tests.support.k8s_names import DNS1123_LABEL, Obj, iana_port_name_errors, quantity_errors, quantity_value

ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
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
LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")


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
        if name in limits and quantity_value(value) > quantity_value(limits[name]):
            errors.append(
                f"{path}.requests[{name}]: Invalid value: {value!r}: must be less than or equal to {name} limit of {limits[name]}"
            )
    return errors


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
    for hook, handler in (container.get("lifecycle") or {}).items():
        used = [h for h in LIFECYCLE_HANDLERS if h in (handler or {})]
        if hook not in ("postStart", "preStop"):
            errors.append(f"{path}.lifecycle.{hook}: Unsupported value")
        elif len(used) != 1:
            errors.append(f"{path}.lifecycle.{hook}: Required value: must specify exactly one handler type")
        elif "exec" in used and not (handler["exec"].get("command")):
            errors.append(f"{path}.lifecycle.{hook}.exec.command: Required value")
    errors += resource_errors(container.get("resources") or {}, f"{path}.resources")
    context = container.get("securityContext") or {}
    if context.get("allowPrivilegeEscalation") is False and context.get("privileged"):
        errors.append(
            f"{path}.securityContext: Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
        )
    return errors
