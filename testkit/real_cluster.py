# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A real Kubernetes on loopback for the tests: etcd and kube-apiserver, and on request
kube-scheduler, kube-controller-manager and kubelets on Kubernetes' fake container runtime.

The binaries come from one directory, ``KUBE_ASSETS`` (named as controller-runtime's
``KUBEBUILDER_ASSETS``), laid out as ``v<major.minor>/<binary>``; by default ``.tools/k8s``,
which ``tools/fetch-kube-assets`` fills from the team's shared binaries (the Makefile's
``SHARED_K8S``). Each cluster has its own CA,
service-account keys and the DRA feature gates of its version; a test session shares one cluster
per version (``tests/real/conftest.py``) and stops everything it started, by pid, at exit.

What these machines taught (the README beside the shared binaries): an unknown feature gate stops
kube-apiserver at start, so gates are per version; kube-apiserver drains for seconds after
SIGTERM, so a stop waits for the pid; a kubelet with the fake runtime deletes the files of its
working directory when a Pod goes, so it starts in an empty directory of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testkit.real_pki import Credential, Pki
from testkit.waiting import free_port

if TYPE_CHECKING:
    from testkit.real_kubelet import Kubelet

REPO = Path(__file__).resolve().parent.parent
ASSETS_VARIABLE = "KUBE_ASSETS"
REQUIRED_VARIABLE = "KUBE_ASSETS_REQUIRED"
DEFAULT_ASSETS = REPO / ".tools" / "k8s"
# The versions of the shared binaries; the tests parametrize over those whose binaries are present.
VERSIONS = ("1.34", "1.35", "1.36")
KUBELET_VERSIONS = ("1.35", "1.36")

_DRA_GATES = (
    "DynamicResourceAllocation",
    "DRAPartitionableDevices",
    "DRAConsumableCapacity",
    "DRAExtendedResource",
    "DRADeviceBindingConditions",
    "DRAResourceClaimDeviceStatus",
    "DRADeviceTaints",
    "DRAPrioritizedList",
    "DRAAdminAccess",
)
# DRADeviceTaintRules is unknown to 1.34 (an unknown gate stops kube-apiserver at start).
_GATES_ADDED = {"1.35": ("DRADeviceTaintRules",), "1.36": ("DRADeviceTaintRules",)}
# With DRADeviceTaintRules the scheduler watches DeviceTaintRules (v1alpha3 in 1.35, v1beta2 in
# 1.36) and schedules nothing until that informer syncs, so those versions must be served.
_RUNTIME_CONFIG = {
    "1.34": "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true",
    "1.35": "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true",
    "1.36": "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
}
SERVICE_CIDR = "10.96.0.0/16"


class AssetsMissing(RuntimeError):
    """The binaries of a version are not there; the message says where they were looked for."""


class ApiError(RuntimeError):
    def __init__(self, status: int, body: Mapping[str, Any], method: str, path: str) -> None:
        self.status = status
        self.body = dict(body)
        self.reason = str(body.get("reason", ""))
        super().__init__(f"{method} {path}: HTTP {status}: {body.get('message', body)}")


def gates(version: str) -> dict[str, bool]:
    return {gate: True for gate in _DRA_GATES + _GATES_ADDED.get(version, ())}


def gates_flag(version: str) -> str:
    return ",".join(f"{name}={str(on).lower()}" for name, on in gates(version).items())


def assets_root() -> Path:
    configured = os.environ.get(ASSETS_VARIABLE)
    return Path(configured) if configured else DEFAULT_ASSETS


def assets_required() -> bool:
    """``.ci/run`` sets this: in CI a missing binary is an error, never a skip."""
    return os.environ.get(REQUIRED_VARIABLE, "") not in ("", "0")


def binaries(version: str, *names: str) -> Path:
    """The directory of ``version``'s binaries holding every one of ``names``, or AssetsMissing."""
    directory = assets_root() / f"v{version}"
    wanted = names or ("kube-apiserver", "etcd")
    missing = [name for name in wanted if not os.access(directory / name, os.X_OK)]
    if missing:
        raise AssetsMissing(
            f"real Kubernetes {version}: no {', '.join(missing)} in {directory} "
            f"(set {ASSETS_VARIABLE} or run tools/fetch-kube-assets)"
        )
    return directory


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class Process:
    """One server started by a cluster; stopped by pid, with its log kept for the failure message."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 25) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, grace: float = 30.0) -> None:
        if not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing of the process runs after it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(10)


def launch(
    name: str, argv: Sequence[str | Path], logs: Path, cwd: Path, env: Mapping[str, str] | None = None
) -> Process:
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with log.open("ab") as output:
        popen = subprocess.Popen(
            [str(arg) for arg in argv],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    return Process(name, popen, log)


def wait_until(check: Callable[[], bool], timeout: float, what: str, process: Process | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if process is not None and not process.alive():
            raise RuntimeError(f"{process.name} exited while waiting for {what}:\n{process.tail()}")
        time.sleep(0.25)
    tail = f"\n{process.tail()}" if process is not None else ""
    raise TimeoutError(f"{what}: not after {timeout:.0f} s{tail}")


# ---------------------------------------------------------------------------------------------
# The cluster


def kubeconfig_text(server: str, ca: Path, user: Mapping[str, str]) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "real", "cluster": {"server": server, "certificate-authority": str(ca)}}],
            "users": [{"name": "user", "user": dict(user)}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": "user"}}],
            "current-context": "real",
        },
        indent=1,
    )


@dataclass
class RealCluster:
    """etcd and kube-apiserver of one version, more components on request; see the module doc."""

    version: str
    workdir: Path
    bin: Path = field(init=False)
    pki: Pki = field(init=False)
    port: int = field(init=False)
    processes: dict[str, Process] = field(default_factory=dict)
    kubelets: dict[str, Kubelet] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    apiserver_flags: tuple[str, ...] = ()  # e.g. --watch-cache=false, for a cluster of one's own

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    # -- start and stop -----------------------------------------------------------------------

    def start(self) -> RealCluster:
        self.bin = binaries(self.version)
        self.pki = Pki(self.workdir / "pki")
        self.port = free_port()
        self._etcd()
        self._apiserver()
        self._write_kubeconfig("admin", "gpu-test-admin", ("system:masters",))
        self.wait_ready()
        return self

    def _etcd(self) -> None:
        client, peer = free_port(), free_port()
        self._etcd_url = f"http://127.0.0.1:{client}"
        data = self.workdir / "etcd"
        process = self._launch(
            "etcd",
            [
                self.bin / "etcd",
                "--name=test",
                f"--data-dir={data}",
                f"--listen-client-urls={self._etcd_url}",
                f"--advertise-client-urls={self._etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                # A test's etcd needs no durability; fsync on a shared disk is the slow part.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        wait_until(lambda: _http_ok(f"{self._etcd_url}/health"), 60, "etcd healthy", process)

    def _apiserver(self) -> None:
        serving = self.pki.issue(
            "apiserver",
            "kube-apiserver",
            hosts=("127.0.0.1", "localhost", "10.96.0.1", "kubernetes.default.svc"),
        )
        self._launch(
            "kube-apiserver",
            [
                self.bin / "kube-apiserver",
                f"--etcd-servers={self._etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={serving.crt}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={self.pki.ca}",
                f"--service-account-key-file={self.pki.sa_pub}",
                f"--service-account-signing-key-file={self.pki.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true",
                f"--feature-gates={gates_flag(self.version)}",
                f"--runtime-config={_RUNTIME_CONFIG[self.version]}",
                "--v=1",
                *self.apiserver_flags,
            ],
        )

    def restart_apiserver(self, version: str | None = None, down_seconds: float = 0.0) -> None:
        """SIGKILL kube-apiserver (a crash, a node of the control plane lost), wait, start it again
        on the same port and etcd; with ``version``, that version's binary (an upgrade)."""
        self.processes["kube-apiserver"].kill()
        time.sleep(down_seconds)
        if version is not None and version != self.version:
            self.version, self.bin = version, binaries(version)
        self._apiserver()
        self.wait_ready()

    def compact_etcd(self) -> int:
        """Compacts etcd at its current revision: every watch resuming from an older one is told
        410 Gone (``resourceVersion too old``). The revision compacted at."""
        etcdctl = [str(self.bin / "etcdctl"), f"--endpoints={self._etcd_url}"]
        status = subprocess.run(
            [*etcdctl, "endpoint", "status", "--write-out=json"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        revision = int(json.loads(status.stdout)[0]["Status"]["header"]["revision"])
        subprocess.run([*etcdctl, "compact", str(revision)], capture_output=True, timeout=60, check=True)
        return revision

    def wait_ready(self, timeout: float = 180) -> None:
        wait_until(
            self._readyz,
            timeout,
            f"kube-apiserver {self.version} ready",
            self.processes["kube-apiserver"],
        )
        # RBAC's bootstrap roles are written by a post-start hook; readyz waits for it, but the
        # first namespace-scoped call can still race the default namespace: wait for it too.
        wait_until(lambda: self._exists("/api/v1/namespaces/default"), 60, "namespace default")

    def _readyz(self) -> bool:
        try:
            return bool(self.request("GET", "/readyz", raw=True) == "ok")
        except (OSError, ApiError):
            return False

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except (OSError, ApiError):
            return False
        return True

    def start_scheduler(self, binary: str = "kube-scheduler", name: str = "kube-scheduler") -> Process:
        """kube-scheduler (or a patched build in the same directory), started once per cluster."""
        with self._lock:
            if name in self.processes and self.processes[name].alive():
                return self.processes[name]
            binaries(self.version, binary)
            kubeconfig = self._write_kubeconfig(name, "system:kube-scheduler")
            process = self._launch(
                name,
                [
                    self.bin / binary,
                    f"--kubeconfig={kubeconfig}",
                    f"--authentication-kubeconfig={kubeconfig}",
                    f"--authorization-kubeconfig={kubeconfig}",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={free_port()}",
                    "--leader-elect=false",
                    f"--feature-gates={gates_flag(self.version)}",
                    "--v=1",
                ],
            )
            return process

    def start_controller_manager(self, controllers: str = "*") -> Process:
        """kube-controller-manager: claims from templates, extended-resource claims, GC.
        ``controllers`` as its flag: ``*,-nodelifecycle`` keeps fake Nodes without a kubelet Ready."""
        with self._lock:
            name = "kube-controller-manager"
            if name in self.processes and self.processes[name].alive():
                return self.processes[name]
            binaries(self.version, "kube-controller-manager")
            kubeconfig = self._write_kubeconfig(name, "system:kube-controller-manager")
            return self._launch(
                name,
                [
                    self.bin / "kube-controller-manager",
                    f"--kubeconfig={kubeconfig}",
                    f"--authentication-kubeconfig={kubeconfig}",
                    f"--authorization-kubeconfig={kubeconfig}",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={free_port()}",
                    f"--controllers={controllers}",
                    "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={self.pki.sa_key}",
                    f"--root-ca-file={self.pki.ca}",
                    f"--cluster-signing-cert-file={self.pki.ca}",
                    f"--cluster-signing-key-file={self.pki.ca_key}",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    "--leader-elect=false",
                    f"--feature-gates={gates_flag(self.version)}",
                    "--v=1",
                ],
            )

    def add_node(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """A Node without a kubelet, Ready and untainted: the scheduler binds Pods to it and nothing
        runs them. The status is a subresource, and merge patches leave the controller-manager's
        own writes alone; 1.36 taints a new Node not-ready at creation."""
        metadata = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
        self.create({"apiVersion": "v1", "kind": "Node", "metadata": metadata})
        resources = {"cpu": "64", "memory": "512Gi", "pods": "250"}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "a fake node"}
        ready |= {"lastHeartbeatTime": now, "lastTransitionTime": now}
        status = {"capacity": resources, "allocatable": resources, "conditions": [ready]}
        merge = "application/merge-patch+json"
        self.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": status}, content_type=merge)
        self.request("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, content_type=merge)

    def start_kubelet(self, node: str) -> Kubelet:
        """A kubelet on the fake runtime, registered as ``node`` and Ready, once per name."""
        with self._lock:
            if node in self.kubelets and self.kubelets[node].alive():
                return self.kubelets[node]
            from testkit.real_kubelet import Kubelet  # noqa: PLC0415 - it imports this module

            kubelet = Kubelet(self, node).start()
            self.kubelets[node] = kubelet
            return kubelet

    def stop(self) -> None:
        for kubelet in list(self.kubelets.values()):
            kubelet.stop()
        self.kubelets.clear()
        order = ["kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]
        names = sorted(self.processes, key=lambda n: order.index(n) if n in order else -1)
        for name in names:
            self.processes[name].stop()
        self.processes.clear()

    def _launch(self, name: str, argv: Sequence[str | Path]) -> Process:
        # The servers' working directory is a folder of the cluster's own, never the repository.
        process = launch(name, argv, self.workdir / "logs", self.workdir)
        self.processes[name] = process
        return process

    def _write_kubeconfig(self, name: str, common_name: str, organizations: Sequence[str] = ()) -> Path:
        credential = self.pki.issue(name, common_name, organizations)
        path = self.workdir / f"{name}.kubeconfig"
        user = {"client-certificate": str(credential.crt), "client-key": str(credential.key)}
        path.write_text(kubeconfig_text(self.server, self.pki.ca, user))
        return path

    # -- identities ---------------------------------------------------------------------------

    def user_kubeconfig(self, name: str, common_name: str, organizations: Sequence[str] = ()) -> Path:
        """A kubeconfig of a client-certificate user (``system:node:<n>`` for a node)."""
        return self._write_kubeconfig(name, common_name, organizations)

    def token_kubeconfig(self, name: str, token: str) -> Path:
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(kubeconfig_text(self.server, self.pki.ca, {"token": token}))
        return path

    def service_account_token(
        self,
        namespace: str,
        name: str,
        seconds: int = 3600,
        bound_to: Mapping[str, Any] | None = None,
    ) -> str:
        """A token of the ServiceAccount (created if missing) from the TokenRequest API;
        ``bound_to`` (a Pod's kind/name/uid) gives it the node claims a pod's token carries."""
        self.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self.ensure(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            }
        )
        spec: dict[str, Any] = {"expirationSeconds": seconds}
        if bound_to is not None:
            spec["boundObjectRef"] = dict(bound_to)
        answer = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        return str(answer["status"]["token"])

    # -- requests (as the admin) --------------------------------------------------------------

    def ssl_context(self, client: Credential | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        credential = client or Credential(self.pki.directory / "admin.crt", self.pki.directory / "admin.key")
        context.load_cert_chain(str(credential.crt), str(credential.key))
        return context

    def send(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        token: str | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> tuple[int, str]:
        """One call, as the cluster's admin or with a bearer ``token``: the HTTP status and the
        answer's text, whatever the status."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - https to the test's own server
            self.server + path, data=data, method=method
        )
        if data is not None:
            request.add_header("Content-Type", content_type)
        request.add_header("Accept", "application/json")
        if token is None:
            context = self.ssl_context()
        else:
            request.add_header("Authorization", f"Bearer {token}")
            context = ssl.create_default_context(cafile=str(self.pki.ca))
        try:
            with urllib.request.urlopen(  # noqa: S310 - https to the test's own server
                request, context=context, timeout=timeout
            ) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = "application/json",
        raw: bool = False,
        timeout: float = 30,
    ) -> Any:
        """One call as the cluster's admin; an error answer raises ApiError with its Status."""
        status, text = self.send(method, path, body, content_type=content_type, timeout=timeout)
        if status >= 400:
            raise ApiError(status, decoded(text), method, path)
        if raw:
            return text
        return json.loads(text) if text else {}

    def as_token(
        self,
        token: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any]]:
        """One call with a bearer token: the status and the answer (a Status when refused)."""
        status, text = self.send(method, path, body, token=token, content_type=content_type)
        return status, decoded(text)

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        path = collection_path(obj)
        if dry_run:
            path += "?dryRun=All"
        return dict(self.request("POST", path, obj))

    def apply(self, obj: Mapping[str, Any], *, manager: str = "gpu-tests", dry_run: bool = False) -> Any:
        """Server-side apply, as ``kubectl apply --server-side --force-conflicts``."""
        query = f"?fieldManager={manager}&force=true" + ("&dryRun=All" if dry_run else "")
        return self.request(
            "PATCH", object_path(obj) + query, obj, content_type="application/apply-patch+yaml"
        )

    def ensure(self, obj: Mapping[str, Any]) -> None:
        """Creates the object unless it exists (namespaces, service accounts of a shared cluster)."""
        try:
            self.create(obj)
        except ApiError as error:
            if error.status != 409:
                raise

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        return self.request("GET", object_path(_ref(api_version, kind, name, namespace)))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        with contextlib.suppress(ApiError):
            self.request("DELETE", object_path(_ref(api_version, kind, name, namespace)))

    def wait_for(
        self,
        check: Callable[[], Any],
        timeout: float = 60,
        what: str = "condition",
    ) -> Any:
        """Polls ``check`` until it returns something truthy; returns it."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = check()
            except ApiError as error:
                last = error
            else:
                if last:
                    return last
            time.sleep(0.25)
        raise TimeoutError(f"{what}: not after {timeout:.0f} s (last: {last!r})")


def decoded(text: str) -> dict[str, Any]:
    """An answer's JSON; a body that is not JSON (a proxy's error page) as its message."""
    try:
        return dict(json.loads(text)) if text else {}
    except ValueError:
        return {"message": text}


def _ref(api_version: str, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


# The kinds the tests write, by kind: (plural, namespaced). A kind missing here is an error of the
# test, not a guess: discovery would hide a misspelled kind.
RESOURCES: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "ServiceAccount": ("serviceaccounts", True),
    "Secret": ("secrets", True),
    "ConfigMap": ("configmaps", True),
    "Service": ("services", True),
    "Pod": ("pods", True),
    "Node": ("nodes", False),
    "FlowSchema": ("flowschemas", False),
    "PriorityLevelConfiguration": ("prioritylevelconfigurations", False),
    "Event": ("events", True),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True),
    "DaemonSet": ("daemonsets", True),
    "Deployment": ("deployments", True),
    "StatefulSet": ("statefulsets", True),
    "Job": ("jobs", True),
    "CronJob": ("cronjobs", True),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
    "ValidatingAdmissionPolicy": ("validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": ("validatingadmissionpolicybindings", False),
    "PriorityClass": ("priorityclasses", False),
    "Lease": ("leases", True),
    "NetworkPolicy": ("networkpolicies", True),
    "DeviceClass": ("deviceclasses", False),
    "ResourceSlice": ("resourceslices", False),
    "ResourceClaim": ("resourceclaims", True),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True),
    "DeviceTaintRule": ("devicetaintrules", False),
    "PhysicalGPU": ("physicalgpus", False),
    "GPUClass": ("gpuclasses", False),
    # Kinds of other Deckhouse modules and of Prometheus: served only where their CRDs are.
    "ServiceMonitor": ("servicemonitors", True),
    "PodMonitor": ("podmonitors", True),
    "PrometheusRule": ("prometheusrules", True),
    "VerticalPodAutoscaler": ("verticalpodautoscalers", True),
    "GrafanaDashboardDefinition": ("grafanadashboarddefinitions", False),
    "CustomPrometheusRules": ("customprometheusrules", False),
}


def collection_path(obj: Mapping[str, Any]) -> str:
    api_version = str(obj["apiVersion"])
    kind = str(obj["kind"])
    if kind not in RESOURCES:
        raise KeyError(f"real_cluster: add the plural of {kind} to RESOURCES")
    plural, namespaced = RESOURCES[kind]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = obj.get("metadata", {}).get("namespace")
    if namespaced:
        return f"{prefix}/namespaces/{namespace or 'default'}/{plural}"
    return f"{prefix}/{plural}"


def object_path(obj: Mapping[str, Any]) -> str:
    return f"{collection_path(obj)}/{obj['metadata']['name']}"


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - loopback etcd
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError):
        return False


# ---------------------------------------------------------------------------------------------
# Sharing per test run


class Clusters:
    """One cluster per version for a test run, started on first use, stopped at the end."""

    def __init__(self, base: Path | None = None) -> None:
        self._base = base or Path(tempfile.mkdtemp(prefix="gpu-real-"))
        self._clusters: dict[str, RealCluster] = {}
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, version: str) -> RealCluster:
        with self._lock:
            if version in self._failed:
                raise RuntimeError(self._failed[version])
            if version not in self._clusters:
                workdir = self._base / f"v{version}"
                workdir.mkdir(parents=True, exist_ok=True)
                cluster = RealCluster(version, workdir)
                try:
                    cluster.start()
                except AssetsMissing:
                    cluster.stop()
                    raise
                except Exception as error:
                    cluster.stop()
                    self._failed[version] = f"real Kubernetes {version} did not start: {error}"
                    raise
                self._clusters[version] = cluster
            return self._clusters[version]

    def stop(self) -> None:
        with self._lock:
            # Each kube-apiserver drains for seconds after SIGTERM: the clusters stop side by side.
            with ThreadPoolExecutor(max(1, len(self._clusters))) as pool:
                list(pool.map(RealCluster.stop, self._clusters.values()))
            self._clusters.clear()
            shutil.rmtree(self._base, ignore_errors=True)


@contextlib.contextmanager
def real_cluster(version: str, base: Path | None = None) -> Iterator[RealCluster]:
    """One cluster for a benchmark or a script: started on entry, stopped on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="gpu-real-")) if base is None else base
    cluster = RealCluster(version, workdir)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        if base is None:
            shutil.rmtree(workdir, ignore_errors=True)
