# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu`` tables: columns aligned as ``kubectl get`` aligns them, colour only where the
caller allows it (a terminal, no NO_COLOR), and never inside the padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deckhouse_gpu.cmd.kubectl_gpu_data import percent, quantity
from deckhouse_gpu.domain.report.cards import IDLE, CardRow
from deckhouse_gpu.domain.report.pending import NodeVerdict, PodExplanation, Tally
from deckhouse_gpu.services.gpu_report import CapacityReport, StatusReport

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
    if not row.offered:
        return "not offered"
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


def capacity_table(report: CapacityReport, paint: Paint, wide: bool) -> str:
    if not report.classes:
        return "No DeviceClasses found."
    if wide:
        rows, codes = [["CLASS", "NODE", "FITS"]], []
        for entry in report.classes:
            for node in report.nodes:
                fits = entry.nodes.get(node, 0)
                shown = "unlimited" if node in entry.unlimited else str(fits)
                rows.append([entry.device_class, node, shown + (" (error)" if node in entry.errors else "")])
                codes.append([None, None, None if fits else DIM])
        return table(rows, paint, codes)
    rows, codes = [["CLASS", "FITS", "NODES", "MOST ROOM"]], []
    for entry in report.classes:
        best = sorted(entry.nodes.items(), key=lambda item: (-item[1], item[0]))
        room = some([f"{node} ({fits})" for node, fits in best]) or "-"
        total = "unlimited" if entry.unlimited else str(entry.total)
        rows.append([entry.device_class, total, str(len(entry.nodes)), room])
        codes.append([None, None if entry.total else DIM, None, None])
    notes = [
        f"{e.device_class} on {node}: {error}" for e in report.classes for node, error in e.errors.items()
    ]
    return table(rows, paint, codes) + "".join(f"\nerror: {note}" for note in notes)


def _tally(tally: Tally) -> str:
    held = sorted(tally.held_by)
    return f"{tally.devices} {tally.reason}" + (f" (held by {some(held)})" if held else "")


def _why(verdict: NodeVerdict) -> str:
    if verdict.fits:
        return "-"
    parts = [verdict.error] if verdict.error else []
    parts += verdict.pools
    for request in verdict.requests:
        head = f"{request.claim} {request.request}: {request.fit_alone} of {request.devices} devices fit"
        detail = [_tally(t) for t in request.reasons]
        if request.together:
            detail.append("they do not fit together with the other requests or the constraints")
        parts.append(head + ("; " + "; ".join(detail) if detail else ""))
    return " | ".join(parts)


def explain_table(explanation: PodExplanation, paint: Paint) -> str:
    node = f" on node {explanation.node}" if explanation.node else ""
    lines = [f"Pod {explanation.pod} is {explanation.phase}{node}. Its claims:"]
    claim_rows = [["NAME", "CLAIM", "SOURCE", "STATE"]]
    claim_rows += [[c.entry, c.claim, c.source, c.state] for c in explanation.claims]
    lines += ["  " + line for line in table(claim_rows, paint).splitlines()]
    lines += [paint(f"error: {problem}", RED) for problem in explanation.problems]
    if explanation.nodes:
        rows, codes = [["NODE", "FITS", "WHY NOT"]], []
        for verdict in explanation.nodes:
            rows.append([verdict.node, "yes" if verdict.fits else "no", _why(verdict)])
            codes.append([None, GREEN if verdict.fits else RED, None])
        lines += ["", table(rows, paint, codes)]
    fits = explanation.fits_on
    if fits:
        lines.append(paint(f"\nThe claims fit on {len(fits)} node(s): {some(fits, 10)}.", GREEN))
    elif not explanation.problems and all(c.state == "allocated" for c in explanation.claims):
        lines.append("\nEvery claim is allocated already: the Pod waits for something else than devices.")
    else:
        lines.append(paint("\nThe claims fit on no node.", RED))
    return "\n".join(lines)
