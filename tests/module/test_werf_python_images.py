# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The werf build of the Python components (rendered as tests/module/werf_render.py says): the
gpuArtifact image that builds the package and its relocated interpreter, the images that run it,
the hook dependencies, and tools/stage_python_runtime.py run on this host.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.module import werf_render
from tests.module.werf_render import IMAGES, ROOT, Werf, commands, index_of, is_final, pins

# The rendered werf.yaml, once for this module (bound here for pytest).
werf = werf_render.werf

PREFIX = "/opt/deckhouse-gpu"
# The Python components: image name -> console script (pyproject.toml [project.scripts]).
PYTHON_IMAGES = {
    "gpuNodeAgent": "gpu-node-agent",
    "gpuController": "gpu-controller",
    "gpuDraController": "gpu-dra-controller",
    "gpuHandler": "gpu-handler",
}
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"}


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
    # RE2's extension module (google-re2, in the images) needs the C++ runtime: not glibc's, so it
    # is staged.
    import re2  # type: ignore[import-untyped]  # noqa: PLC0415 - only to find the installed package

    libraries = _stage("libraries", str(dest), str(Path(re2.__file__).parent))
    assert libraries.returncode == 0, libraries.stderr
    assert "libstdc++.so.6" in set(_staged(dest / "solib"))
    missing = _stage("libraries", str(dest), str(tmp_path / "empty"), "--soname", "libdoes-not-exist.so.9")
    assert missing.returncode == 1
    assert "libdoes-not-exist.so.9 is not in the loader cache" in missing.stderr
