# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller: the module's allocator, its opaque-config webhook and the allocation audit.

gpu-dra-controller run [--kubeconfig FILE] [--no-webhook] [--no-leader-elect]   # in the cluster
gpu-dra-controller allocate --slices S.yaml --classes C.yaml --claims CL.yaml [--allocated A.yaml]
                            [--node NAME] [--k8s-version 1.34..1.37] [--strict]  # a dry run, no API
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

import yaml

from deckhouse_gpu.adapters.files.manifest_files import ManifestError, load_objects
from deckhouse_gpu.cmd import k8s_version
from deckhouse_gpu.cmd.gpu_dra_controller.run import add_run_arguments, run_in_cluster
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.services.allocation.allocation_preview import preview

COMPONENT = "gpu-dra-controller"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=COMPONENT, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="allocate what the scheduler never will, audit, serve the webhook")
    add_run_arguments(run)
    allocate = commands.add_parser(
        "allocate", help="allocate claims from files, as the scheduler would; no API"
    )
    allocate.add_argument(
        "--slices", required=True, help="ResourceSlices (YAML, several documents or a List)"
    )
    allocate.add_argument("--classes", required=True, help="DeviceClasses")
    allocate.add_argument("--claims", required=True, help="the claims to allocate together (one pod's)")
    allocate.add_argument("--allocated", help="claims already allocated (with status.allocation)")
    allocate.add_argument("--node", help="the node to allocate on (default: try every node in name order)")
    allocate.add_argument(
        "--k8s-version", type=k8s_version.version_argument, default="1.35", help=k8s_version.HELP
    )
    allocate.add_argument("--strict", action="store_true", help="the audit's accounting, not the scheduler's")
    return parser.parse_args(argv)


def allocate(args: argparse.Namespace, out: TextIO) -> int:
    try:
        slices = load_objects(args.slices)
        classes = load_objects(args.classes)
        claims = load_objects(args.claims)
        allocated = load_objects(args.allocated) if args.allocated else []
    except ManifestError as error:
        print(f"{COMPONENT} allocate: {error}", file=sys.stderr)
        return 2
    semantics = Semantics(args.k8s_version, strict=args.strict)
    report = preview(slices, classes, claims, allocated, semantics, args.node)
    yaml.safe_dump(report, out, sort_keys=False, width=120)
    return 0


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parse_args(argv)
    if args.command == "allocate":
        return allocate(args, out)
    return run_in_cluster(args)


if __name__ == "__main__":
    sys.exit(main())
