# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""Names across the werf configuration (rendered as tests/module/werf_render.py says), the Helm
templates, oss.yaml and the CI that builds it all:

* every image a template references (`include "gpu.image" (list . "NAME")`) is a final werf image;
* every final image is referenced by a template, or is one Deckhouse reads itself (listed here with
  the reason), and every other image is a build-only one (listed with the reason) that some image
  is built from;
* the upstream versions of oss.yaml are the ones the werf files use, through gpu_oss_version and
  never written twice, or the pins of the Python packages the images install;
* the CI passes the module tag to werf in the one variable werf may read, and picks the bundle and
  the release image from werf's build report by their werf names.

werf itself is not run here (no werf binary or registry): a first `werf build` in CI confirms the
rest (images/README.md, "Not verified here").
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.module import werf_render
from tests.module.werf_render import IMAGES, ROOT, Werf, is_final, oss_versions, pins
from tests.support.module_images import RUNTIME_IMAGES

# The rendered werf.yaml, once for this module (bound here for pytest).
werf = werf_render.werf

TEMPLATE_IMAGE = re.compile(r'include\s+"gpu\.image"\s+\(list\s+\$?\.?\s+"([^"]+)"\)')
GPU_OSS_VERSION = re.compile(r'include\s+"gpu_oss_version"\s+\(list\s+"([^"]+)"')

# Final images that no template references, because Deckhouse reads them itself.
READ_BY_DECKHOUSE = {
    "bundle": "the module Deckhouse downloads, <source>/gpu:<tag> (the CI tags it from the build report)",
    "release-channel-version": "version.json and module.yaml, <source>/gpu/release:<tag> and the channels",
}
# Images that are never final: other images are built from them.
BUILD_ONLY = {
    "gpu/gpuArtifact": "the Python prefix that the four Python component images import",
    "gpu/gpuHandler-container-toolkit": "NVIDIA's toolkit image, only for gpuHandler's nvidia-cdi-hook",
    "images-digests": "writes images_digests.json and version.json for the bundle and the release image",
    "python-dependencies": "the hooks' dependencies, imported by the bundle",
    "base/distroless": "Deckhouse's base of the component images (base_images.yml)",
    "builder/alt": "Deckhouse's builder of gpuArtifact (base_images.yml)",
    "builder/alpine": "Deckhouse's builder of images-digests and python-dependencies (base_images.yml)",
    "builder/scratch": "the empty base of the bundle and the release image (base_images.yml)",
}
# oss.yaml projects that are Python packages of the components: their version is the pin of
# images/gpu-artifact/requirements.txt, which gpuArtifact installs, not a werf image tag.
PYTHON_PACKAGES = {"kubernetes-python-client": "kubernetes", "pyudev": "pyudev"}


def template_images() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "templates").rglob("*")):
        if path.suffix in (".yaml", ".yml", ".tpl"):
            for name in TEMPLATE_IMAGE.findall(path.read_text()):
                found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def used_by_others(werf: Werf) -> set[str]:
    used = set()
    for image in werf.images.values():
        used |= {image["fromImage"]} if "fromImage" in image else set()
        used |= {
            entry["image"] for entry in [*(image.get("import") or []), *(image.get("dependencies") or [])]
        }
    return used


def test_every_image_a_template_references_is_a_final_werf_image(werf: Werf) -> None:
    referenced = template_images()
    assert referenced, "no template references an image"
    for name, where in referenced.items():
        image = werf.images.get(f"gpu/{name}")
        assert image is not None, f"{where}: no images/*/werf.inc.yaml defines gpu/{name}"
        assert is_final(image), f"{where}: gpu/{name} is not a final image, so it has no digest"
    assert set(referenced) == RUNTIME_IMAGES, "tests/support/module_images.py lists the referenced images"


def test_every_final_image_is_referenced_or_read_by_deckhouse(werf: Werf) -> None:
    finals = {name for name, image in werf.images.items() if is_final(image)}
    referenced = {f"gpu/{name}" for name in template_images()}
    assert finals - referenced == set(READ_BY_DECKHOUSE), "a final image nobody deploys, or a stale entry"
    assert all(reason.strip() for reason in READ_BY_DECKHOUSE.values())


def test_every_other_image_is_build_only_and_something_is_built_from_it(werf: Werf) -> None:
    others = {name for name, image in werf.images.items() if not is_final(image)}
    assert others == set(BUILD_ONLY), "a new helper image needs its reason here, or an entry is stale"
    unused = others - used_by_others(werf)
    assert not unused, f"built for nothing: {sorted(unused)}"


def test_every_image_directory_builds_an_image_that_is_used(werf: Werf) -> None:
    deployed = {f"gpu/{name}" for name in template_images()}
    for directory in sorted(p.parent.name for p in IMAGES.glob("*/werf.inc.yaml")):
        name = f"gpu/{werf_render.camel(directory)}"
        assert name in deployed or name in BUILD_ONLY, (
            f"images/{directory}: {name} is neither deployed nor a helper"
        )


def test_oss_versions_are_the_ones_the_werf_files_use(werf: Werf) -> None:
    versions = oss_versions()
    sources = {p: p.read_text() for p in [*IMAGES.glob("*/werf.inc.yaml"), *(ROOT / ".werf").rglob("*.yaml")]}
    asked = {project for text in sources.values() for project in GPU_OSS_VERSION.findall(text)}
    assert asked <= set(versions), f"gpu_oss_version of projects oss.yaml lacks: {asked - set(versions)}"
    assert asked | set(PYTHON_PACKAGES) == set(versions), "an oss.yaml project nothing builds with"
    upstream = " ".join(str(image.get("from", "")) for image in werf.images.values())
    for project in asked:
        version = versions[project]
        assert re.search(rf"[:v-]{re.escape(version)}-", upstream), f"{project} {version} is in no image tag"
        for path, text in sources.items():
            # The version comes from oss.yaml only: a literal copy would silently go stale.
            assert version not in text, f"{path.relative_to(ROOT)} writes {project}'s {version} itself"


def test_oss_versions_of_python_packages_are_the_pins() -> None:
    versions = oss_versions()
    pinned = pins(IMAGES / "gpu-artifact" / "requirements.txt")
    for project, package in PYTHON_PACKAGES.items():
        assert pinned[package] == versions[project], (
            f"oss.yaml {project} {versions[project]}, pinned {pinned[package]}"
        )


def action(name: str) -> dict[str, Any]:
    document = yaml.safe_load((ROOT / ".github" / "actions" / name / "action.yml").read_text())
    assert isinstance(document, dict)
    return document


def test_the_ci_hands_the_tag_to_werf_and_reads_the_werf_images_back(werf: Werf) -> None:
    steps = action("module-build")["runs"]["steps"]
    (build,) = [s for s in steps if "werf build" in s.get("run", "")]
    assert build["env"]["MODULES_MODULE_TAG"] == "${{ inputs.module-tag }}"
    giterminism = yaml.safe_load((ROOT / "werf-giterminism.yaml").read_text())
    assert giterminism["config"]["goTemplateRendering"]["allowEnvVariables"] == ["MODULES_MODULE_TAG"]
    assert "--save-build-report" in build["run"]
    looked_up = {name for s in steps for name in re.findall(r'\.Images\["([^"]+)"\]', s.get("run", ""))}
    assert looked_up == set(READ_BY_DECKHOUSE)
    for name in looked_up:
        assert is_final(werf.image(name)), f"{name} must be final to be in werf's build report"
