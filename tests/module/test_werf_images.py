# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The werf configuration's images (rendered as tests/module/werf_render.py says): names, final
images and their bases, base images by digest, the environment werf may read, and the upstream
images pinned as oss.yaml says.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.module import werf_render
from tests.module.werf_render import (
    BASE_IMAGES,
    ENV,
    ENV_CALL,
    IMAGES,
    README,
    REGISTRY,
    ROOT,
    HelmFailed,
    Werf,
    build_chart,
    camel,
    commands,
    image_dirs,
    is_final,
    oss_versions,
    render,
)
from tests.support.module_images import RUNTIME_IMAGES

# The rendered werf.yaml, once for this module (bound here for pytest).
werf = werf_render.werf

UPSTREAM_IMAGES = {"nvidiaDcgm", "nvidiaDcgmExporter"}


def test_the_project_settings(werf: Werf) -> None:
    assert werf.meta["project"] == "gpu"
    assert werf.meta["configVersion"] == 1
    spec = werf.meta["build"]["imageSpec"]
    assert spec["author"].strip()
    assert spec["clearHistory"] is True


@pytest.mark.parametrize("directory", image_dirs())
def test_each_image_file_renders_to_yaml_on_its_own(tmp_path: Path, directory: str) -> None:
    # Only this directory under images/, through the real images stage.
    main = '{{ tpl (.Files.Get ".werf/stages/images.yaml") . }}'
    documents = render(build_chart(tmp_path / "chart", main, [directory], BASE_IMAGES))
    names = [document["image"] for document in documents]
    assert names, f"images/{directory}/werf.inc.yaml defines no image"
    assert len(names) == len(documents), "every document is an image"
    name = f"gpu/{camel(directory)}"
    assert all(n == name or n.startswith(f"{name}-") for n in names), names
    assert "_" not in "".join(names)


def test_image_names(werf: Werf) -> None:
    names = set(werf.images)
    assert not [name for name in names if "_" in name]
    prefixes = {f"gpu/{camel(directory)}" for directory in image_dirs()}
    module_images = {name for name in names if name.startswith("gpu/")}
    assert module_images, "no module image rendered"
    for name in module_images:
        assert any(name == p or name.startswith(f"{p}-") for p in prefixes), f"{name} is no images/<dir> name"
    # The module images of each directory: exactly one final one, named after the directory.
    for directory in image_dirs():
        own = [werf.images[n] for n in module_images if n.split("/")[1].split("-")[0] == camel(directory)]
        finals = [image["image"] for image in own if is_final(image)]
        assert finals in ([], [f"gpu/{camel(directory)}"]), f"images/{directory}: final images {finals}"


def test_the_final_images_are_exactly_the_runtime_images(werf: Werf) -> None:
    finals = {name for name, image in werf.images.items() if name.startswith("gpu/") and is_final(image)}
    assert finals == {f"gpu/{name}" for name in RUNTIME_IMAGES}
    assert not is_final(werf.image("gpu/gpuArtifact"))


def test_final_images_build_on_base_or_are_documented_upstream_images(werf: Werf) -> None:
    readme = README.read_text()
    for name in RUNTIME_IMAGES:
        image = werf.image(f"gpu/{name}")
        assert "artifact" not in image
        assert "user" not in ((image.get("imageSpec") or {}).get("config") or {}), "dmt: no user override"
        if name in UPSTREAM_IMAGES:
            repository, _, tag = image["from"].partition(":")
            assert repository.startswith("nvcr.io/nvidia/"), image["from"]
            assert tag, image["from"]
            assert repository in readme, f"images/README.md does not explain {name}"
            assert f"`{name}`" in readme, f"images/README.md does not explain {name}"
        else:
            assert image["fromImage"].startswith("base/"), f"{name} builds on {image.get('fromImage')}"
            assert "from" not in image


def test_every_referenced_image_is_defined(werf: Werf) -> None:
    images = werf.images
    for name, image in images.items():
        if "fromImage" in image:
            assert image["fromImage"] in images, f"{name}: fromImage {image['fromImage']} is not defined"
        for entry in [*(image.get("import") or []), *(image.get("dependencies") or [])]:
            assert entry["image"] in images, f"{name}: {entry['image']} is not defined"


def test_every_shell_command_is_one_string(werf: Werf) -> None:
    for image in werf.images.values():
        commands(image)


def test_base_images_come_from_base_images_yml_by_digest(werf: Werf) -> None:
    for name, digest in BASE_IMAGES.items():
        image = werf.image(name)
        assert image["from"] == f"{REGISTRY}@{digest}"
        assert not is_final(image)
    used = {image["fromImage"] for image in werf.images.values() if "fromImage" in image}
    assert used <= set(BASE_IMAGES) | {n for n in werf.images if n.startswith("gpu/")}
    assert "/base_images.yml" in (ROOT / ".gitignore").read_text().split()
    giterminism = yaml.safe_load((ROOT / "werf-giterminism.yaml").read_text())
    assert "base_images.yml" in giterminism["config"]["goTemplateRendering"]["allowUncommittedFiles"]


def test_a_missing_base_image_fails_the_render(tmp_path: Path) -> None:
    partial = {name: digest for name, digest in BASE_IMAGES.items() if name != "builder/alt"}
    with pytest.raises(HelmFailed, match="no sha256 digest for builder/alt"):
        render(build_chart(tmp_path / "chart", (ROOT / "werf.yaml").read_text(), image_dirs(), partial))


def test_werf_reads_only_the_environment_giterminism_allows() -> None:
    sources = [ROOT / "werf.yaml", *(ROOT / ".werf").rglob("*"), *IMAGES.glob("*/werf.inc.yaml")]
    used = {name for path in sources if path.is_file() for name in ENV_CALL.findall(path.read_text())}
    giterminism = yaml.safe_load((ROOT / "werf-giterminism.yaml").read_text())
    assert used <= set(giterminism["config"]["goTemplateRendering"]["allowEnvVariables"])
    assert used <= set(ENV)


def test_upstream_tags_follow_oss_yaml(werf: Werf) -> None:
    versions = oss_versions()
    dcgm, exporter, toolkit = (
        versions["dcgm"],
        versions["dcgm-exporter"],
        versions["nvidia-container-toolkit"],
    )
    assert re.fullmatch(
        rf"nvcr\.io/nvidia/cloud-native/dcgm:{re.escape(dcgm)}-\d+-ubuntu\d+\.\d+",
        werf.image("gpu/nvidiaDcgm")["from"],
    )
    assert werf.image("gpu/nvidiaDcgmExporter")["from"] == (
        f"nvcr.io/nvidia/k8s/dcgm-exporter:{dcgm}-{exporter}-ubuntu22.04"
    )
    assert werf.image("gpu/gpuHandler-container-toolkit")["from"].startswith(
        f"nvcr.io/nvidia/k8s/container-toolkit:v{toolkit}-"
    )


def test_the_readme_documents_every_image_and_its_values_key() -> None:
    readme = README.read_text()
    for name in RUNTIME_IMAGES:
        assert f"`{name}`" in readme
        assert f".Values.global.modulesImages.digests.gpu.{name}" in readme
    assert "`gpuArtifact`" in readme


def test_oss_yaml_pins_the_container_toolkit() -> None:
    (toolkit,) = [
        p for p in yaml.safe_load((ROOT / "oss.yaml").read_text()) if p["id"] == "nvidia-container-toolkit"
    ]
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(toolkit["version"]))
    assert {"name", "description", "link", "license"} <= set(toolkit)
