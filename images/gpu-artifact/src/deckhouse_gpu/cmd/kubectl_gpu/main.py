# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu: GPUs of the cluster, the room left for claims and why a Pod is pending.

  kubectl gpu status [NODE...]                     every card: health, mode, what it holds, what is free
  kubectl gpu capacity [--class NAME] [--node N] [--all]
                                                   how many more one-device claims of each class fit
  kubectl gpu explain POD [-n NAMESPACE]           why a pending Pod's claims or extended resources
                                                   fit no node, or where

Flags of every command: --kubeconfig FILE, --context NAME, -n/--namespace NAME and
-o/--output table|wide|json|yaml. It only reads the cluster (docs/KUBECTL.md lists the RBAC);
the answers come from the module's allocator (DESIGN.md D12).

Exit codes:
  0  the answer is yes: every card healthy and ready, some claim fits, the Pod's claims fit a node
  1  the answer is no: a card is unhealthy or not ready, nothing fits, the Pod's claims fit no node
  2  usage or input error: a bad flag, no such Pod, a Pod that is not pending, no such class or node
  3  the cluster cannot be read: kubeconfig, connection, credentials or RBAC, the module not installed
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

import yaml

from deckhouse_gpu.cmd.kubectl_gpu import data, tables
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.services.report import gpu_report
from deckhouse_gpu.services.report.cluster_reads import ClusterError, InputError

PROG = "kubectl gpu"
EXIT_YES, EXIT_NO, EXIT_INPUT, EXIT_CLUSTER = 0, 1, 2, 3
OUTPUTS = ("table", "wide", "json", "yaml")


def _common(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a flag may come before or after the command, as kubectl allows for plugins.
    hide = argparse.SUPPRESS
    parser.add_argument(
        "--kubeconfig", default=hide, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", default=hide, help="kubeconfig context (default: its current one)")
    parser.add_argument(
        "-n", "--namespace", default=hide, help="the Pod's namespace (default: the context's)"
    )
    parser.add_argument(
        "-o", "--output", choices=OUTPUTS, default=hide, help="output format (default: table)"
    )


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _common(main)
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    status = commands.add_parser(
        "status", help="every card: health, mode, claims, MIG instances, free memory"
    )
    status.add_argument("nodes", nargs="*", metavar="NODE", help="only the cards of these nodes")
    capacity = commands.add_parser("capacity", help="how many more one-device claims of each class fit")
    capacity.add_argument("--class", dest="device_class", metavar="NAME", help="only this DeviceClass")
    capacity.add_argument("--node", metavar="NODE", help="only this node")
    capacity.add_argument(
        "--all",
        dest="all_classes",
        action="store_true",
        help="list the classes that select no device too (the table sums them up in one line)",
    )
    explain = commands.add_parser(
        "explain", help="why a pending Pod's claims or extended resources fit no node, or where they fit"
    )
    explain.add_argument("pod", metavar="POD", help="the Pod's name")
    for command in (status, capacity, explain):
        _common(command)
    return main


def _dump(document: dict[str, Any], output: str, out: TextIO) -> None:
    if output == "json":
        json.dump(document, out, indent=2)
        out.write("\n")
    else:
        yaml.safe_dump(document, out, sort_keys=False, width=120)


def run(
    api: KubeAPI, args: argparse.Namespace, out: TextIO, namespace: str = "default", colour: bool = False
) -> int:
    """One command against ``api``; ReportError and argparse's SystemExit go to the caller."""
    output = getattr(args, "output", "table")
    paint = tables.painter(colour)
    show: Callable[[], str]
    if args.command == "status":
        report = gpu_report.status(api, args.nodes)
        document, answer = data.status_data(report), all(row.ready for row in report.cards)
        show = functools.partial(tables.status_table, report, paint, output == "wide")
    elif args.command == "capacity":
        found = gpu_report.capacity(api, args.device_class, args.node)
        document, answer = data.capacity_data(found), any(e.total or e.unlimited for e in found.classes)
        every = bool(getattr(args, "all_classes", False)) or args.device_class is not None
        show = functools.partial(tables.capacity_table, found, paint, output == "wide", every, args.node)
    else:
        explanation = gpu_report.explain(api, getattr(args, "namespace", None) or namespace, args.pod)
        document, answer = data.explanation_data(explanation), explanation.placeable
        show = functools.partial(tables.explain_table, explanation, paint)
    if output in ("json", "yaml"):
        _dump(document, output, out)
    else:
        out.write(show() + "\n")
    return EXIT_YES if answer else EXIT_NO


def _answered(command: Callable[[], int]) -> int:
    """The command's exit code, or the code and one line on stderr for what stopped it."""
    try:
        return command()
    except InputError as error:
        _error(str(error))
        return EXIT_INPUT
    except ClusterError as error:
        _error(str(error))
        return EXIT_CLUSTER


def report(api: KubeAPI, argv: list[str], out: TextIO, colour: bool = False) -> int:
    """The command line ``argv`` against an API at hand (the simulator's), without a kubeconfig."""
    args = parser().parse_args(argv)
    return _answered(lambda: run(api, args, out, colour=colour))


def _error(message: str) -> None:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)


def _colour(out: TextIO) -> bool:
    """Colour on a terminal only, and never when NO_COLOR is set (no-color.org)."""
    return out.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parser().parse_args(argv)  # a usage error exits with 2 here
    # A short-lived process that builds a hundred thousand objects from the lists and frees
    # them at exit: the cycle collector would only walk them over and over.
    gc.disable()
    # Errors are one line each: the client library's retry warnings would add lines of their own.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    from deckhouse_gpu.adapters.kube.kube_user import KubeconfigError, load_user_kube  # noqa: PLC0415

    kubeconfig = getattr(args, "kubeconfig", None) or os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        api, namespace = load_user_kube(kubeconfig, getattr(args, "context", None))
    except KubeconfigError as error:
        _error(str(error))
        return EXIT_CLUSTER
    try:
        return _answered(lambda: run(api, args, out, namespace, _colour(out)))
    finally:
        api.close()


if __name__ == "__main__":
    sys.exit(main())
