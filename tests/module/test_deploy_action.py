# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The scripts of .github/actions/module-deploy and module-build, run with bash against a fake
crane: tagging a werf build as the module version, publishing a version from the dev source to the
production source by digest, the promotion order of the channels, forward-only channels and the
rollback. The fake crane keeps each image as a directory of
its files (what `crane export` would stream as a tar) under a temporary "registry", and logs every
call; no registry is reached.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ROOT / ".github" / "actions"
DEPLOY = yaml.safe_load((ACTIONS / "module-deploy" / "action.yml").read_text())
BUILD = yaml.safe_load((ACTIONS / "module-build" / "action.yml").read_text())
DEV, PROD = "dev.example.com/modules", "prod.example.com/modules"
DIGESTS = {"gpuHandler": f"sha256:{'a' * 64}", "gpuController": f"sha256:{'b' * 64}"}

FAKE_CRANE = r"""#!/usr/bin/env bash
set -euo pipefail
echo "$*" >> "$FAKE_REGISTRY/calls"
path() { printf '%s/%s' "$FAKE_REGISTRY" "$(printf '%s' "$1" | tr '/:@' '___')"; }
case "$1" in
  export) [[ -d "$(path "$2")" ]] || { echo "MANIFEST_UNKNOWN: $2" >&2; exit 1; }
          tar -C "$(path "$2")" -cf - . ;;
  digest) [[ -d "$(path "$2")" ]] || exit 1; echo "sha256:$(printf '%s' "$2" | sha256sum | cut -c1-64)" ;;
  copy)   [[ -d "$(path "$2")" ]] || { echo "MANIFEST_UNKNOWN: $2" >&2; exit 1; }
          rm -rf "$(path "$3")"; cp -r "$(path "$2")" "$(path "$3")" ;;
  append) while [[ $# -gt 0 ]]; do [[ "$1" == --new_tag ]] && mkdir -p "$(path "$2")"; shift; done ;;
  *)      exit 2 ;;
esac
"""

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("bash", "tar", "jq", "sort", "sha256sum")),
    reason="needs bash, tar, jq, sort and sha256sum",
)


class Registry:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "bin").mkdir(parents=True)
        crane = root / "bin" / "crane"
        crane.write_text(FAKE_CRANE)
        crane.chmod(0o755)

    def image(self, ref: str) -> Path:
        return self.root / re.sub(r"[/:@]", "_", ref)

    def push(self, ref: str, files: dict[str, Any]) -> None:
        folder = self.image(ref)
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (folder / name).write_text(json.dumps(content))

    def version(self, ref: str) -> str | None:
        path = self.image(ref) / "version.json"
        return json.loads(path.read_text())["version"] if path.exists() else None

    def calls(self) -> list[str]:
        path = self.root / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def build(self, tag: str) -> None:
        """What module-build leaves in the dev source for a tag."""
        for digest in DIGESTS.values():
            self.push(f"{DEV}/gpu@{digest}", {"layer": digest})
        self.push(f"{DEV}/gpu:{tag}", {"images_digests.json": DIGESTS, "version.json": {"version": tag}})
        self.push(f"{DEV}/gpu/release:{tag}", {"version.json": {"version": tag}})
        self.push(f"{DEV}:gpu", {})

    def run(self, steps: list[dict[str, Any]], inputs: dict[str, str]) -> subprocess.CompletedProcess[str]:
        path = f"{self.root / 'bin'}:{os.environ['PATH']}"
        done = subprocess.CompletedProcess[str]([], 0, "", "")
        for step in steps:
            env = {
                name: re.sub(r"\$\{\{ inputs\.([a-z-]+) \}\}", lambda m: inputs[m.group(1)], value)
                for name, value in step["env"].items()
            }
            env |= {"PATH": path, "FAKE_REGISTRY": str(self.root), "GITHUB_STEP_SUMMARY": str(self.summary)}
            done = subprocess.run(
                ["bash", "-c", step["run"]],
                cwd=self.root,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                return done
        return done

    @property
    def summary(self) -> Path:
        return self.root / "summary"

    def deploy(self, tag: str, channel: str, rollback: bool = False) -> subprocess.CompletedProcess[str]:
        inputs = {
            "dev-module-source": DEV,
            "module-source": PROD,
            "module-name": "gpu",
            "module-tag": tag,
            "release-channel": channel,
            "rollback": "true" if rollback else "false",
        }
        return self.run(DEPLOY["runs"]["steps"], inputs)


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "registry")


def test_alpha_publishes_the_dev_build_by_digest_and_tags_the_channel(registry: Registry) -> None:
    registry.build("v0.1.0")
    done = registry.deploy("v0.1.0", "alpha")
    assert done.returncode == 0, done.stderr
    for digest in DIGESTS.values():
        assert f"copy {DEV}/gpu@{digest} {PROD}/gpu@{digest}" in registry.calls()
    assert registry.version(f"{PROD}/gpu:v0.1.0") == "v0.1.0"
    assert registry.version(f"{PROD}/gpu/release:v0.1.0") == "v0.1.0"
    assert registry.image(f"{PROD}:gpu").is_dir(), "the module is registered in the production source"
    assert registry.version(f"{PROD}/gpu/release:alpha") == "v0.1.0"


def test_a_published_version_is_never_copied_again(registry: Registry) -> None:
    registry.build("v0.1.0")
    assert registry.deploy("v0.1.0", "alpha").returncode == 0
    copies = [call for call in registry.calls() if call.startswith("copy ")]
    assert registry.deploy("v0.1.0", "alpha").returncode == 0
    assert [call for call in registry.calls() if call.startswith("copy ")] == [*copies, copies[-1]]


def test_a_version_that_is_not_built_fails(registry: Registry) -> None:
    done = registry.deploy("v0.1.0", "alpha")
    assert done.returncode != 0
    assert registry.version(f"{PROD}/gpu/release:alpha") is None


def test_channels_are_filled_in_order(registry: Registry) -> None:
    registry.build("v0.1.0")
    done = registry.deploy("v0.1.0", "beta")
    assert done.returncode == 1
    assert "deploy it to alpha first" in done.stdout
    assert registry.deploy("v0.1.0", "alpha").returncode == 0
    done = registry.deploy("v0.1.0", "early-access")
    assert done.returncode == 1
    assert "beta is at '', not v0.1.0: promote in order" in done.stdout
    for channel in ("beta", "early-access", "stable", "rock-solid"):
        done = registry.deploy("v0.1.0", channel)
        assert done.returncode == 0, f"{channel}: {done.stdout}{done.stderr}"
        assert registry.version(f"{PROD}/gpu/release:{channel}") == "v0.1.0"


def test_a_channel_moves_forward_only_unless_rolled_back(registry: Registry) -> None:
    for tag in ("v0.1.0", "v0.10.0"):
        registry.build(tag)
        assert registry.deploy(tag, "alpha").returncode == 0
    assert registry.version(f"{PROD}/gpu/release:alpha") == "v0.10.0"
    done = registry.deploy("v0.1.0", "alpha")
    assert done.returncode == 1
    assert "alpha is at v0.10.0, newer than v0.1.0" in done.stdout
    assert registry.deploy("v0.1.0", "alpha", rollback=True).returncode == 0
    assert registry.version(f"{PROD}/gpu/release:alpha") == "v0.1.0"
    assert "Rolling alpha back from v0.10.0 to v0.1.0" in registry.summary.read_text()


def test_a_rollback_only_goes_back(registry: Registry) -> None:
    registry.build("v0.1.0")
    registry.build("v0.2.0")
    assert registry.deploy("v0.1.0", "alpha").returncode == 0
    assert registry.deploy("v0.2.0", "alpha").returncode == 0  # publishes v0.2.0
    assert registry.deploy("v0.1.0", "alpha", rollback=True).returncode == 0
    done = registry.deploy("v0.2.0", "alpha", rollback=True)
    assert done.returncode == 1
    assert "a rollback moves alpha from a newer version to v0.2.0" in done.stdout
    assert registry.version(f"{PROD}/gpu/release:alpha") == "v0.1.0"


def test_a_bundle_without_digests_is_not_published(registry: Registry) -> None:
    registry.push(f"{DEV}/gpu:v0.1.0", {"version.json": {"version": "v0.1.0"}})
    registry.push(f"{DEV}/gpu/release:v0.1.0", {"version.json": {"version": "v0.1.0"}})
    done = registry.deploy("v0.1.0", "alpha")
    assert done.returncode == 1
    assert "has no images_digests.json" in done.stdout
    assert registry.version(f"{PROD}/gpu/release:v0.1.0") is None


def test_the_build_tags_werf_s_bundle_and_release_image_with_the_version(registry: Registry) -> None:
    # What `werf build --save-build-report` leaves: content-tagged images and their report.
    for name, tag in (("bundle", "v0.2.0"), ("release-channel-version", "v0.2.0")):
        registry.push(f"{DEV}/gpu:{name}-3f9a", {"version.json": {"version": tag}})
    report = {
        "Images": {
            n: {"DockerImageName": f"{DEV}/gpu:{n}-3f9a"} for n in ("bundle", "release-channel-version")
        }
    }
    (registry.root / "images_tags_werf.json").write_text(json.dumps(report))
    steps = [s for s in BUILD["runs"]["steps"] if s["name"].startswith(("Tag ", "Register "))]
    inputs = {"module-source": DEV, "module-name": "gpu", "module-tag": "v0.2.0"}
    done = registry.run(steps, inputs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert registry.version(f"{DEV}/gpu:v0.2.0") == "v0.2.0"
    assert registry.version(f"{DEV}/gpu/release:v0.2.0") == "v0.2.0"
    assert registry.image(f"{DEV}:gpu").is_dir()
    # An image built for another tag is refused rather than published under this one.
    done = registry.run(steps, {**inputs, "module-tag": "v0.3.0"})
    assert done.returncode == 1
    assert "the release image says version v0.2.0, not v0.3.0" in done.stdout
