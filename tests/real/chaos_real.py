# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Faults of a real control plane under the module's four components (``make chaos-real``).

A cluster of its own (etcd, kube-apiserver, kube-controller-manager and kube-scheduler of one
version; the shared clusters of the real tier are never restarted), the chart's CRDs and RBAC, a
real kubelet of that version on Kubernetes' fake container runtime with a simulated host of two
A30s (tests/real/chaos_node.py), and the four components as processes on their own
ServiceAccount tokens, each through a TCP proxy of its own (testkit/tcp_proxy.py) that counts the
connections it opens.

Then, drawn from a seed, one fault after another:

- ``apiserver-restart``: kube-apiserver SIGKILLed, down for 1-5 s, started again;
- ``apiserver-upgrade``: the same, coming back as the next minor version's binary (once);
- ``etcd-compaction``: etcd compacted at its head, then kube-apiserver restarted, so every
  watch resumes from a compacted revision and is told 410 Gone;
- ``handler-rolling``: gpu-handler stopped with SIGTERM (it must exit 0) and a new one started;
- ``handler-kill``: gpu-handler SIGKILLed and a new one started;
- ``handler-kill-mid-prepare``: gpu-handler SIGKILLed while the real kubelet's
  NodePrepareResources of a new Pod's claim runs; the kubelet's retry to the new process must
  finish it and the Pod run;
- ``apf-squeeze``: a FlowSchema puts the module's ServiceAccounts into a PriorityLevelConfiguration
  with no seats: every request of theirs is answered 429 for 4-10 s;
- ``watch-silent``, ``token-rotation``, ``node-recreate``: tests/real/chaos_net_faults.py. The
  components' tokens are files with the shortest expiry, renewed as the kubelet renews them.

Before each fault a step of the Pod stream (tests/real/chaos_stream.py) starts a Pod with a claim
of a kind drawn from the seed (a whole card or a MIG instance from a claim template, a VFIO card,
an MPS or a time-sliced share) and deletes the oldest once two run, and nothing waits: the
scheduler, the kubelet and gpu-handler work on them while the fault happens. After each fault a
probe change needs every watch working again: one of the node's PhysicalGPUs is deleted, and the
fault's recovery time runs from the fault's end until the node is whole again: both cards back and
DriverReady, the step done (the new Pod Running per the kubelet, the old one gone and unprepared),
gpu-handler serving, and the node's ResourceSlices those of the idle node less the offers that
conflict with each card's prepared mode. Checked then: the handler's checkpoint, the CDI specs,
the simulated cards' MIG instances, the vfio-pci bindings and the MPS daemons match the running
Pods' claims exactly (nothing left after unprepare); no exclusive device allocated twice, no card
whole and in parts, no share over 100 %, the allocation audit's violations zero. Checked all
along: every component, kube-scheduler, kube-controller-manager, etcd and the kubelet alive (none
is ever restarted but by a fault: an exit is a crash); at the end every component stops with exit
0 on SIGTERM. A failure names the seed, the faults so far and the Pod stream's steps.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from testkit.real_cluster import (
    VERSIONS,
    ApiError,
    AssetsMissing,
    RealCluster,
    assets_required,
    binaries,
    kubeconfig_text,
)
from testkit.rotating_tokens import RotatingTokens
from testkit.tcp_proxy import TcpProxy
from tests.real import component_world as world
from tests.real.chaos_net_faults import FAULTS as NET_FAULTS
from tests.real.chaos_node import ChaosGpuNode
from tests.real.chaos_stream import MIG_CLASS, SHARING_LABEL, WHOLE_CLASS, PodStream, Workload
from tests.real.handler_world import REPO, vfio_class

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
    steps: list[str] = field(default_factory=list)  # the Pod stream's, in order

    def figures(self) -> dict[str, Any]:
        kinds: dict[str, Any] = {}
        for kind in sorted({f["kind"] for f in self.faults}):
            times = sorted(f["recoverySeconds"] for f in self.faults if f["kind"] == kind)
            whole = sorted(f["nodeWholeSeconds"] for f in self.faults if f["kind"] == kind)
            kinds[kind] = {
                "count": len(times),
                "recoveryP50": round(statistics.median(times), 2),
                "recoveryP99": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
                "nodeWholeP50": round(statistics.median(whole), 2),
                "nodeWholeP99": round(whole[min(len(whole) - 1, int(len(whole) * 0.99))], 2),
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
            "podsStarted": sum(1 for step in self.steps if step.startswith("+")),
            "podStream": self.steps,
            "rssKiB": self.rss_kib,
            "openConnections": self.connections,
            "stopExit": self.stop_exit,
        }

    def replay(self) -> str:
        sequence = ", ".join(f["kind"] for f in self.faults)
        stream = " ".join(self.steps)
        return f"seed {self.seed} on {self.version}; faults so far: [{sequence}]; Pod stream: [{stream}]"


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
    def __init__(
        self, version: str, seed: int, workdir: Path, watch_cache: bool = True, sharing_first: bool = False
    ) -> None:
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
        self.idle: dict[bool, dict[str, Any]] = {}  # the idle node's offers, by its sharing label
        self.upgraded = False
        self.sharing_first = sharing_first
        self.settled_at: float | None = None  # when the stream's step settled after the fault
        self.whole_at: float | None = None  # when the node's cards and pool were whole again
        self.late_offers: dict[str, Any] | None = None

    # -- set-up ----------------------------------------------------------------------------------

    def start(self) -> None:
        cluster = self.cluster.start()
        cluster.start_controller_manager("*,-nodelifecycle")
        cluster.start_scheduler()
        world.install_access(cluster)
        # The real kubelet registers the Node, before the tokens bound to Pods on it.
        self.gpu_node = ChaosGpuNode(cluster, self.node).start()
        self.stream = PodStream(self.gpu_node, self.draw, self._failure)
        self.report.steps = self.stream.steps
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
        for device_class in device_classes():
            cluster.apply(device_class)
        self.stream.install()
        if self.sharing_first:  # before gpu-handler: its first offers are the shared cards
            self.stream.sharing = True
            self.stream.steps.append("sharing")
            self.gpu_node.label(SHARING_LABEL, "true")
        kube = {name: ["--kubeconfig", str(path)] for name, path in self.kubeconfigs.items()}
        root = str(self.gpu_node.host_root)
        agent = ["--node-name", self.node, "--host-root", root, *kube[world.NODE_AGENT]]
        self.components[world.NODE_AGENT] = world.start(
            world.NODE_AGENT, "deckhouse_gpu.cmd.gpu_node_agent", agent, logs
        )
        controller = [*kube[world.CONTROLLER], "--namespace", world.NAMESPACE]
        env = {"POD_NAME": f"{world.CONTROLLER}-chaos"}
        self.components[world.CONTROLLER] = world.start(
            world.CONTROLLER, "deckhouse_gpu.cmd.gpu_controller", controller, logs, env, "--listen-address"
        )
        self.handler_args = ["run", *kube[world.HANDLER], *self.gpu_node.handler_args()]
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
        for component in self.components.values():
            component.wait_ready(120)  # gpu-handler: once the real kubelet registered its plugin
        self.idle[self.stream.sharing] = self._settled_offers()
        self.report.rss_kib = {name: (rss_kib(c), 0) for name, c in self.components.items()}
        self.report.connections = {name: (p.open_connections(), 0) for name, p in self.proxies.items()}

    def _start_handler(self) -> None:
        logs = self.workdir / "logs"
        self.components[world.HANDLER] = world.start(
            world.HANDLER, "deckhouse_gpu.simulator.gpu_handler", self.handler_args, logs
        )

    # -- what the node should look like ------------------------------------------------------------

    def _offers(self) -> dict[str, Any] | None:
        """The node's offers (``{"devices": {name: spec}, "counters": {name: spec}}``) once the pool
        is complete and both cards are DriverReady (but a card a VFIO claim holds); None before."""
        cards = self.cluster.request(
            "GET", f"{world.PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={self.node}"
        )
        names = {item["metadata"]["name"] for item in cards["items"]}
        if names != {world.card_name(self.node, address) for address in world.CARDS}:
            return None
        vfio = {world.card_name(self.node, address) for address in self.stream.vfio_cards()}
        undescribed = []
        for card in cards["items"]:
            status = card.get("status") or {}
            if "pciInfo" not in status:  # created, its status not written yet: not back
                return None
            if card["metadata"]["name"] in vfio:  # passed to a VM: not DriverReady once seen on vfio-pci
                # No uevent reaches gpu-node-agent's process from the simulated kernel here: it sees
                # the new driver at its next pass, which a later change or its resync brings.
                if not ((status.get("capabilities") or {}).get("nvidia") or {}).get("mig"):
                    # Made anew while on vfio-pci (the probe deleted it): nobody can read its MIG
                    # capabilities until it is back on nvidia, so no counters describe it.
                    undescribed.append(str(status["pciInfo"]["address"]))
                continue
            conditions = status.get("conditions") or []
            if not any(c["type"] == "DriverReady" and c["status"] == "True" for c in conditions):
                return None
        on_node = f"{world.RESOURCE_SLICES}?fieldSelector=spec.nodeName={self.node}"
        items = self.cluster.request("GET", on_node)["items"]
        if not items or len(items) != items[0]["spec"]["pool"]["resourceSliceCount"]:
            return None
        generations = {item["spec"]["pool"]["generation"] for item in items}
        if len(generations) != 1:
            return None
        devices = {d["name"]: d for item in items for d in item["spec"].get("devices") or []}
        counters = {c["name"]: c for item in items for c in item["spec"].get("sharedCounters") or []}
        return {"devices": devices, "counters": counters, "undescribed": sorted(undescribed)}

    def _recovered(self) -> bool:
        # A new gpu-handler counts once it serves its probes (its handlers and loop are up), as a
        # DaemonSet's rolling update waits for the new pod before it goes on.
        if self.components[world.HANDLER].get("/healthz")[0] != 200:
            return False
        if self.whole_at is None and self._offers() is not None:
            self.whole_at = time.monotonic()  # the deleted card back, DriverReady, the pool whole
        # The stream's step begun before the fault done (the new Pod Running, the old one gone and
        # unprepared), and the offers those of the idle node less what conflicts with the cards'
        # prepared modes (DESIGN.md D2 b).
        if not self.stream.settled():
            return False
        self.settled_at = self.settled_at or time.monotonic()
        offers = self._offers()
        matched = offers is not None and self.stream.offers_match(offers, self.idle[self.stream.sharing])
        if offers is not None and not matched and self.late_offers is None:
            # What the offers lacked once the Pods had settled: the report says what a slow
            # recovery waited for.
            idle = self.idle[self.stream.sharing]
            self.late_offers = {
                "modes": self.stream.modes(),
                "devices": sorted(offers["devices"]),
                "counters": sorted(offers["counters"]),
                "idleCounters": sorted(idle["counters"]),
                "undescribed": offers["undescribed"],
                "vfioConsumes": {
                    n: d.get("consumesCounters") for n, d in offers["devices"].items() if "-mig-" not in n
                },
            }
        return matched

    def late_offers_seen(self) -> dict[str, Any] | None:
        """What the offers lacked once the step's Pods had settled after the last fault; None when
        they were right at once."""
        return self.late_offers

    def _settled_offers(self) -> dict[str, Any]:
        """The node's offers once the same for two looks a second apart."""
        looks: list[dict[str, Any] | None] = [None]

        def settled() -> bool:
            now = self._offers()
            same = now is not None and now == looks[-1]
            looks.append(now)
            if not same:
                time.sleep(1.0)
            return same

        self._wait(settled, "the node's ResourceSlices settled")
        return looks[-1] or {}

    def _wait(self, check: Callable[[], Any], what: str, timeout: float = RECOVERY_BOUND_SECONDS) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(ApiError, OSError):
                if answer := check():
                    return answer
            time.sleep(0.2)
        late = (
            f"\nthe offers once the Pods had settled: {json.dumps(self.late_offers)}"
            if self.late_offers
            else ""
        )
        raise ChaosFailure(f"{what}: not within {timeout} s; {self.report.replay()}{late}\n{self._tails()}")

    def _failure(self, message: str) -> ChaosFailure:
        return ChaosFailure(f"{message}; {self.report.replay()}\n{self._tails()}")

    # -- invariants ------------------------------------------------------------------------------

    def _check_alive(self) -> None:
        for name, component in self.components.items():
            if not component.process.alive():
                raise ChaosFailure(f"{name} exited; {self.report.replay()}\n{component.process.tail(40)}")
        # The servers and the kubelet are restarted by nobody but a fault: one that exited crashed.
        for name, process in self.cluster.processes.items():
            if not process.alive() and name != "kube-apiserver":
                raise ChaosFailure(f"{name} exited; {self.report.replay()}\n{process.tail(40)}")
        if not self.gpu_node.kubelet.alive():
            raise self._failure(f"the kubelet exited\n{self.gpu_node.failure_context()}")

    def check_allocations(self) -> None:
        """The stream's checks of the claims, and the allocation audit's violations zero."""
        self.stream.check_allocations()
        text = self.components[world.DRA_CONTROLLER].get("/metrics", metrics=True)[1]
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == VIOLATIONS and sample.value:
                    raise ChaosFailure(
                        f"the audit found {sample.labels}: {sample.value}; {self.report.replay()}"
                    )

    # -- the Pod stream (tests/real/chaos_stream.py) -------------------------------------------------

    def stream_step(self) -> Workload:
        """A Pod of a kind drawn from the seed started and, once two run, the oldest deleted;
        nothing waited for: the fault comes while the kubelet and gpu-handler work on them. A kind
        of the other sharing mode first drains the node and flips its label."""
        kind = self.stream.draw_kind()
        if self.stream.needs_flip(kind):
            self.stream.flip(self._wait)
            sharing = self.stream.sharing

            def flipped() -> bool:
                offers = self._offers()
                mig = offers is not None and any("-mig-" in name for name in offers["devices"])
                return offers is not None and mig != sharing

            self._wait(flipped, "the offers after the sharing label flipped")
            settled = self._settled_offers()
            self.idle.setdefault(sharing, settled)
            if settled != self.idle[sharing]:
                raise self._failure(f"the idle node's offers changed: {settled} after {self.idle[sharing]}")
        return self.stream.begin(kind)

    def _kill_mid_prepare(self, record: dict[str, Any]) -> None:
        """gpu-handler SIGKILLed while the real kubelet's NodePrepareResources of a new Pod's claim
        runs: the moment its checkpoint entry shows ``PrepareStarted`` (written before the host is
        touched, DESIGN.md D9); a new one takes over and the kubelet's retry must finish the Pod's
        prepare. A prepare faster than the look (every few milliseconds) is killed just after;
        ``stateAtKill`` says which it was."""
        before = set(self.gpu_node.checkpoint())
        self.stream_step()
        deadline = time.monotonic() + RECOVERY_BOUND_SECONDS
        state = None
        while state is None:
            if time.monotonic() > deadline:
                raise self._failure("the kubelet's prepare of the new Pod's claim: not seen")
            with contextlib.suppress(OSError, ValueError):  # a checkpoint being replaced
                new = [entry for uid, entry in self.gpu_node.checkpoint().items() if uid not in before]
                state = str(new[0].get("state")) if new else None
            time.sleep(0.003)
        self.components[world.HANDLER].process.kill()
        record["stateAtKill"] = state
        self._start_handler()
        record["_endedAt"] = time.monotonic()

    # -- faults ----------------------------------------------------------------------------------

    def run(self, faults: int, only: tuple[str, ...] = FAULT_KINDS) -> Report:
        kinds = [k for k in only if k != "apiserver-upgrade" or next_version(self.version)]
        for _ in range(faults):
            kind = self.draw.choice(kinds)
            if kind == "apiserver-upgrade" and self.upgraded:
                kind = "apiserver-restart"
            record: dict[str, Any] = {"kind": kind}
            self.report.faults.append(record)
            if kind != "handler-kill-mid-prepare":  # it starts its own Pod
                self.stream_step()  # Pods come and go while the fault happens
            self._inject(kind, record)
            # The probe: a card deleted behind the components' back, which only working watches
            # (and their writes) bring back.
            self._delete_a_card()
            self.settled_at = self.whole_at = self.late_offers = None
            self._wait(self._recovered, f"recovery after {kind}")
            ended = record.pop("_endedAt")
            record["recoverySeconds"] = round(time.monotonic() - ended, 2)
            # The part the scheduler, the kubelet and the prepares took: the step's Pods settled.
            record["podsSettledSeconds"] = round(max(0.0, (self.settled_at or ended) - ended), 2)
            # The components' part: the card the probe deleted written back, DriverReady, the pool whole.
            record["nodeWholeSeconds"] = round(max(0.0, (self.whole_at or ended) - ended), 2)
            record["lateOffers"] = self.late_offers_seen()
            self.stream.check()
            self.check_allocations()
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
        if hasattr(self, "gpu_node"):
            self.gpu_node.stop()
        self.cluster.stop()

    def _tails(self) -> str:
        tails = "\n".join(f"--- {n}\n{c.process.tail(30)}" for n, c in self.components.items())
        if hasattr(self, "gpu_node"):
            kubelet = [
                line for line in self.gpu_node.kubelet.log_text().splitlines()[-400:] if "dra" in line.lower()
            ]
            tails += "\n--- kubelet (DRA lines)\n" + "\n".join(kubelet[-40:])
        if hasattr(self, "stream"):
            with contextlib.suppress(ApiError, OSError):
                tails += "\n--- the stream's Pods\n" + self.stream.describe()
        return tails


def device_classes() -> list[dict[str, Any]]:
    """The chart's examples the stream's claims use (whole A30s, MIG 1g.6gb) and docs/VFIO.md's."""
    examples = yaml.safe_load_all((REPO / "docs/examples/deviceclasses.yaml").read_text())
    used = [doc for doc in examples if doc and doc["metadata"]["name"] in (WHOLE_CLASS, MIG_CLASS)]
    return [*used, vfio_class()]


def rss_kib(component: world.Component) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{component.process.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def require_assets(version: str) -> None:
    """The binaries a chaos run starts, and root for its kubelet: missing, the test fails under
    KUBE_ASSETS_REQUIRED (CI) and is skipped elsewhere."""
    try:
        binaries(version, "kube-apiserver", "etcd", "etcdctl", "kube-controller-manager", "kube-scheduler")
        binaries(version, "kubelet", "lab-fakecri")
        if os.geteuid() != 0:
            raise AssetsMissing("a kubelet must run as root")
    except AssetsMissing as missing:
        if assets_required():
            pytest.fail(str(missing))
        pytest.skip(str(missing))


def chaos(
    version: str,
    seed: int,
    faults: int,
    workdir: Path,
    watch_cache: bool = True,
    sharing_first: bool = False,
    only: tuple[str, ...] = FAULT_KINDS,
) -> Report:
    run = ChaosRun(version, seed, workdir, watch_cache, sharing_first)
    try:
        run.start()
        run.run(faults, only)
    finally:
        with contextlib.suppress(Exception):
            run.stop()
    return run.report
