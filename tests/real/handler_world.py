# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A GPU node of a real cluster: a real kubelet (on Kubernetes' fake container runtime) and a real
``gpu-handler run`` process beside it, on a simulated host and simulated NVML.

The handler is started as the DaemonSet starts it, only with ``--host-root`` (a simulated bare-metal
host: two A30s, each in an IOMMU group of its own with its audio function, vfio-pci loaded) and
``--nvml-sim``. Its kubelet directories are the real kubelet's: with ``--host-root`` every host path
is taken under the host root, so the host root holds a link to the kubelet's root at the place of
the kubelet's own path; ``--plugin-dir`` and ``--registry-dir`` then name the kubelet's directories
both as the host sees them (MPS daemon Pods mount them; the kubelet creates them for those Pods,
inside its own temporary folder and nowhere else on the machine) and, through the link, where the
handler reaches them. The kubelet dials the socket path the handler registers, through the link.

The cluster gets what gpu-node-agent and the module's chart would have written: the PhysicalGPU
CRD and the node's two cards (DriverReady, bare metal), and the DeviceClasses of docs/examples.
Everything the tests see goes through the kubelet: Pod phases and events, its log (-v=4) of the
DRA calls, and the Pod status it writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from testkit.real_cluster import ApiError, RealCluster
from testkit.real_kubelet import Kubelet

REPO = Path(__file__).resolve().parents[2]
DRIVER = "gpu.deckhouse.io"
CARD_A, CARD_B = "0000:17:00.0", "0000:31:00.0"
WHOLE_A, WHOLE_B = "gpu-0000-17-00-0", "gpu-0000-31-00-0"
AUDIO = next(model for model in OTHER_DEVICES if model.key == "gpu-audio")
# Namespace of the MPS daemon Pods this handler creates (its --namespace).
MPS_NAMESPACE = "gpuh-mps"
IMAGE = "registry.example/cuda:12"
PHYSICAL_GPU = "gpu.deckhouse.io/v1alpha1"
RESOURCE = "resource.k8s.io/v1"
VFIO_CLASS = "gpuh-a30-vfio"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def build_host(root: Path) -> HostBuilder:
    """Two A30s on nvidia, each alone in its IOMMU group with its audio function; vfio-pci loaded."""
    host = HostBuilder(root).standard_node().install_nvidia_driver("8a1f0e2d-7c3b-4d5e-9f6a-1b2c3d4e5f60")
    host.load_driver("vfio-pci").load_driver("snd_hda_intel")
    for group, card in enumerate((CARD_A, CARD_B), start=40):
        host.add_gpu("a30", card, "nvidia", iommu_group=group)
        host.add_function(card[:-1] + "1", AUDIO, "snd_hda_intel", group)
    return host


@dataclass
class HandlerProcess:
    """One ``gpu-handler run`` (tests/real/handler_process.py); stdin breaks its simulated cards."""

    popen: subprocess.Popen[str]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def command(self, line: str) -> None:
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()
        answer = self.popen.stdout.readline().strip()
        assert answer == f"ok {line}", f"{line}: {answer!r}\n{self.tail()}"

    def tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def kill(self) -> None:
        """SIGKILL: nothing of the process runs after it, its sockets stay behind."""
        with contextlib.suppress(ProcessLookupError):
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)
        self._close()

    def stop(self) -> int | None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        self._close()
        return self.popen.returncode

    def _close(self) -> None:
        streams: tuple[IO[str] | None, ...] = (self.popen.stdin, self.popen.stdout)
        for stream in streams:
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@dataclass
class HandlerNode:
    """A real kubelet and gpu-handler on one simulated host; see the module doc."""

    cluster: RealCluster
    node: str
    kubelet: Kubelet = field(init=False)
    directory: Path = field(init=False)
    handler: HandlerProcess | None = None
    starts: int = 0
    # What must be on the node before gpu-handler starts (another owner's device plugin, say).
    before_handler: Callable[[HandlerNode], None] | None = None

    # -- paths -------------------------------------------------------------------------------------

    @property
    def host_root(self) -> Path:
        return self.directory / "host"

    @property
    def plugin_dir(self) -> Path:
        """The handler's plugin directory, as the kubelet (and the host) sees it."""
        return self.kubelet.plugins_dir / DRIVER

    @property
    def namespace(self) -> str:
        return f"gpuh-{self.node}"

    def driver_of(self, address: str) -> str | None:
        link = self.host_root / "sys/bus/pci/devices" / address / "driver"
        return link.resolve().name if link.is_symlink() else None

    def checkpoint(self) -> dict[str, Any]:
        path = self.plugin_dir / "checkpoint.json"
        return dict(json.loads(path.read_text())["claims"]) if path.exists() else {}

    def card_settings(self) -> SimCardSettings:
        """The simulated cards' sharing settings as the host keeps them (what prepare set on the
        cards: compute mode, time-slice interval), read from the host root's state file."""
        return SimCardSettings.under(self.host_root, [CARD_A, CARD_B])

    def cdi_spec(self, claim: Mapping[str, Any]) -> dict[str, Any] | None:
        """The claim's CDI spec as the handler wrote it for the runtime; None when there is none."""
        path = self.host_root / "etc/cdi" / claim_spec_file(claim["metadata"]["uid"])
        return dict(json.loads(path.read_text())) if path.exists() else None

    def cdi_edits(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """The container edits of the claim's one device in its CDI spec (its env, mounts, nodes)."""
        spec = self.cdi_spec(claim)
        assert spec is not None, f"no CDI spec for {claim['metadata']['name']}\n{self.failure_context()}"
        (device,) = spec["devices"]
        return dict(device["containerEdits"])

    def mps_daemons(self) -> list[dict[str, Any]]:
        """The MPS daemon Pods of this node."""
        daemons = self.cluster.request(
            "GET", f"/api/v1/namespaces/{MPS_NAMESPACE}/pods?labelSelector=app%3Dgpu-mps"
        )["items"]
        return [d for d in daemons if d["spec"].get("nodeName") == self.node]

    def mig_instances(self, address: str) -> list[dict[str, Any]]:
        path = self.host_root / "var/lib/gpu-sim/mig-state.json"
        cards = json.loads(path.read_text())["cards"] if path.exists() else {}
        return list((cards.get(address) or {}).get("instances") or [])

    # -- start and stop ----------------------------------------------------------------------------

    def start(self) -> HandlerNode:
        cluster = self.cluster
        cluster.start_controller_manager()
        cluster.start_scheduler()
        self.kubelet = cluster.start_kubelet(self.node)
        self._build_host("gh-")
        self._give_ephemeral_storage()
        self._install()
        if self.before_handler is not None:
            self.before_handler(self)
        self.start_handler()
        return self

    def _build_host(self, prefix: str) -> None:
        """The simulated host in a new folder, with the link to the kubelet's root inside it."""
        # Unix socket paths have 107 bytes: the host root is short, the link inside it adds the
        # kubelet's own (short) path.
        self.directory = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        build_host(self.host_root)
        link = self.host_root / str(self.kubelet.root).lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(self.kubelet.root)

    def _give_ephemeral_storage(self) -> None:
        """The test kubelet runs without local storage capacity isolation (these machines), so its
        Node has no ephemeral-storage and it rejects at admission every Pod that requests some, as
        the MPS daemon Pods do (50Mi). The kubelet admits against the Node it reads from the API
        and keeps what it does not manage there: the Node is given the storage a real one has."""
        storage = {"ephemeral-storage": "100Gi"}
        self.cluster.request(
            "PATCH",
            f"/api/v1/nodes/{self.node}/status",
            {"status": {"capacity": storage, "allocatable": storage}},
            content_type="application/merge-patch+json",
        )

    def _install(self) -> None:
        cluster = self.cluster
        cluster.apply(_documents(REPO / "crds" / "physicalgpu.yaml")[0])
        cluster.wait_for(
            lambda: _established(cluster, "physicalgpus.gpu.deckhouse.io"), 60, "PhysicalGPU CRD"
        )
        for obj in _documents(REPO / "docs/examples/deviceclasses.yaml"):
            if obj["metadata"]["name"] in ("gpu-a30", "gpu-a30-mig-1g.6gb"):
                cluster.apply(obj)
        cluster.apply(vfio_class())
        for namespace in (self.namespace, MPS_NAMESPACE):
            cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        # Pods are admitted only once the namespace's default ServiceAccount exists.
        cluster.wait_for(
            lambda: cluster.get("v1", "ServiceAccount", "default", self.namespace), 60, "ServiceAccount"
        )
        # The node's PhysicalGPUs as in production: gpu-node-agent writes them from the host's sysfs
        # (and DMI: bare metal), the driver validator's DriverReady comes from gpu-controller.
        agent = subprocess.run(
            [sys.executable, "-m", "deckhouse_gpu.cmd.gpu_node_agent", "--once", "--node-name", self.node,
             "--host-root", str(self.host_root), "--kubeconfig", str(cluster.admin_kubeconfig)],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert agent.returncode == 0, agent.stderr[-3000:]
        ready = {"type": "DriverReady", "status": "True", "reason": "ValidatorReady", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        for address in (CARD_A, CARD_B):
            name = physical_gpu_name(self.node, address)
            card = cluster.get(PHYSICAL_GPU, "PhysicalGPU", name)
            conditions = [c for c in card["status"].get("conditions") or [] if c["type"] != "DriverReady"]
            cluster.request(
                "PATCH",
                f"/apis/{PHYSICAL_GPU}/physicalgpus/{name}/status",
                {"status": {"conditions": [*conditions, ready]}},
                content_type="application/merge-patch+json",
            )

    def start_handler(self) -> HandlerProcess:
        self.starts += 1
        log = self.directory / f"handler-{self.starts}.log"
        argv = [
            sys.executable, "-m", "tests.real.handler_process", "run",
            "--node-name", self.node,
            "--kubeconfig", str(self.cluster.admin_kubeconfig),
            "--nvml-sim", "a30,a30",
            "--host-root", str(self.host_root),
            "--cdi-root", "/etc/cdi",
            "--plugin-dir", str(self.plugin_dir),
            "--registry-dir", str(self.kubelet.registry_dir),
            "--namespace", MPS_NAMESPACE,
            "--mps-image", "registry.example/gpu-handler:test",
            "--health-address", "127.0.0.1:0",
            "--metrics-address", "127.0.0.1:0",
            # A failed card shows at the next heartbeat: no grace, short retries.
            "--heartbeat-seconds", "0.5",
            "--health-grace-seconds", "0",
            "--backoff-seconds", "0.5",
        ]  # fmt: skip
        with log.open("w") as output:
            popen = subprocess.Popen(
                argv,
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=output,
                text=True,
                env={**os.environ, "LOG_LEVEL": "info"},
            )
        self.handler = HandlerProcess(popen, log)
        return self.handler

    def stop(self) -> None:
        if self.handler is not None:
            self.handler.stop()
        with contextlib.suppress(ApiError):
            self.cluster.request("DELETE", f"/api/v1/namespaces/{self.namespace}")
        if hasattr(self, "kubelet"):
            self.kubelet.stop()
            self.cluster.kubelets.pop(self.node, None)
        with contextlib.suppress(ApiError):
            self.cluster.request(
                "DELETE",
                f"/apis/{PHYSICAL_GPU}/physicalgpus?labelSelector=gpu.deckhouse.io/node%3D{self.node}",
            )
        if hasattr(self, "directory"):
            shutil.rmtree(self.directory, ignore_errors=True)

    def failure_context(self) -> str:
        """The ends of the handler's and the kubelet's logs, for a failure message."""
        kubelet = "\n".join(
            line for line in self.kubelet.log_text().splitlines()[-400:] if "dra" in line.lower()
        )
        handler = self.handler.tail() if self.handler is not None else ""
        return f"--- gpu-handler:\n{handler}\n--- kubelet (DRA lines):\n{kubelet[-6000:]}"

    # -- what the kubelet shows --------------------------------------------------------------------

    def registrations(self) -> int:
        """How often the kubelet's log says it registered our DRA plugin."""
        return sum(
            1
            for line in self.kubelet.log_text().splitlines()
            if "Registered DRA plugin" in line and f'driverName="{DRIVER}"' in line
        )

    def kubelet_lines(self, *words: str) -> list[str]:
        return [line for line in self.kubelet.log_text().splitlines() if all(w in line for w in words)]

    def slices(self) -> list[dict[str, Any]]:
        found = self.cluster.request(
            "GET", f"/apis/{RESOURCE}/resourceslices?fieldSelector=spec.nodeName%3D{self.node}"
        )
        return [s for s in found["items"] if s["spec"]["driver"] == DRIVER]

    def devices(self) -> set[str]:
        return {d["name"] for s in self.slices() for d in s["spec"].get("devices") or []}

    def wait(self, check: Callable[[], Any], timeout: float, what: str) -> Any:
        """``check``'s first truthy answer; fails at once, with the logs, if the handler died."""

        def checked() -> Any:
            if self.handler is not None and not self.handler.alive():
                raise AssertionError(f"{what}: gpu-handler exited\n{self.failure_context()}")
            return check()

        try:
            return self.cluster.wait_for(checked, timeout, what)
        except TimeoutError as error:
            raise AssertionError(f"{error}\n{self.failure_context()}") from None

    # -- Pods and claims -------------------------------------------------------------------------

    def claim(
        self,
        name: str,
        device_class: str,
        *,
        count: int = 1,
        selector: str | None = None,
        share: int | None = None,
        config: Mapping[str, Any] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
        if tolerations:
            exactly["tolerations"] = tolerations
        if selector:
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        if share is not None:
            exactly["capacity"] = {"requests": {"sharePercent": str(share)}}
        devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
        if config is not None:
            devices["config"] = [{"requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": config}}]
        return self.cluster.create(
            {
                "apiVersion": RESOURCE,
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {"devices": devices},
            }
        )

    def pod(self, name: str, *, claim: str | None = None, limits: Mapping[str, str] | None = None) -> Any:
        """A Pod pinned to this node through the scheduler (which allocates its claims)."""
        container: dict[str, Any] = {"name": "cuda", "image": IMAGE}
        spec: dict[str, Any] = {
            "nodeSelector": {"kubernetes.io/hostname": self.node},
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [container],
        }
        if claim is not None:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
            container["resources"] = {"claims": [{"name": "gpu"}]}
        if limits is not None:
            container["resources"] = {"limits": dict(limits)}
        return self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": spec,
            }
        )

    def get_pod(self, name: str) -> Any:
        return self.cluster.get("v1", "Pod", name, self.namespace)

    def get_claim(self, name: str) -> Any:
        return self.cluster.get(RESOURCE, "ResourceClaim", name, self.namespace)

    def wait_running(self, name: str, timeout: float = 60) -> Any:
        def running() -> Any:
            pod = self.get_pod(name)
            return pod if pod.get("status", {}).get("phase") == "Running" else None

        try:
            return self.cluster.wait_for(running, timeout, f"Pod {name} Running")
        except TimeoutError as error:
            raise AssertionError(f"{error}\nevents: {self.events(name)}\n{self.failure_context()}") from None

    def delete_pod(self, name: str, timeout: float = 60) -> None:
        """Deletes the Pod gracefully (the kubelet stops it and unprepares its claims) and waits
        until it is gone."""
        self.cluster.delete("v1", "Pod", name, self.namespace)
        self.wait(lambda: _gone(lambda: self.get_pod(name)), timeout, f"Pod {name} gone")

    def delete_claim(self, name: str) -> None:
        self.cluster.delete(RESOURCE, "ResourceClaim", name, self.namespace)
        self.wait(lambda: _gone(lambda: self.get_claim(name)), 30, f"claim {name} gone")

    def events(self, pod: str) -> list[tuple[str, str]]:
        found = self.cluster.request(
            "GET",
            f"/api/v1/namespaces/{self.namespace}/events?fieldSelector=involvedObject.name%3D{pod}",
        )
        return [(e.get("reason", ""), e.get("message", "")) for e in found["items"]]

    def allocated(self, claim: str) -> list[str]:
        status = self.get_claim(claim).get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        return [r["device"] for r in results]

    def label(self, key: str, value: str | None) -> None:
        self.cluster.request(
            "PATCH",
            f"/api/v1/nodes/{self.node}",
            {"metadata": {"labels": {key: value}}},
            content_type="application/merge-patch+json",
        )


def _established(cluster: RealCluster, name: str) -> bool:
    crd = cluster.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _gone(get: Callable[[], Any]) -> bool:
    try:
        get()
    except ApiError as error:
        return error.status == 404
    return False


def vfio_class() -> dict[str, Any]:
    """docs/VFIO.md's DeviceClass for whole cards passed to VMs, for the A30."""
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": VFIO_CLASS},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": (
                            f'device.driver == "{DRIVER}" && '
                            f'!("sharePercent" in device.capacity["{DRIVER}"]) && '
                            f'device.attributes["{DRIVER}"].deviceType in ["Physical", "VFIO"] && '
                            f'device.attributes["{DRIVER}"].device == "a30-pcie"'
                        )
                    }
                }
            ],
            "config": [
                {
                    "opaque": {
                        "driver": DRIVER,
                        "parameters": {
                            "apiVersion": "resource.gpu.deckhouse.io/v1alpha1",
                            "kind": "VfioDeviceConfig",
                        },
                    }
                }
            ],
        },
    }


@contextlib.contextmanager
def handler_node(
    cluster: RealCluster, node: str, before_handler: Callable[[HandlerNode], None] | None = None
) -> Iterator[HandlerNode]:
    started = HandlerNode(cluster, node, before_handler=before_handler)
    try:
        yield started.start()
    finally:
        started.stop()


def wait_seconds(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False
