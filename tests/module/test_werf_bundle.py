# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The werf images Deckhouse reads the module from (rendered as tests/module/werf_render.py says):
the bundle, the release-channel image and images-digests, whose steps are run here with bash and jq.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.module import werf_render
from tests.module.werf_render import ENV, Werf, commands, index_of, is_final
from tests.support.module_images import RUNTIME_IMAGES

# The rendered werf.yaml, once for this module (bound here for pytest).
werf = werf_render.werf


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
