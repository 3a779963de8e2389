# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which MIG profiles a card offers: the ModuleConfig's ``dra.migProfiles`` (DESIGN.md D2 a).

Every profile a card has is offered by default. A rule names a device (the card's
``gpu.deckhouse.io/device`` label, as ``kubectl get pgpu -L gpu.deckhouse.io/device`` shows it),
optionally the labels a node must carry, and the profiles its cards offer there; the first rule
for the device that the node matches wins, so node-specific rules go before general ones. Fewer
profiles mean fewer devices and counters per card, which every scheduling cycle pays for.

The rules reach gpu-handler as JSON (the hook derive_settings writes them, the DaemonSet passes
them on); ``parse_rules`` checks them again, so a hand-edited value fails with the rule's index.
A profile that the card itself does not have cannot be checked before a card is seen:
``unknown_profiles`` names those, and gpu-handler reports them on the Node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import LABEL_DEVICE

# A MIG profile name as NVML prints it (1g.10gb, 1g.10gb+me, 4g.40gb, 1g.24gb+gfx, ...).
PROFILE_NAME = re.compile(r"^\d+g\.\d+gb(\+me|\+gfx|-me|\+me\.all)?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class PolicyError(ValueError):
    """The rules are malformed; the message names the rule and the field."""


@dataclass(frozen=True)
class MigProfileRule:
    device: str
    profiles: frozenset[str]
    node_selector: tuple[tuple[str, str], ...] = ()  # labels a node must carry, all of them

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.node_selector)


def parse_rules(raw: Any) -> tuple[MigProfileRule, ...]:
    """Rules from their JSON form: a list of ``{device, nodeSelector?, profiles}``."""
    if not isinstance(raw, list):
        raise PolicyError("migProfiles: expected a list of {device, nodeSelector, profiles}")
    rules = tuple(_rule(f"migProfiles[{index}]", entry) for index, entry in enumerate(raw))
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    for index, rule in enumerate(rules):
        key = (rule.device, rule.node_selector)
        if key in seen:
            raise PolicyError(
                f"migProfiles[{index}]: repeats the device and nodeSelector of migProfiles[{seen[key]}],"
                " so it would never apply"
            )
        seen[key] = index
    return rules


def parse_json(text: str) -> tuple[MigProfileRule, ...]:
    """Rules from a JSON text; an empty text is no rule."""
    if not text.strip():
        return ()
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise PolicyError(f"migProfiles: not valid JSON: {error}") from None
    return parse_rules(raw)


def _rule(where: str, raw: Any) -> MigProfileRule:
    if not isinstance(raw, dict):
        raise PolicyError(f"{where}: expected a mapping with device and profiles")
    unknown = sorted(set(raw) - {"device", "nodeSelector", "profiles"})
    if unknown:
        raise PolicyError(f"{where}: unknown field {unknown[0]!r}")
    device = raw.get("device")
    if not isinstance(device, str) or not device or len(device) > 63 or not _LABEL_VALUE.match(device):
        raise PolicyError(f"{where}.device: expected a gpu.deckhouse.io/device label value, got {device!r}")
    profiles = raw.get("profiles")
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise PolicyError(f"{where}.profiles: expected a list of MIG profile names")
    for name in profiles:
        if not PROFILE_NAME.match(name):
            raise PolicyError(
                f"{where}.profiles: {name!r} is not a MIG profile name like 1g.10gb or 1g.10gb+me"
            )
    selector = raw.get("nodeSelector") or {}
    if not isinstance(selector, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in selector.items()
    ):
        raise PolicyError(f"{where}.nodeSelector: expected a mapping of label to value")
    return MigProfileRule(device, frozenset(profiles), tuple(sorted(selector.items())))


def for_node(
    rules: Sequence[MigProfileRule], labels: Mapping[str, str]
) -> tuple[tuple[str, frozenset[str]], ...]:
    """(device, profiles offered) on a node with ``labels``: the first matching rule per device."""
    chosen: dict[str, frozenset[str]] = {}
    for rule in rules:
        if rule.device not in chosen and rule.matches(labels):
            chosen[rule.device] = rule.profiles
    return tuple(sorted(chosen.items()))


def unknown_profiles(card: Mapping[str, Any], choice: Sequence[tuple[str, frozenset[str]]]) -> str | None:
    """Why the rule chosen for this node names profiles the card does not have (a typo, most likely,
    or another board of the model); None when it does not, or before the card is described."""
    device = ((card.get("metadata") or {}).get("labels") or {}).get(LABEL_DEVICE, "")
    allowed = next((names for name, names in choice if name == device), None)
    nvidia = ((card.get("status") or {}).get("capabilities") or {}).get("nvidia") or {}
    if allowed is None or "migSupported" not in nvidia:
        return None
    known = [str(p.get("name")) for p in ((nvidia.get("mig") or {}).get("profiles") or [])]
    missing = sorted(allowed - set(known))
    if not missing:
        return None
    has = f"they have {', '.join(known)}" if known else "they have no MIG"
    # Worded per device, not per card: the publisher says each text once, so a node of eight alike
    # cards gets one event.
    return (
        f"dra.migProfiles offers {', '.join(missing)} for {device}, which this node's cards do not "
        f"have ({has}); only the profiles they have are offered"
    )
