# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-mps-daemon: the process of an MPS daemon Pod that gpu-handler creates (domain/prepare/mps_pod.py).

gpu-mps-daemon run      # becomes nvidia-cuda-mps-control -f from the driver root
gpu-mps-daemon ready    # the readiness probe: exit 0 once the daemon answers
gpu-mps-daemon quit     # the preStop hook: the daemon stops its server and exits

A console script of its own, not a gpu-handler command: the probe runs every few seconds inside
the daemon's container, whose memory limit the MPS server shares, so it imports only the driver
root lookup, never the Kubernetes client or gRPC the handler loads.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.nvml.mps_launcher import LaunchError, answers, exec_daemon, find_binaries, send

PROG = "gpu-mps-daemon"
DEFAULT_DRIVER_MOUNT = "/driver-root"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--driver-root-mount",
        default=os.environ.get("NVIDIA_DRIVER_ROOT_MOUNT", DEFAULT_DRIVER_MOUNT),
        help="where the driver root is mounted (env NVIDIA_DRIVER_ROOT_MOUNT)",
    )
    parser.add_argument("command", choices=("run", "ready", "quit"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = parse_args(argv)
    env = dict(os.environ if environ is None else environ)
    try:
        binaries = find_binaries(MountedDriverRoot(args.driver_root_mount))
        if args.command == "run":
            print(
                f"{PROG}: starting {binaries.control} -f (server {binaries.server}; preloading "
                f"{', '.join(map(str, binaries.libraries))})",
                file=sys.stderr,
                flush=True,
            )
            exec_daemon(binaries, env)
        if args.command == "quit":
            send(binaries, env, "quit")
            return 0
        output = send(binaries, env, "get_default_active_thread_percentage")
    except LaunchError as error:
        print(f"{PROG} {args.command}: {error}", file=sys.stderr)
        return 1
    if not answers(output):
        print(f"{PROG} ready: the control daemon did not answer: {output or 'no output'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
