# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu`` tables: columns aligned as ``kubectl get`` aligns them, colour only where the
caller allows it (a terminal, no NO_COLOR), and never inside the padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deckhouse_gpu.cmd.kubectl_gpu.data import percent, quantity
from deckhouse_gpu.domain.report.capacity import ClassCapacity
from deckhouse_gpu.domain.report.cards import IDLE, CardRow
from deckhouse_gpu.domain.report.class_devices import ClassDevices
from deckhouse_gpu.domain.report.extended import claim_classes, class_label
from deckhouse_gpu.domain.report.pending import NodeVerdict, PodExplanation, Tally
from deckhouse_gpu.services.report.gpu_report import CapacityReport, StatusReport

RED, GREEN, YELLOW, DIM = "31", "32", "33", "2"
Paint = Callable[[str, str | None], str]
SHOWN_NAMES = 3  # nodes or claims named in one cell before "and N more"


def painter(colour: bool) -> Paint:
    def paint(text: str, code: str | None) -> str:
        return f"\033[{code}m{text}\033[0m" if colour and code and text else text

    return paint


def table(rows: Sequence[Sequence[str]], paint: Paint, codes: Sequence[Sequence[str | None]] = ()) -> str:
    """Columns three spaces apart; ``codes`` colour cells (row by row, header excluded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        colours = codes[number - 1] if 0 < number <= len(codes) else [None] * len(row)
        cells = [
            paint(cell, colour) + " " * (width - len(cell))
            for cell, width, colour in zip(row, widths, colours, strict=True)
        ]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def some(names: Sequence[str], limit: int = SHOWN_NAMES) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _condition(status: str) -> str | None:
    return GREEN if status == "True" else RED if status else YELLOW


def _free(row: CardRow) -> str:
    if not row.offered:  # another owner's card says whose (DESIGN.md D16)
        return f"held by {row.other_owner}" if row.other_owner else "not offered"
    if row.taints:  # unhealthy: offered, but no claim that does not tolerate it gets it
        return f"tainted {', '.join(row.taints)}"
    if row.slices_total is not None:
        memory = quantity(row.memory_left) if row.memory_left is not None else "?"
        return f"{len(row.slices_free or [])}/{row.slices_total} slices, {memory}"
    if row.share_left is not None:
        return f"{percent(row.share_left)}% share"
    return "none" if row.holds else "whole card"


def _claims(row: CardRow, wide: bool) -> str:
    shown = []
    for hold in row.holds:
        text = hold.claim
        notes = [f"pod {pod}" for pod in hold.pods] if wide or len(row.holds) == 1 else []
        notes += [] if hold.prepared else ["not prepared"]
        shown.append(text + (f" ({', '.join(notes)})" if notes else ""))
    return ", ".join(shown) if wide else some(shown) or "-"


def _mig(row: CardRow, wide: bool) -> str:
    if wide:
        return ", ".join(f"{m.profile}@{m.start}" + (f" {m.uuid}" if m.uuid else "") for m in row.mig) or "-"
    profiles: dict[str, int] = {}
    for instance in row.mig:
        profiles[instance.profile] = profiles.get(instance.profile, 0) + 1
    return ", ".join(f"{count}x {profile}" for profile, count in profiles.items()) or "-"


def status_table(report: StatusReport, paint: Paint, wide: bool) -> str:
    if not report.cards:
        return "No GPUs found."
    header = ["NODE", "GPU", "MODEL", "MODE", "HEALTHY", "DRIVER", "FREE", "MIG", "CLAIMS"]
    rows, codes = [header + (["NAME"] if wide else [])], []
    for row in report.cards:
        cells = [row.node, row.address, row.model, row.mode, row.healthy or "?", row.driver_ready or "?"]
        cells += [_free(row), _mig(row, wide), _claims(row, wide)] + ([row.name] if wide else [])
        rows.append(cells)
        mode = DIM if row.mode == IDLE else None
        codes.append([None, None, None, mode, _condition(row.healthy), _condition(row.driver_ready)])
        codes[-1] += [RED if row.taints else None] + [None] * (len(cells) - len(codes[-1]) - 1)
    return table(rows, paint, codes)


def _unmatched(hidden: Sequence[ClassCapacity], node: str | None) -> str:
    """One line for the classes that select no device, instead of a row of zeros each."""
    names = [entry.device_class for entry in hidden]
    what = "class selects" if len(names) == 1 else "classes select"
    where = f"on node {node}" if node else "in the cluster"
    return f"{len(names)} more {what} no device {where}: {some(names)} (--all lists them)."


def capacity_table(
    report: CapacityReport, paint: Paint, wide: bool, every: bool = False, only_node: str | None = None
) -> str:
    """``every``: a row for each class; otherwise classes that select no device at all are summed
    up in one line (a cluster has tens of classes for the models it does not have)."""
    if not report.classes:
        return "No DeviceClasses found."
    shown = [e for e in report.classes if every or e.devices or e.total or e.unlimited or e.errors]
    hidden = [e for e in report.classes if e not in shown]
    notes = [_unmatched(hidden, only_node)] if hidden else []
    if report.broad:
        notes.append(paint(broad_note(report.broad), YELLOW))
    if report.scheduler is not None and report.scheduler.warning:
        notes.append(paint(f"warning: {report.scheduler.warning}", YELLOW))
    elif report.scheduler is not None and report.scheduler.counter_nodes:
        count = report.scheduler.counter_nodes
        notes.append(paint(f"{count} node{'s' if count != 1 else ''} publish counters (dynamic MIG).", DIM))
    if not shown:
        return "\n".join(notes)
    if wide:
        rows, codes = [["CLASS", "GPUCLASS", "NODE", "FITS"]], []
        for entry in shown:
            for node in report.nodes:
                fits = entry.nodes.get(node, 0)
                text = "unlimited" if node in entry.unlimited else str(fits)
                text += " (error)" if node in entry.errors else ""
                rows.append([entry.device_class, entry.gpu_class or "-", node, text])
                codes.append([None, None, None, None if fits else DIM])
        return "\n".join([table(rows, paint, codes), *notes])
    rows, codes = [["CLASS", "GPUCLASS", "DEVICES", "FITS", "NODES", "MOST ROOM"]], []
    for entry in shown:
        best = sorted(entry.nodes.items(), key=lambda item: (-item[1], item[0]))
        room = some([f"{node} ({fits})" for node, fits in best]) or "-"
        total = "unlimited" if entry.unlimited else str(entry.total)
        rows.append(
            [
                entry.device_class,
                entry.gpu_class or "-",
                str(entry.devices),
                total,
                str(len(entry.nodes)),
                room,
            ]
        )
        codes.append([None, None, None if entry.devices else DIM, None if entry.total else DIM, None, None])
    errors = [
        f"error: {e.device_class} on {node}: {error}" for e in shown for node, error in e.errors.items()
    ]
    return "\n".join([table(rows, paint, codes), *errors, *notes])


def _tally(tally: Tally) -> str:
    held = sorted(tally.held_by)
    return f"{tally.devices} {tally.reason}" + (f" (held by {some(held)})" if held else "")


def _why(verdict: NodeVerdict) -> str:
    if verdict.fits:
        return "-"
    parts = [verdict.error] if verdict.error else []
    parts += verdict.pools
    for request in verdict.requests:
        wants = "" if request.wants == "1" else f" wants {request.wants}"  # 1: the common case
        head = (
            f"{request.claim} {request.request}{wants}: {request.fit_alone} of {request.devices} devices fit"
        )
        detail = [_tally(t) for t in request.reasons]
        if request.together:
            detail.append("they do not fit together with the other requests or the constraints")
        parts.append(head + ("; " + "; ".join(detail) if detail else ""))
    return " | ".join(parts)


def _class_line(found: ClassDevices, owners: dict[str, str]) -> str:
    """How many devices the class selects in the cluster, where, and what holds them."""
    label = f"DeviceClass {class_label(found.device_class, owners)}"
    if found.error:
        return f"{label}: {found.error}"
    if not found.total:
        return f"{label} selects no device in the cluster: no node offers one its selectors accept."
    where = some([f"{count} on {node}" for node, count in sorted(found.per_node.items())], 10)
    noun = "device" if found.total == 1 else "devices"
    line = f"{label} selects {found.total} {noun} in the cluster: {where}"
    if found.held:
        holders = sorted({claim for claims in found.held.values() for claim in claims})
        line += f"; {len(found.held)} in use (held by {some(holders)})"
    return line + "."


def explain_table(explanation: PodExplanation, paint: Paint) -> str:
    node = f" on node {explanation.node}" if explanation.node else ""
    owners = explanation.gpu_classes
    lines = [f"Pod {explanation.pod} is {explanation.phase}{node}. Its claims:"]
    claim_rows = [["NAME", "CLAIM", "SOURCE", "STATE", "CLASS"]]
    for c in explanation.claims:
        classes = ", ".join(class_label(name, owners) for name in claim_classes(c.obj)) or "-"
        claim_rows.append([c.entry, c.claim, c.source, c.state, classes])
    lines += ["  " + line for line in table(claim_rows, paint).splitlines()]
    if explanation.extended:
        lines.append("Its extended resources (the scheduler makes their claim once it has a node):")
        resource_rows = [["CONTAINER", "RESOURCE", "COUNT", "CLASS"]]
        for r in explanation.extended:
            shown = class_label(r.device_class, owners) if r.device_class else "none"
            resource_rows.append([r.container, r.resource, str(r.count), shown])
        lines += ["  " + line for line in table(resource_rows, paint).splitlines()]
    lines += [paint(f"error: {problem}", RED) for problem in explanation.problems]
    lines += [_class_line(found, owners) for found in explanation.classes]
    if explanation.nodes:
        rows, codes = [["NODE", "FITS", "WHY NOT"]], []
        for verdict in explanation.nodes:
            cell = "yes" if verdict.fits else "plugin" if verdict.device_plugin else "no"
            rows.append([verdict.node, cell, verdict.device_plugin or _why(verdict)])
            codes.append([None, GREEN if verdict.fits else YELLOW if verdict.device_plugin else RED, None])
        lines += ["", table(rows, paint, codes)]
    fits = explanation.fits_on
    plugin = explanation.plugin_nodes
    if plugin:  # the scheduler's choice there is the device plugin's, not DRA's (DESIGN.md D16)
        lines.append(
            f"\nA device plugin serves the extended resources on {len(plugin)} node(s): {some(plugin, 10)}."
        )
    if fits:
        lines.append(paint(f"\nThe claims fit on {len(fits)} node(s): {some(fits, 10)}.", GREEN))
    elif not explanation.problems and all(c.state == "allocated" for c in explanation.claims):
        lines.append("\nEvery claim is allocated already: the Pod waits for something else than devices.")
    else:
        lines.append(paint("\nThe claims fit on no node.", RED))
    return "\n".join(lines)


def broad_note(classes: list[str]) -> str:
    named = ", ".join(classes)
    return (
        f"warning: DeviceClass {named} accepts every gpu.deckhouse.io device, each MIG placement "
        "included, so every node publishes its whole layout for it (up to 208 devices a node of "
        "8 H100) and the scheduler scans them all for every GPU Pod; narrow its selectors to what "
        "its claims use (docs/DRA.md, 'A very broad class')"
    )
