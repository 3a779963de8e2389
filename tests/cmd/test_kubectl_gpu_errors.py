# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu when the question or the cluster is wrong: one line on stderr and the documented
exit code (2: usage or input, 3: the cluster cannot be read); colour only on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from deckhouse_gpu.cmd.kubectl_gpu.main import main
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import RESOURCES
from testkit.waiting import free_port
from tests.cmd import kubectl_gpu_world
from tests.cmd.kubectl_gpu_world import World, build, kubeconfig

world = kubectl_gpu_world.world  # the fixture, bound here so that pytest finds it
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("error: ")
    return err.strip()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "nope"], 'error: pod "nope" not found in namespace "ml"'),
        (["explain", "train", "-n", "ml"], "error: pod ml/train is Running, not Pending: nothing to explain"),
        (["capacity", "--class", "gpu-v100"], 'error: DeviceClass "gpu-v100" not found'),
        (["capacity", "--node", "w9"], 'error: node "w9" not found'),
        (["status", "w9"], "error: no PhysicalGPU on node w9"),
    ],
)
def test_input_errors_exit_2(world: World, capsys, argv: list[str], message: str) -> None:
    code, out = world.run(*argv)
    assert (code, out) == (2, "")
    assert _one_line(capsys) == message


def test_usage_errors_exit_2(world: World, capsys) -> None:
    for argv in (["status", "-o", "xml"], ["explain"], ["nothing"], []):
        with pytest.raises(SystemExit) as caught:
            world.run(*argv)
        assert caught.value.code == 2
    assert "usage: kubectl gpu" in capsys.readouterr().err


def test_a_cluster_without_the_module(tmp_path: Path, capsys) -> None:
    cluster = build()
    without = [r for r in RESOURCES if r != PHYSICAL_GPUS]  # the CRD is not installed: 404
    with FakeApiServer(cluster.kube, without) as server:
        code = main(["--kubeconfig", kubeconfig(tmp_path, server.url), "status"], out=io.StringIO())
    assert code == 3
    assert _one_line(capsys) == (
        "error: the gpu module is not installed in this cluster: "
        "the API server serves no physicalgpus.gpu.deckhouse.io"
    )


@pytest.mark.parametrize("argv", [["status"], ["capacity"], ["explain", "wants-two"]])
def test_no_permission_to_list_claims(world: World, capsys, argv: list[str]) -> None:
    refusal = 'resourceclaims.resource.k8s.io is forbidden: User "me" cannot list'
    world.server.refuse(CLAIMS, 403, "Forbidden", refusal)
    code, out = world.run(*argv)
    assert (code, out) == (3, "")
    line = _one_line(capsys)
    assert line.startswith(
        "error: not allowed to list resourceclaims.resource.k8s.io in all namespaces (GET "
    )
    assert 'User "me" cannot list' in line
    assert line.endswith("see the RBAC a user needs in docs/KUBECTL.md")
    world.reads()  # and nothing but GETs went out


def test_kubeconfig_and_connection_errors_exit_3(tmp_path: Path, capsys, monkeypatch) -> None:
    code = main(["--kubeconfig", str(tmp_path / "missing"), "status"], out=io.StringIO())
    assert code == 3
    assert _one_line(capsys).startswith(f"error: kubeconfig {tmp_path / 'missing'}: ")
    path = kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}")
    assert main(["--kubeconfig", path, "--context", "other", "status"], out=io.StringIO()) == 3
    assert _one_line(capsys) == f'error: context "other" not found in kubeconfig {path}'
    monkeypatch.setenv("KUBECONFIG", path)  # as kubectl: the variable when no flag is given
    assert main(["capacity"], out=io.StringIO()) == 3
    assert _one_line(capsys).startswith("error: the API server cannot be reached: ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(world: World, monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    code, out = world.run("status", out=Terminal())
    assert code == 0
    assert "\033[32mTrue\033[0m" in out
    assert world.run("status")[1].count("\033[") == 0  # not a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert world.run("status", out=Terminal())[1].count("\033[") == 0
    monkeypatch.delenv("NO_COLOR")
    assert world.run("status", "-o", "json", out=Terminal())[1].count("\033[") == 0  # data is never painted
