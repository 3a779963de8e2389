# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The settings dmt reads from a module's .dmtlint.yaml, for tests/module/test_dmt_checklist_exclusions.py
to refuse a key dmt does not know (a typo would silently exclude nothing).
"""

from __future__ import annotations

from typing import Any

# The keys of .dmtlint.yaml, after dmt's configuration types (deckhouse/dmt
# pkg/config/linters_settings.go). A value names what a key holds: "impact" a severity, "bool" a
# flag, "strings" a list of strings, "kinds" a list of {kind, name}, "containers" a list of
# {kind, name, container}, "paths" {files, directories}, a dict nested keys.
KIND = "kinds"
CONTAINER = "containers"
PATHS = {"files": "strings", "directories": "strings"}
DISABLE = {"disable": "bool"}
RULE = {"impact": "impact"}
KNOWN_KEYS: dict[str, Any] = {
    "container": {
        "impact": "impact",
        "exclude-rules": {
            **dict.fromkeys(
                ("controller-security-context", "object-namespace-labels", "dns-policy", "priority-class"),
                KIND,
            ),
            **dict.fromkeys(
                (
                    "host-network-ports",
                    "ports",
                    "read-only-root-filesystem",
                    "no-new-privileges",
                    "seccomp-profile",
                    "image-digest",
                    "resources",
                    "security-context",
                    "liveness-probe",
                    "readiness-probe",
                    "sys-cgroup-mount",
                ),
                CONTAINER,
            ),
            "description": "strings",
            "mount-points": "strings",
        },
    },
    "documentation": {"impact": "impact"},
    "hooks": {"impact": "impact", "ingress": DISABLE},
    "images": {
        "impact": "impact",
        "exclude-rules": {
            "skip-image-file-path-prefix": "strings",
            "skip-distroless-file-path-prefix": "strings",
            "patches": PATHS,
        },
        "patches": DISABLE,
        "werf": DISABLE,
    },
    "module": {
        "impact": "impact",
        "exclude-rules": {"license": PATHS, "oss": {"version-not-semver": "ids"}},
        **dict.fromkeys(("oss", "definition-file", "conversions", "helmignore"), DISABLE),
        "legacy-release-file": RULE,
        "enabled-script": RULE,
    },
    "no-cyrillic": {"impact": "impact", "exclude-rules": PATHS},
    "openapi": {
        "impact": "impact",
        "exclude-rules": dict.fromkeys(
            ("key-banned-names", "enum", "ha-absolute-keys", "crd-names"), "strings"
        ),
    },
    "rbac": {
        "impact": "impact",
        "exclude-rules": {"binding-subject": "strings", "placement": KIND, "wildcards": KIND},
    },
    "templates": {
        "impact": "impact",
        "exclude-rules": {
            **dict.fromkeys(
                (
                    "vpa",
                    "pdb",
                    "ingress",
                    "httproute",
                    "webhook-configuration-annotations",
                    "schema-validation",
                ),
                KIND,
            ),
            "service-port": "ports",
            **dict.fromkeys(("kube-rbac-proxy", "mount-points", "openapi-values-quote"), "strings"),
            **dict.fromkeys(
                (
                    "enabled-modules",
                    "deprecated-httproute-annotations",
                    "ingress-enablement",
                    "gateway-enablement",
                    "https-certificate-reuse",
                ),
                PATHS,
            ),
        },
        "grafana-dashboards": DISABLE,
        "prometheus-rules": DISABLE,
        "rules": dict.fromkeys(
            (
                "vpa",
                "pdb",
                "ingress",
                "httproute",
                "prometheus-rules",
                "grafana-dashboards",
                "kube-rbac-proxy",
                "service-port",
                "cluster-domain",
                "registry",
                "enabled-modules",
                "crd-enabled-modules",
                "webhook-configuration-annotations",
                "mount-points",
                "helm-render",
                "openapi-values-quote",
                "schema-validation",
            ),
            RULE,
        ),
    },
}
ITEM_KEYS = {KIND: {"kind", "name"}, CONTAINER: {"kind", "name", "container"}, "ids": {"id"}}
IMPACTS = {"warn", "error", "critical", "ignored"}
