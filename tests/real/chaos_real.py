# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Faults of a real control plane under the module's four components (``make chaos-real``).

A cluster of its own (etcd, kube-apiserver, kube-controller-manager of one version; the shared
clusters of the real tier are never restarted), the chart's CRDs and RBAC, a Node with two
simulated A30s, and the four components as processes on their own ServiceAccount tokens, each
through a TCP proxy of its own (testkit/tcp_proxy.py) that counts the connections it opens.

Then, drawn from a seed, one fault after another:

- ``apiserver-restart``: kube-apiserver SIGKILLed, down for 1-5 s, started again;
- ``apiserver-upgrade``: the same, coming back as the next minor version's binary (once);
- ``etcd-compaction``: etcd compacted at its head, then kube-apiserver restarted, so every
  watch resumes from a compacted revision and is told 410 Gone;
- ``handler-rolling``: gpu-handler stopped with SIGTERM (it must exit 0) and a new one started;
- ``handler-kill``: gpu-handler SIGKILLed and a new one started;
- ``handler-kill-mid-prepare``: gpu-handler SIGKILLed while the kubelet's prepare of a claim
  runs; the kubelet's retry to the new process must finish it;
- ``apf-squeeze``: a FlowSchema puts the module's ServiceAccounts into a PriorityLevelConfiguration
  with no seats: every request of theirs is answered 429 for 4-10 s;
- ``watch-silent``, ``token-rotation``, ``node-recreate``: tests/real/chaos_net_faults.py. The
  components' tokens are files with the shortest expiry, renewed as the kubelet renews them.

After each fault a probe change needs every watch working again: one of the node's PhysicalGPUs
is deleted, and the fault's recovery time runs until the node is whole again (both cards back,
DriverReady, the node's ResourceSlices equal to those published before the fault for the claims
prepared then: the offers follow what is prepared), while a stream of
whole-GPU claims comes and goes through gpu-dra-controller and gpu-handler's kubelet plugin
(prepared and unprepared over its socket as the kubelet calls it: tests/support/fake_kubelet.py;
no real kubelet, which could not run these Pods here). Checked all along: every component
alive, no device allocated to two live claims, the allocation audit's violations zero, a CDI spec
for every prepared claim and none for any other (none left after unprepare); at the
end every component stops with exit 0 on SIGTERM. A failure names the seed and the faults so far.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from testkit.real_cluster import VERSIONS, ApiError, AssetsMissing, RealCluster, binaries, kubeconfig_text
from testkit.rotating_tokens import RotatingTokens
from testkit.tcp_proxy import TcpProxy
from tests.e2e.sim_node import build_host, claim_specs
from tests.real import component_world as world
from tests.real.chaos_net_faults import FAULTS as NET_FAULTS
from tests.support.fake_kubelet import FakeKubelet, PluginConnection, retry_until_ok

FAULT_KINDS = (
    "apiserver-restart",
    "apiserver-upgrade",
    "etcd-compaction",
    "handler-rolling",
    "handler-kill",
    "apf-squeeze",
    "handler-kill-mid-prepare",
    *NET_FAULTS,
)
FLOW_CONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
SQUEEZE = "chaos-squeeze"
# A hang, not a timing: the measured times are the report. A silent watch alone takes 130 s to
# be noticed, and each silenced pooled connection a request's 30 s read timeout.
RECOVERY_BOUND_SECONDS = 300.0
CLAIMS_NAMESPACE = "chaos-claims"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{CLAIMS_NAMESPACE}/resourceclaims"
DEVICE_CLASS = "chaos-a30"
VIOLATIONS = "d8_gpu_allocation_invariant_violations"


class ChaosFailure(AssertionError):
    pass


@dataclass
class Report:
    version: str
    seed: int
    faults: list[dict[str, Any]] = field(default_factory=list)
    rss_kib: dict[str, tuple[int, int]] = field(default_factory=dict)  # component: (first, last)
    connections: dict[str, tuple[int, int]] = field(default_factory=dict)  # open: (first, last)
    stop_exit: dict[str, int] = field(default_factory=dict)
    claims_allocated: int = 0

    def figures(self) -> dict[str, Any]:
        kinds: dict[str, Any] = {}
        for kind in sorted({f["kind"] for f in self.faults}):
            times = sorted(f["recoverySeconds"] for f in self.faults if f["kind"] == kind)
            kinds[kind] = {
                "count": len(times),
                "recoveryP50": round(statistics.median(times), 2),
                "recoveryP99": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
            }
        down = [f for f in self.faults if "downSeconds" in f]
        rates: dict[str, float] = {}
        for component in (world.NODE_AGENT, world.HANDLER, world.CONTROLLER, world.DRA_CONTROLLER):
            seconds = sum(f["downSeconds"] for f in down)
            opened = sum(f["connectionsWhileDown"].get(component, 0) for f in down)
            if seconds:
                rates[component] = round(opened / seconds, 2)
        squeezes = [f for f in self.faults if "throttledSeconds" in f]
        throttled = sum(f["throttledSeconds"] for f in squeezes)
        return {
            "rejectedPerSecondWhileThrottled": round(sum(f["rejected"] for f in squeezes) / throttled, 2)
            if throttled
            else None,
            "version": self.version,
            "seed": self.seed,
            "faultsPerKind": kinds,
            "connectionsPerSecondWhileApiServerDown": rates,
            "apiServerDownSeconds": round(sum(f["downSeconds"] for f in down), 1),
            "claimsAllocated": self.claims_allocated,
            "rssKiB": self.rss_kib,
            "openConnections": self.connections,
            "stopExit": self.stop_exit,
        }

    def replay(self) -> str:
        sequence = ", ".join(f["kind"] for f in self.faults)
        return f"seed {self.seed} on {self.version}; faults so far: [{sequence}]"


def next_version(version: str) -> str | None:
    later = [v for v in VERSIONS if v > version]
    if not later:
        return None
    try:
        binaries(later[0])
    except AssetsMissing:
        return None
    return later[0]


class ChaosRun:
    def __init__(self, version: str, seed: int, workdir: Path, watch_cache: bool = True) -> None:
        self.version, self.seed, self.workdir = version, seed, workdir
        self.draw = random.Random(seed)  # noqa: S311 - a replayable draw, not a secret
        self.report = Report(version, seed)
        flags = () if watch_cache else ("--watch-cache=false",)
        self.cluster = RealCluster(version, workdir / "cluster", apiserver_flags=flags)
        self.node = "chaos-n1"
        self.components: dict[str, world.Component] = {}
        self.proxies: dict[str, TcpProxy] = {}
        self.kubeconfigs: dict[str, Path] = {}
        self.handler_args: list[str] = []
        self.reference: list[Any] = []
        self.claims: list[str] = []  # live, oldest first
        self.prepared: dict[str, ClaimRef] = {}
        self.half_prepared: ClaimRef | None = None
        self.root = workdir / "h"
        self.claim_number = 0
        self.upgraded = False

    # -- set-up ----------------------------------------------------------------------------------

    def start(self) -> None:
        cluster = self.cluster.start()
        cluster.start_controller_manager("*,-nodelifecycle")
        world.install_access(cluster)
        world.add_node(cluster, self.node)
        root = build_host(self.root).root
        self.kubelet = FakeKubelet(str(root / "var/lib/kubelet/plugins_registry"))
        logs = self.workdir / "logs"
        # Token files, as the kubelet projects them (testkit/rotating_tokens.py).
        self.tokens = RotatingTokens(cluster, self.workdir / "tokens", world.NAMESPACE)
        nodes = {world.NODE_AGENT: self.node, world.HANDLER: self.node}
        for name in (world.NODE_AGENT, world.HANDLER, world.CONTROLLER, world.DRA_CONTROLLER):
            token_file = self.tokens.issue(name, nodes.get(name))
            proxy = self.proxies[name] = TcpProxy(cluster.port)
            path = self.workdir / f"{name}.kubeconfig"
            path.write_text(
                kubeconfig_text(
                    f"https://127.0.0.1:{proxy.port}", cluster.pki.ca, {"tokenFile": str(token_file)}
                )
            )
            self.kubeconfigs[name] = path
        self.tokens.start_renewing()
        world.ready_validator(cluster, self.node)
        # Before gpu-handler: it publishes only what some DeviceClass may select (DESIGN.md D19).
        world.whole_gpu_class(cluster, DEVICE_CLASS)
        kube = {name: ["--kubeconfig", str(path)] for name, path in self.kubeconfigs.items()}
        agent = ["--node-name", self.node, "--host-root", str(root), *kube[world.NODE_AGENT]]
        self.components[world.NODE_AGENT] = world.start(
            world.NODE_AGENT, "deckhouse_gpu.cmd.gpu_node_agent", agent, logs
        )
        controller = [*kube[world.CONTROLLER], "--namespace", world.NAMESPACE]
        env = {"POD_NAME": f"{world.CONTROLLER}-chaos"}
        self.components[world.CONTROLLER] = world.start(
            world.CONTROLLER, "deckhouse_gpu.cmd.gpu_controller", controller, logs, env, "--listen-address"
        )
        self.handler_args = ["run", "--node-name", self.node, *kube[world.HANDLER], "--nvml-sim", "a30,a30",
                             "--host-root", str(root), "--cdi-root", "/etc/cdi",
                             "--mps-image", "registry.example/gpu-handler:test"]  # fmt: skip
        self._start_handler()
        dra = ["run", *kube[world.DRA_CONTROLLER], "--namespace", world.NAMESPACE, "--no-webhook"]
        env = {"POD_NAME": f"{world.DRA_CONTROLLER}-chaos"}
        self.components[world.DRA_CONTROLLER] = world.start(
            world.DRA_CONTROLLER,
            "deckhouse_gpu.cmd.gpu_dra_controller.main",
            dra,
            logs,
            env,
            "--listen-address",
        )
        for name, component in self.components.items():
            if name != world.HANDLER:  # ready once a kubelet registered its plugin; none runs here
                component.wait_ready(120)
        self.reference = self._settled_slices()
        self.report.rss_kib = {name: (rss_kib(c), 0) for name, c in self.components.items()}
        self.report.connections = {name: (p.open_connections(), 0) for name, p in self.proxies.items()}
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLAIMS_NAMESPACE}})

    def _start_handler(self) -> None:
        logs = self.workdir / "logs"
        self.components[world.HANDLER] = world.start(
            world.HANDLER, "deckhouse_gpu.simulator.gpu_handler", self.handler_args, logs
        )

    # -- what the node should look like ------------------------------------------------------------

    def _whole_slices(self) -> list[Any] | None:
        """The node's slices (their specs, sorted) once the pool is complete and both cards are
        DriverReady; None before."""
        cards = self.cluster.request(
            "GET", f"{world.PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={self.node}"
        )
        names = {item["metadata"]["name"] for item in cards["items"]}
        if names != {world.card_name(self.node, address) for address in world.CARDS}:
            return None
        for card in cards["items"]:
            conditions = (card.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "DriverReady" and c["status"] == "True" for c in conditions):
                return None
        on_node = f"{world.RESOURCE_SLICES}?fieldSelector=spec.nodeName={self.node}"
        items = self.cluster.request("GET", on_node)["items"]
        if not items or len(items) != items[0]["spec"]["pool"]["resourceSliceCount"]:
            return None
        generations = {item["spec"]["pool"]["generation"] for item in items}
        if len(generations) != 1:
            return None
        return sorted(
            json.dumps({k: v for k, v in item["spec"].items() if k != "pool"}, sort_keys=True)
            for item in items
        )

    def _recovered(self) -> bool:
        # A new gpu-handler counts once it serves its probes (its handlers and loop are up), as a
        # DaemonSet's rolling update waits for the new pod before it goes on.
        if self.components[world.HANDLER].get("/healthz")[0] != 200:
            return False
        slices = self._whole_slices()
        if self.half_prepared is not None:
            # Whether the killed process got to record the claim decides the offers: the claim
            # step finishes the prepare and takes the slices anew.
            return slices is not None
        # The offers follow what is prepared (DESIGN.md D2 b): the slices gpu-handler published
        # for the claims prepared now, before the fault.
        return slices == self.reference

    def _settled_slices(self) -> list[Any]:
        """The node's slices once the same for two looks a second apart."""
        looks: list[list[Any] | None] = [None]

        def settled() -> bool:
            now = self._whole_slices()
            same = now is not None and now == looks[-1]
            looks.append(now)
            if not same:
                time.sleep(1.0)
            return same

        self._wait(settled, "the node's ResourceSlices settled")
        return looks[-1] or []

    def _wait(self, check: Callable[[], Any], what: str, timeout: float = RECOVERY_BOUND_SECONDS) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(ApiError, OSError):
                if answer := check():
                    return answer
            time.sleep(0.2)
        raise ChaosFailure(f"{what}: not within {timeout} s; {self.report.replay()}\n{self._tails()}")

    # -- invariants ------------------------------------------------------------------------------

    def _check_alive(self) -> None:
        for name, component in self.components.items():
            if not component.process.alive():
                raise ChaosFailure(f"{name} exited; {self.report.replay()}\n{component.process.tail(40)}")

    def check_allocations(self) -> None:
        """No device of the node allocated to two live claims; the audit agrees."""
        listed = self.cluster.request(
            "GET", f"/apis/resource.k8s.io/v1/namespaces/{CLAIMS_NAMESPACE}/resourceclaims"
        )
        seen: dict[str, str] = {}
        for claim in listed["items"]:
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                device = f"{result['pool']}/{result['device']}"
                if device in seen:
                    raise ChaosFailure(
                        f"{device} allocated to {seen[device]} and {claim['metadata']['name']}; "
                        + self.report.replay()
                    )
                seen[device] = claim["metadata"]["name"]
        text = self.components[world.DRA_CONTROLLER].get("/metrics", metrics=True)[1]
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == VIOLATIONS and sample.value:
                    raise ChaosFailure(
                        f"the audit found {sample.labels}: {sample.value}; {self.report.replay()}"
                    )

    # -- the claim stream --------------------------------------------------------------------------

    def claim_step(self) -> None:
        """One claim in (marked for the node, so gpu-dra-controller allocates it; prepared by
        gpu-handler as the kubelet asks), the oldest out (unprepared, deleted) once two are live:
        the node has two cards."""
        if self.half_prepared is not None:
            self._prepare(self.half_prepared)  # the kubelet retries what a killed handler left
            self.half_prepared = None
        else:
            self._free_a_card()
            self._prepare(self._new_claim())
        self.check_allocations()
        self.check_cdi()
        self.reference = self._settled_slices()

    def _free_a_card(self) -> None:
        if len(self.claims) < 2:
            return
        old = self.claims.pop(0)
        ref = self.prepared.pop(old)
        answers = retry_until_ok(self._plugin().unprepare, [ref], attempts=40, delay=0.5)
        if answers[ref.uid]:
            raise ChaosFailure(f"unprepare of {old}: {answers[ref.uid]}; {self.report.replay()}")
        if (self.root / "etc/cdi" / claim_spec_file(ref.uid)).exists():
            raise ChaosFailure(f"{old}'s CDI spec left after unprepare; {self.report.replay()}")
        with contextlib.suppress(ApiError):
            self.cluster.request("DELETE", f"{CLAIMS}/{old}")
        self._wait(lambda: not self._exists(f"{CLAIMS}/{old}"), f"claim {old} deleted")

    def _new_claim(self) -> ClaimRef:
        self.claim_number += 1
        name = f"c{self.claim_number}"
        created = self.cluster.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": name,
                    "namespace": CLAIMS_NAMESPACE,
                    "annotations": {"gpu.deckhouse.io/allocate-on-node": self.node},
                },
                "spec": {
                    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}
                },
            }
        )
        self.claims.append(name)
        self._wait(
            lambda: (self.cluster.request("GET", f"{CLAIMS}/{name}").get("status") or {}).get("allocation"),
            f"claim {name} allocated",
        )
        self.report.claims_allocated += 1
        return ClaimRef(CLAIMS_NAMESPACE, created["metadata"]["uid"], name)

    def _prepare(self, ref: ClaimRef) -> None:
        answers = retry_until_ok(lambda claims: self._plugin().prepare(claims), [ref], attempts=40, delay=0.5)
        if answers[ref.uid].error:
            raise ChaosFailure(f"prepare of {ref.name}: {answers[ref.uid].error}; {self.report.replay()}")
        self.prepared[ref.name] = ref

    def _plugin(self) -> PluginConnection:
        """The kubelet's connection to gpu-handler's plugin; a new process registers anew."""

        def registered() -> bool:
            self.kubelet.sync()
            return bool(self.kubelet.plugins)

        self._wait(registered, "gpu-handler's plugin registered")
        return self.kubelet.active("gpu.deckhouse.io")

    def check_cdi(self) -> None:
        """Every prepared claim has its CDI spec on the node, and no other claim has one."""
        expected = sorted(claim_spec_file(ref.uid) for ref in self.prepared.values())
        found = claim_specs(self.root)
        if found != expected:
            raise ChaosFailure(f"CDI specs {found}, prepared claims {expected}; {self.report.replay()}")

    def _kill_mid_prepare(self, record: dict[str, Any]) -> None:
        """A claim's prepare under way when gpu-handler is SIGKILLed; a new one takes over and the
        kubelet's retry (the next claim step) must finish it, with one CDI spec."""
        self._free_a_card()
        ref = self._new_claim()
        plugin = self._plugin()

        def prepare() -> None:
            with contextlib.suppress(Exception):  # the killed process's answer: whatever it was
                plugin.prepare([ref])

        calling = threading.Thread(target=prepare)
        calling.start()
        time.sleep(self.draw.uniform(0.0, 0.3))
        self.components[world.HANDLER].process.kill()
        calling.join(30)
        self.half_prepared = ref
        self._start_handler()
        record["_endedAt"] = time.monotonic()

    def _exists(self, path: str) -> bool:
        try:
            self.cluster.request("GET", path)
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    # -- faults ----------------------------------------------------------------------------------

    def run(self, faults: int, only: tuple[str, ...] = FAULT_KINDS) -> Report:
        kinds = [k for k in only if k != "apiserver-upgrade" or next_version(self.version)]
        for _ in range(faults):
            kind = self.draw.choice(kinds)
            if kind == "apiserver-upgrade" and self.upgraded:
                kind = "apiserver-restart"
            record: dict[str, Any] = {"kind": kind}
            self.report.faults.append(record)
            self._inject(kind, record)
            # The probe: a card deleted behind the components' back, which only working watches
            # (and their writes) bring back.
            self._delete_a_card()
            self._wait(self._recovered, f"recovery after {kind}")
            record["recoverySeconds"] = round(time.monotonic() - record.pop("_endedAt"), 2)
            self.claim_step()
        return self.report

    def _inject(self, kind: str, record: dict[str, Any]) -> None:
        if kind in ("apiserver-restart", "apiserver-upgrade", "etcd-compaction"):
            if kind == "etcd-compaction":
                record["compactedAt"] = self.cluster.compact_etcd()
            down = round(self.draw.uniform(1.0, 5.0), 2)
            version = next_version(self.version) if kind == "apiserver-upgrade" else None
            before = time.monotonic()
            self.cluster.restart_apiserver(version, down_seconds=down)
            after = time.monotonic()
            if version:
                self.upgraded = True
                record["to"] = version
            # Down from the kill until readyz: the window the components' requests fail in.
            record["downSeconds"] = round(after - before, 2)
            record["connectionsWhileDown"] = {
                name: proxy.connections_between(before, after) for name, proxy in self.proxies.items()
            }
            record["_endedAt"] = after
        elif kind in ("handler-rolling", "handler-kill"):
            old = self.components[world.HANDLER]
            if kind == "handler-rolling":
                code = old.stop()
                if code != 0:
                    raise ChaosFailure(
                        f"gpu-handler exited {code} on SIGTERM; {self.report.replay()}\n"
                        + old.process.tail(40)
                    )
            else:
                old.process.kill()
            self._start_handler()
            record["_endedAt"] = time.monotonic()
        elif kind == "handler-kill-mid-prepare":
            self._kill_mid_prepare(record)
        elif kind == "apf-squeeze":
            self._squeeze(record)
        elif kind in NET_FAULTS:
            NET_FAULTS[kind](self, record)
        else:
            raise ValueError(kind)

    def _delete_a_card(self) -> None:
        address = self.draw.choice(world.CARDS)
        with contextlib.suppress(ApiError):
            self.cluster.request("DELETE", f"{world.PHYSICAL_GPUS}/{world.card_name(self.node, address)}")

    def _squeeze(self, record: dict[str, Any]) -> None:
        """API Priority and Fairness puts the module's ServiceAccounts into a priority level with
        no seats of its own and none to borrow: every request of theirs is answered 429 (with
        Retry-After) for a few seconds; then the FlowSchema goes."""
        level = {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": SQUEEZE},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        }
        everything: dict[str, Any] = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
        everything |= {"namespaces": ["*"], "clusterScope": True}
        schema = {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": SQUEEZE},
            "spec": {
                "priorityLevelConfiguration": {"name": SQUEEZE},
                "matchingPrecedence": 10,  # before every suggested schema but exempt and probes
                "rules": [
                    {
                        "subjects": [
                            {
                                "kind": "ServiceAccount",
                                "serviceAccount": {"namespace": world.NAMESPACE, "name": "*"},
                            }
                        ],
                        "resourceRules": [everything],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }
                ],
            },
        }
        rejected_before = self._rejected()
        self.cluster.apply(level)
        self.cluster.apply(schema)
        squeezed = time.monotonic()
        # Idle components send nothing (they sit on their watches): a change makes them write.
        time.sleep(1.0)  # the API server's flow-control configuration catches up with the objects
        self._delete_a_card()
        time.sleep(self.draw.uniform(3.0, 9.0))
        self.cluster.request("DELETE", f"{FLOW_CONTROL}/flowschemas/{SQUEEZE}")
        lifted = time.monotonic()
        record["throttledSeconds"] = round(lifted - squeezed, 2)
        record["rejected"] = self._rejected() - rejected_before
        if record["rejected"] == 0:
            raise ChaosFailure(f"no request of the module was rejected; {self.report.replay()}")
        record["_endedAt"] = lifted

    def _rejected(self) -> int:
        """Requests kube-apiserver rejected in the squeeze's priority level, from its metrics."""
        text = self.cluster.request("GET", "/metrics", raw=True)
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if (
                    sample.name == "apiserver_flowcontrol_rejected_requests_total"
                    and sample.labels.get("priority_level") == SQUEEZE
                ):
                    total += sample.value
        return int(total)

    # -- the end ----------------------------------------------------------------------------------

    def stop(self) -> None:
        for name, component in self.components.items():
            if component.process.alive():
                first = self.report.rss_kib.get(name, (0, 0))[0]
                self.report.rss_kib[name] = (first, rss_kib(component))
        for name, proxy in self.proxies.items():
            first = self.report.connections.get(name, (0, 0))[0]
            self.report.connections[name] = (first, proxy.open_connections())
        for name in (world.DRA_CONTROLLER, world.HANDLER, world.CONTROLLER, world.NODE_AGENT):
            if name in self.components:
                self.report.stop_exit[name] = self.components[name].stop()
        for proxy in self.proxies.values():
            proxy.close()
        if hasattr(self, "tokens"):
            self.tokens.stop()
        if hasattr(self, "kubelet"):
            self.kubelet.close()
        self.cluster.stop()

    def _tails(self) -> str:
        return "\n".join(f"--- {n}\n{c.process.tail(30)}" for n, c in self.components.items())


def rss_kib(component: world.Component) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{component.process.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def chaos(
    version: str,
    seed: int,
    faults: int,
    workdir: Path,
    watch_cache: bool = True,
    only: tuple[str, ...] = FAULT_KINDS,
) -> Report:
    run = ChaosRun(version, seed, workdir, watch_cache)
    try:
        run.start()
        run.run(faults, only)
    finally:
        with contextlib.suppress(Exception):
            run.stop()
        shutil.rmtree(workdir / "h", ignore_errors=True)
    return run.report
