# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The templates, rbac and images rules of dmt that can be read off the template sources and the
werf files, without rendering: where RBAC objects live and how they are named, image references,
image names, cluster.local, the registry secret, webhook configurations and VPA update modes. The
rendered objects (labels, security contexts, probes, PDBs, VPAs) are tests/module/test_helm_*.py.
Each test names the dmt source it follows (repository deckhouse/dmt).
"""

from __future__ import annotations

import re

from tests.module.dmt_checklist import MODULE_NAME, NAMESPACE, ROOT, template_files, template_objects
from tests.support.module_images import COMMON_IMAGES

OBJECTS = template_objects()
RBAC_KINDS = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
RBAC_FILES = ("rbac-for-us.yaml", "rbac-to-us.yaml")
# User-facing roles live apart (pkg/linters/rbac/rules/placement.go).
USER_AUTHZ = ("templates/user-authz-cluster-roles.yaml", "templates/rbac/")


def rbac_folder(path: str) -> list[str]:
    """templates/a/b/rbac-for-us.yaml -> ["a", "b"]; the root file -> []."""
    return path.removeprefix("templates/").split("/")[:-1]


def test_rbac_objects_live_only_in_the_rbac_files() -> None:
    # pkg/linters/rbac/rules/placement.go
    assert OBJECTS, "no template object was read"
    for obj in OBJECTS:
        in_rbac_file = obj.path.endswith(RBAC_FILES)
        if obj.kind in RBAC_KINDS and not obj.path.startswith(USER_AUTHZ):
            assert in_rbac_file, f"{obj.kind}/{obj.name} in {obj.path}: move it to rbac-for-us.yaml"
        if in_rbac_file:
            assert obj.kind in RBAC_KINDS, f"{obj.kind} is not allowed in {obj.path}"


def test_service_accounts_are_named_after_their_folder() -> None:
    # pkg/linters/rbac/rules/placement.go: the root account is the module, a nested one its path
    for obj in OBJECTS:
        if obj.kind != "ServiceAccount" or not obj.path.endswith("rbac-for-us.yaml"):
            continue
        parts = rbac_folder(obj.path)
        assert obj.name == ("-".join(parts) if parts else MODULE_NAME), obj.path
        assert obj.namespace == NAMESPACE, obj.path


def test_cluster_roles_and_roles_carry_their_prefixes() -> None:
    # pkg/linters/rbac/rules/placement.go
    for obj in OBJECTS:
        parts = rbac_folder(obj.path)
        if obj.kind in ("ClusterRole", "ClusterRoleBinding") and obj.path.endswith(RBAC_FILES):
            prefix = ":".join(["d8", MODULE_NAME, *parts])
            assert obj.name == prefix or obj.name.startswith(prefix + ":"), f"{obj.name} in {obj.path}"
        if obj.kind in ("Role", "RoleBinding") and obj.path.endswith("rbac-for-us.yaml"):
            local = ":".join(parts) if parts else f"d8:{MODULE_NAME}"
            assert obj.name.startswith(local), f"{obj.name} in {obj.path}"
            assert obj.namespace == NAMESPACE, obj.path
        if obj.kind in ("Role", "RoleBinding") and obj.path.endswith("rbac-to-us.yaml"):
            assert obj.name.startswith(f"access-to-{MODULE_NAME}"), f"{obj.name} in {obj.path}"


def test_no_wildcards_in_the_rules_for_us() -> None:
    # pkg/linters/rbac/rules/wildcards.go
    for obj in OBJECTS:
        if obj.kind in ("Role", "ClusterRole") and obj.path.endswith("rbac-for-us.yaml"):
            assert not re.search(r"""\[[^\]]*["']\*["'][^\]]*\]|^\s*-\s*["']?\*""", obj.text, re.MULTILINE), (
                f"{obj.kind}/{obj.name} grants a wildcard"
            )


def camel(directory: str) -> str:
    head, *rest = directory.split("-")
    return head + "".join(word.capitalize() for word in rest)


IMAGE_DIRS = sorted(p.parent.name for p in (ROOT / "images").glob("*/werf.inc.yaml"))


def test_every_container_image_comes_from_the_image_helper() -> None:
    # pkg/linters/container/rules/container_image_digest_check.go: images from the module registry,
    # by digest. The helper templates/_helpers.tpl gpu.image resolves <registry>@<digest>; the
    # platform's common images (kube-rbac-proxy) come from gpu.commonImage, as lib-helm's
    # helm_lib_module_common_image gives them to every module.
    images = {camel(d) for d in IMAGE_DIRS}
    seen, common = set(), set()
    for path in template_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not re.match(r"\s*(-\s*)?image:\s", line):
                continue
            where = f"{path.relative_to(ROOT)}:{number}"
            helper = re.search(r'include "gpu\.(image|commonImage)" \(list \$?\w*\.? "([^"]+)"\)', line)
            assert helper, f'{where}: use {{{{ include "gpu.image" (list . "<image>") }}}}: {line.strip()}'
            if helper.group(1) == "commonImage":
                assert helper.group(2) in COMMON_IMAGES, f"{where}: {helper.group(2)!r} is no common image"
                common.add(helper.group(2))
                continue
            assert helper.group(2) in images, f"{where}: no images/<dir> builds {helper.group(2)!r}"
            seen.add(helper.group(2))
    assert seen, "no container image was found in the templates"
    assert common == COMMON_IMAGES, "tests/support/module_images.py lists the common images used"


def test_image_names_have_no_underscores() -> None:
    # pkg/linters/container/rules/container_image_no_underscores.go; werf image names
    assert IMAGE_DIRS
    assert not [d for d in IMAGE_DIRS if "_" in d]
    for directory in IMAGE_DIRS:
        werf = (ROOT / "images" / directory / "werf.inc.yaml").read_text()
        for written in re.findall(r"^image:\s*(\S+)", werf, re.MULTILINE):
            name = written.replace("{{ .ModuleName }}", MODULE_NAME)
            name = name.replace("{{ .ImageName }}", camel(directory))
            assert "_" not in name, f"images/{directory}: {name}"


def test_no_hard_coded_cluster_domain() -> None:
    # pkg/linters/templates/rules/cluster_domain.go
    for path in [*template_files(), *sorted((ROOT / "monitoring").rglob("*.*"))]:
        assert "cluster.local" not in path.read_text(), f"{path.relative_to(ROOT)}: use clusterDomain"


def test_registry_secret_uses_the_module_registry() -> None:
    # pkg/linters/templates/rules/registry.go: the module's own dockercfg, not the platform's
    secret = (ROOT / "templates" / "registry-secret.yaml").read_text()
    assert ".Values.global.modulesImages.registry.dockercfg" not in secret
    assert re.search(
        r'\.Values\.gpu\.registry\.dockercfg|dig "registry" "dockercfg" "[^"]*" \.Values\.gpu\b', secret
    ), "registry-secret.yaml must read gpu.registry.dockercfg"


def test_webhook_configurations_wait_for_their_service() -> None:
    # pkg/linters/templates/rules/webhook_configuration.go
    webhooks = [
        o for o in OBJECTS if o.kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    ]
    for obj in webhooks:
        annotated = re.search(
            r"^\s+(werf\.io/weight|werf\.io/deploy-dependency-[\w-]+):", obj.text, re.MULTILINE
        )
        assert annotated, f"{obj.kind}/{obj.name}: add werf.io/weight or werf.io/deploy-dependency-*"


def test_vpa_update_modes_are_allowed() -> None:
    # pkg/linters/templates/rules/vpa.go: Auto is deprecated and refused
    modes = [m for path in template_files() for m in re.findall(r"updateMode:\s*(\S+)", path.read_text())]
    assert modes, "no VerticalPodAutoscaler update mode found"
    assert set(modes) <= {"Off", "Initial", "Recreate", "InPlaceOrRecreate"}, modes


def test_optional_apis_are_checked_by_capabilities() -> None:
    # pkg/linters/templates/rules/enabled_modules.go (a warning): prefer .Capabilities.APIVersions.Has
    for path in template_files():
        assert not re.search(r"\.Values\.global\.enabledModules\s*\|\s*has", path.read_text()), path.name
