# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""SIGTERM at random moments to the module's long-running components, many times over.

``python -m testkit.signal_storm --component gpu-handler --trials 1000 --seed 7`` imports the
component once, then for each trial forks a child that runs the component's real ``main`` (its
threads, watches, servers and kubelet plugin), waits until the child catches SIGTERM (its
``/proc`` signal mask), sends SIGTERM after a seeded random delay and measures how long the child
takes to exit. The child leaves through the interpreter's ordinary shutdown (``sys.exit``), which
waits for every non-daemon thread, as a pod's process does.

The API server the children talk to takes turns between three shapes of "away" and one of load:
``refused`` (nothing listens), ``blackhole`` (a socket that listens and never answers, so every
request hangs until the client's timeout), ``flapping`` (a fake API server answering every
request with 503 and a Retry-After) and ``churn`` (a fake API server that changes the node's
objects every few milliseconds: the watch threads feed the work loop's queue while SIGTERM
arrives, the moment the old handler deadlocked in).

A child still alive after ``--bound`` seconds is a hang: its threads' stacks are dumped
(faulthandler on SIGUSR1) into its log, it is killed, and the report says so. One JSON object per
trial on stdout, then a summary; the exit status is 1 if any trial did not exit cleanly.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import logging
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.kubeconfig import write_kubeconfig

NODE = "w1"
CARDS = ("0000:17:00.0", "0000:31:00.0")
MODES = ("churn", "refused", "blackhole", "flapping")
COMPONENTS = ("gpu-node-agent", "gpu-handler", "gpu-controller", "gpu-dra-controller")
CLEAN_LAST_LINE = "stopped"


@dataclass(frozen=True)
class Target:
    module: str
    argv: Callable[[str, Path], list[str]]  # (kubeconfig, host root) -> argv of main


def _agent_argv(kubeconfig: str, root: Path) -> list[str]:
    return ["--node-name", NODE, "--host-root", str(root), "--kubeconfig", kubeconfig,
            "--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]  # fmt: skip


def _handler_argv(kubeconfig: str, root: Path) -> list[str]:
    return ["run", "--node-name", NODE, "--kubeconfig", kubeconfig, "--nvml-sim", "a30,a30",
            "--host-root", str(root), "--cdi-root", "/etc/cdi", "--mps-image", "registry.example/gpu:test",
            "--heartbeat-seconds", "5",
            "--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]  # fmt: skip


def _controller_argv(kubeconfig: str, _root: Path) -> list[str]:
    return ["--kubeconfig", kubeconfig, "--namespace", "d8-gpu",
            "--listen-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]  # fmt: skip


def _dra_controller_argv(kubeconfig: str, _root: Path) -> list[str]:
    return ["run", "--kubeconfig", kubeconfig, "--namespace", "d8-gpu", "--no-webhook",
            "--listen-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]  # fmt: skip


TARGETS = {
    "gpu-node-agent": Target("deckhouse_gpu.cmd.gpu_node_agent", _agent_argv),
    "gpu-handler": Target("deckhouse_gpu.simulator.gpu_handler", _handler_argv),  # simulated cards
    "gpu-controller": Target("deckhouse_gpu.cmd.gpu_controller", _controller_argv),
    "gpu-dra-controller": Target("deckhouse_gpu.cmd.gpu_dra_controller.main", _dra_controller_argv),
}


# ---------------------------------------------------------------------------------------------
# The API servers the children meet


def serve_fake(mode: str) -> None:
    """Runs in a process of its own (the storm forks, so it keeps no threads): a fake API server
    holding the node and its cards, printing its URL, until it is terminated."""
    from deckhouse_gpu.ports.controller_resources import LEASES  # noqa: PLC0415
    from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_SLICES  # noqa: PLC0415
    from testkit.fake_apiserver import FakeApiServer  # noqa: PLC0415
    from testkit.gpu_objects import ready_card  # noqa: PLC0415

    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, PODS, LEASES)
    with FakeApiServer(resources=resources) as fake:
        fake.kube.create(NODES, {"metadata": {"name": NODE}})
        for address in CARDS:
            fake.kube.create(PHYSICAL_GPUS, ready_card(NODE, address, "a30"))
        if mode == "flapping":
            fake.fail_next(503, "ServiceUnavailable", times=200_000)  # more than a storm sends
        print(fake.url, flush=True)
        names = [item["metadata"]["name"] for item in fake.kube.list(PHYSICAL_GPUS).items]
        beat = 0
        while True:  # until the storm terminates it
            time.sleep(0.005 if mode == "churn" else 1.0)
            if mode != "churn":
                continue
            beat += 1  # an annotation only: every watcher gets an event, nothing really changes
            patch = {"metadata": {"annotations": {"storm.test/beat": str(beat)}}}
            fake.kube.patch(PHYSICAL_GPUS, names[beat % len(names)], patch)
            if beat % 5 == 0:
                fake.kube.patch(NODES, NODE, patch)


class Servers:
    """One kubeconfig per mode; the fake servers as child processes."""

    def __init__(self, workdir: Path) -> None:
        self._fakes: list[subprocess.Popen[str]] = []
        # A listening socket nobody accepts on: connections complete (up to the backlog), then
        # every request waits for an answer that never comes; past the backlog, connects hang.
        self._blackhole = socket.socket()
        self._blackhole.bind(("127.0.0.1", 0))
        self._blackhole.listen(8)
        refused = socket.socket()
        refused.bind(("127.0.0.1", 0))  # bound, never listening: its port refuses
        self._refused = refused
        urls = {
            "refused": f"http://127.0.0.1:{refused.getsockname()[1]}",
            "blackhole": f"http://127.0.0.1:{self._blackhole.getsockname()[1]}",
        }
        for mode in ("churn", "flapping"):
            fake = subprocess.Popen(
                [sys.executable, "-m", "testkit.signal_storm", "--serve-fake", mode],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert fake.stdout is not None
            urls[mode] = fake.stdout.readline().strip()
            if not urls[mode].startswith("http"):
                raise RuntimeError(f"the {mode} fake API server did not start")
            self._fakes.append(fake)
        self.kubeconfigs: dict[str, str] = {}
        for mode, url in urls.items():
            directory = workdir / f"api-{mode}"
            directory.mkdir(parents=True, exist_ok=True)
            self.kubeconfigs[mode] = write_kubeconfig(directory, url)

    def close(self) -> None:
        for fake in self._fakes:
            fake.terminate()  # its watch streams to killed children need no goodbye
            fake.wait(10)
        self._blackhole.close()
        self._refused.close()


# ---------------------------------------------------------------------------------------------
# The trials


def catches_sigterm(pid: int) -> bool:
    """The child has installed its SIGTERM handler (Linux: SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def _child(target: Target, argv: list[str], log: Path) -> None:
    """In the forked child: the component's main, its output to ``log``, then what the
    interpreter's exit does (``os._exit`` after it, so that none of the storm's own frames
    unwind in the child)."""
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    code = 70
    try:
        code = importlib.import_module(target.module).main(argv)
        # The interpreter waits for every non-daemon thread before it exits: so does this.
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
    except BaseException:  # whatever main raised is the trial's failure
        traceback.print_exc()
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait_exit(pid: int, deadline: float) -> int | None:
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)
    return None


def trial(
    target: Target, kubeconfig: str, root: Path, log: Path, delay: float, bound: float
) -> dict[str, Any]:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns from _child
        _child(target, target.argv(kubeconfig, root), log)
    started = time.monotonic()
    while not (caught := catches_sigterm(pid)) and time.monotonic() - started < bound:
        early = _wait_exit(pid, time.monotonic() + 0.005)
        if early is not None:
            why = "exited before SIGTERM"
            return {"delay": 0.0, "exit": early, "seconds": 0.0, "clean": False, "why": why, "caught": False}
    if caught:
        time.sleep(delay)
    os.kill(pid, signal.SIGTERM)
    sent = time.monotonic()
    code = _wait_exit(pid, sent + bound)
    seconds = time.monotonic() - sent
    if code is None:
        os.kill(pid, signal.SIGUSR1)  # the stacks of the hung threads, into its log
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        hung = {"delay": delay, "exit": None, "seconds": seconds, "clean": False, "why": "hung"}
        return hung | {"caught": caught}
    last = _last_message(log)
    # Still starting after ``bound`` (its first API calls wait for their timeouts): without a
    # handler yet, SIGTERM's default action ends it at once, which is a prompt exit too.
    clean = code == 0 and last == CLEAN_LAST_LINE if caught else code == -signal.SIGTERM
    why = "" if clean else f"exit {code}, last log line {last!r}"
    result = {"delay": delay, "exit": code, "seconds": seconds, "clean": clean, "why": why}
    return result | {"caught": caught}


def _last_message(log: Path) -> str | None:
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                return str(json.loads(line).get("msg"))
            except json.JSONDecodeError:
                return None
    return None


def _simulated_host(root: Path) -> None:
    from deckhouse_gpu.simulator.host.host_builder import HostBuilder  # noqa: PLC0415

    host = HostBuilder(root).standard_node().install_nvidia_driver("6d7f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
    for address in CARDS:
        host.add_gpu("a30", address)


def storm(component: str, trials: int, seed: int, workdir: Path, max_delay: float, bound: float) -> int:
    target = TARGETS[component]
    importlib.import_module(target.module)  # once: every child starts from it
    root = workdir / "host"
    if not root.exists():
        _simulated_host(root)
    os.environ.setdefault("POD_NAME", f"{component}-storm")
    os.environ.setdefault("LOG_LEVEL", "info")
    os.environ.pop("KUBERNETES_SERVICE_HOST", None)
    servers = Servers(workdir)
    draw = random.Random(seed)  # noqa: S311 - a replayable draw, not a secret
    results: list[dict[str, Any]] = []
    try:
        for number in range(trials):
            mode = MODES[number % len(MODES)]
            delay = draw.uniform(0.0, max_delay)
            log = workdir / f"{component}-{number}.log"
            result = trial(target, servers.kubeconfigs[mode], root, log, delay, bound)
            result |= {"component": component, "trial": number, "mode": mode, "seed": seed}
            if result["clean"]:
                log.unlink()
            else:
                result["log"] = str(log)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        servers.close()
    exits = sorted(r["seconds"] for r in results if r["exit"] is not None)
    summary = {
        "component": component,
        "seed": seed,
        "trials": len(results),
        "clean": sum(r["clean"] for r in results),
        "hung": sum(r["exit"] is None for r in results),
        "caught": sum(bool(r.get("caught")) for r in results),
        "exitSecondsP50": statistics.median(exits) if exits else None,
        "exitSecondsP99": exits[min(len(exits) - 1, int(len(exits) * 0.99))] if exits else None,
        "exitSecondsMax": exits[-1] if exits else None,
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if summary["clean"] == trials else 1


def loop_rounds(rounds: int) -> None:
    """The child of the rounds test: the real ``TriggerLoop`` on the main thread, fed without
    pause by a thread (the watch's part), stopped by SIGTERM; after each stop it says
    ``stopped N`` on stdout and runs again. The parent sends the next SIGTERM only after that
    line, so every signal lands while the loop works its queue."""
    from deckhouse_gpu.cmd.process import stop_on_signals  # noqa: PLC0415
    from deckhouse_gpu.ports.clock import SystemClock  # noqa: PLC0415
    from deckhouse_gpu.services.runtime.health import HealthState  # noqa: PLC0415
    from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop  # noqa: PLC0415

    timing = LoopTiming(debounce_seconds=0.0005)
    loop = TriggerLoop(lambda _: PassOutcome(ok=True, next_delay=0.001), HealthState(), SystemClock(), timing)
    stop = threading.Event()
    stop_on_signals(stop, loop.wake)

    def feed() -> None:
        while True:
            loop.notify(Trigger("watch"))
            time.sleep(0)

    threading.Thread(target=feed, daemon=True).start()
    print("ready", flush=True)
    for number in range(1, rounds + 1):
        loop.run(stop)
        stop.clear()
        print(f"stopped {number}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="signal_storm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--component", choices=COMPONENTS)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--max-delay", type=float, default=1.5, help="SIGTERM within this many seconds")
    parser.add_argument("--bound", type=float, default=10.0, help="seconds after which a child hangs")
    parser.add_argument("--serve-fake", choices=("churn", "flapping"), help=argparse.SUPPRESS)
    parser.add_argument("--loop-rounds", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.loop_rounds:
        loop_rounds(args.loop_rounds)
        return 0
    if args.serve_fake:
        serve_fake(args.serve_fake)
        return 0
    if args.component is None or args.workdir is None:
        parser.error("--component and --workdir are needed")
    args.workdir.mkdir(parents=True, exist_ok=True)
    return storm(args.component, args.trials, args.seed, args.workdir, args.max_delay, args.bound)


if __name__ == "__main__":
    sys.exit(main())
