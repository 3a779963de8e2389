# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Kubernetes versions whose OpenAPI schemas every object the module emits is checked against:
each version the module knows (deckhouse_gpu/k8s_semantics/versions.py, KUBERNETES-FACTS.md F10), in the form
kubernetes-validate names its schemas.

Stays beside the real tier (tests/real): no ported rule here, only the version list, and the
schema checks it drives are the only judge of 1.37, for which there is no server here."""

from __future__ import annotations

from deckhouse_gpu.k8s_semantics.versions import KNOWN_MINORS, KNOWN_VERSIONS

SCHEMA_VERSIONS = tuple(f"{version}.0" for version in KNOWN_VERSIONS)
MINORS = KNOWN_MINORS
