# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``gpu-dra-controller allocate``: the allocator as a dry run over files, its output and errors."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.cmd.gpu_dra_controller import main as dra_controller
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import node_cards

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def claim(name: str, device_class: str, count: int = 1) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": "ml", "name": name},
        "spec": {"devices": {"requests": [request]}},
    }


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cards = node_cards("w1", "a30", 2) + node_cards("w2", "h100-80gb", 1)
    paths = {"slices": tmp_path / "slices.yaml", "claims": tmp_path / "claims.yaml"}
    for minor in (34, 35, 36, 37):
        path = tmp_path / f"slices-{minor}.yaml"
        path.write_text(yaml.safe_dump_all(render_nodes(cards, minor, {}, True, True)))
        paths[f"slices-{minor}"] = path
    paths["slices"] = paths["slices-35"]
    return paths


def run(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = dra_controller.main(["allocate", *args], out)
    report: dict[str, Any] = yaml.safe_load(out.getvalue()) if out.getvalue() else {}
    return code, report


def common(files: dict[str, Path], *claims: dict[str, Any], slices: str = "slices") -> list[str]:
    files["claims"].write_text(yaml.safe_dump_all(claims))
    return [
        "--slices",
        str(files[slices]),
        "--classes",
        str(EXAMPLES / "deviceclasses.yaml"),
        "--claims",
        str(files["claims"]),
    ]


@pytest.mark.parametrize(
    ("version", "semantics"),
    [("1.34", "1.34"), ("1.35", "1.35"), ("1.36", "1.36"), ("1.37", "1.37"), ("1.38", "1.37")],
)
def test_claims_are_placed_on_the_first_node_that_takes_them(
    files: dict[str, Path], version: str, semantics: str
) -> None:
    minor = semantics.split(".")[1]  # a newer version than 1.37 allocates as 1.37
    args = common(files, claim("train", "gpu-h100-80gb-mig-3g.40gb", 2), slices=f"slices-{minor}")
    code, report = run(*args, "--k8s-version", version)
    assert code == 0
    assert report["node"] == "w2"
    assert report["kubernetesVersion"] == semantics
    (placed,) = report["claims"]
    assert placed["name"] == "ml/train"
    devices = [r["device"] for r in placed["allocation"]["devices"]["results"]]
    # The card's MIG placements are published in packing order, the higher 3g start first (DESIGN.md D19).
    assert devices == ["gpu-0000-10-00-0-mig-3g-40gb-4", "gpu-0000-10-00-0-mig-3g-40gb-0"]
    assert placed["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["w2"]
    (before,) = report["nodesTriedBefore"]
    assert before["node"] == "w1"
    assert before["reasons"] == [
        "claim ml/train request gpu (wants 2): 0 of 28 devices fit alone; "
        "28 not of DeviceClass gpu-h100-80gb-mig-3g.40gb"
    ]


def test_the_reasons_when_nothing_fits_and_exit_code_zero(files: dict[str, Path]) -> None:
    code, report = run(*common(files, claim("big", "gpu-h100-80gb-mig-3g.40gb", 3)), "--node", "w2")
    assert code == 0
    assert "claims" not in report
    (entry,) = report["unallocated"]
    assert entry == {
        "node": "w2",
        "reasons": [
            "claim ml/big request gpu (wants 3): 2 of 26 devices fit alone; "
            "24 not of DeviceClass gpu-h100-80gb-mig-3g.40gb"
        ],
    }


def test_already_allocated_claims_are_taken_into_account(files: dict[str, Path], tmp_path: Path) -> None:
    code, first = run(*common(files, claim("whole", "gpu-h100-80gb")))
    assert first["node"] == "w2"
    done = claim("whole", "gpu-h100-80gb")
    done["status"] = {"allocation": first["claims"][0]["allocation"]}
    allocated = tmp_path / "allocated.yaml"
    allocated.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [done]}))
    code, report = run(
        *common(files, claim("part", "gpu-h100-80gb-mig-1g.10gb")), "--allocated", str(allocated)
    )
    assert code == 0
    assert "claims" not in report
    (entry,) = [e for e in report["unallocated"] if e["node"] == "w2"]
    assert "in use" in entry["reasons"][0]
    assert "counters exhausted" in entry["reasons"][0]


def test_a_claim_the_scheduler_would_refuse_is_reported_as_an_error(files: dict[str, Path]) -> None:
    code, report = run(*common(files, claim("c", "no-such-class")))
    assert code == 0
    assert report["error"] == "claim ml/c request gpu: device class no-such-class not found"


def test_unreadable_files_exit_2_with_the_reason(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [unclosed")
    code, _ = run("--slices", str(broken), "--classes", str(broken), "--claims", str(broken))
    assert code == 2
    assert capsys.readouterr().err.startswith(f"gpu-dra-controller allocate: {broken} is not valid YAML")
    code, _ = run(
        "--slices", str(tmp_path / "missing.yaml"), "--classes", str(broken), "--claims", str(broken)
    )
    assert code == 2


def test_malformed_slices_are_listed_not_fatal(files: dict[str, Path], tmp_path: Path) -> None:
    slices = list(yaml.safe_load_all(files["slices"].read_text()))
    slices.append({"metadata": {"name": "junk"}, "spec": {"driver": "x"}})
    path = tmp_path / "with-junk.yaml"
    path.write_text(yaml.safe_dump_all(slices))
    args = common(files, claim("c", "gpu-a30"))
    args[1] = str(path)
    code, report = run(*args)
    assert code == 0
    assert report["inputProblems"] == ["ResourceSlice junk skipped: no driver or pool name"]
    assert report["node"] == "w1"


@pytest.mark.parametrize("version", ["1.33", "2", "latest"])
def test_a_version_older_than_1_34_or_not_a_version_is_refused(
    files: dict[str, Path], version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(*common(files, claim("a", "gpu-a30")), "--k8s-version", version)
    assert exit_info.value.code == 2
    assert "--k8s-version" in capsys.readouterr().err
