# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission check of a sharing config against the shares a claim asks for (docs/SHARING.md).

A strategy may cap each client at a percentage of the card (``SharingStrategy.share_cap``: MPS's
``defaultActiveThreadPercentage`` of the card's multiprocessors), and gpu-handler refuses at
prepare a cap above the claim's share of the card: the share is what the claim was given. The
webhook sees the same in a claim or template that carries the config itself: a request's share
is its ``capacity.requests.sharePercent`` (``exactly``, or each ``firstAvailable`` subrequest); a
request without one asks for the offer's default, 100, above which no cap can go. The memory cap
(``defaultPinnedDeviceMemoryLimit``) waits for prepare, the first to know the card's memory. A
DeviceClass's config meets its claims' shares only at prepare.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.opaque_types import DeviceConfig, GPUConfig
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

# Request leaf (``req`` or ``req/sub``) -> the sharePercent it asks for and the path of it.
type Shares = Mapping[str, tuple[Fraction, str]]


def _share(choice: Any) -> Fraction | None:
    capacity = choice.get("capacity") if isinstance(choice, Mapping) else None
    requests = capacity.get("requests") if isinstance(capacity, Mapping) else None
    value = requests.get("sharePercent") if isinstance(requests, Mapping) else None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return Quantity.parse(str(value)).value
    except QuantityError:
        return None  # not a quantity: the API server refuses the object itself


def request_shares(devices: Mapping[str, Any], prefix: str) -> dict[str, tuple[Fraction, str]]:
    """The share each request leaf of a claim's ``devices`` (at ``prefix``) asks for; leaves that
    ask for none are left out."""
    found: dict[str, tuple[Fraction, str]] = {}
    requests = devices.get("requests")
    for index, request in enumerate(requests if isinstance(requests, list) else []):
        if not isinstance(request, Mapping) or not isinstance(request.get("name"), str):
            continue
        path = f"{prefix}.requests[{index}]"
        subrequests = request.get("firstAvailable")
        choices = [(request["name"], f"{path}.exactly", request.get("exactly"))]
        if isinstance(subrequests, list):
            choices = [
                (f"{request['name']}/{sub['name']}", f"{path}.firstAvailable[{position}]", sub)
                for position, sub in enumerate(subrequests)
                if isinstance(sub, Mapping) and isinstance(sub.get("name"), str)
            ]
        for leaf, where, choice in choices:
            share = _share(choice)
            if share is not None:
                found[leaf] = (share, f"{where}.capacity.requests.sharePercent")
    return found


def above_share(
    path: str, config: DeviceConfig | None, targets: set[str] | None, shares: Shares
) -> list[str]:
    """Why the config at ``path`` (a ``config[]`` entry) caps clients above the share of a request
    it configures (``targets``; None: every request); empty when it does not.

    The scheduler rounds a share up to a whole percent (the shared offer's request policy: 1 to 100
    in steps of 1, DESIGN.md D6), so the rounded share is the bound, as at prepare."""
    sharing = config.sharing if isinstance(config, GPUConfig) else None
    cap = None if sharing is None else features.strategy_of(sharing).share_cap(sharing)
    if cap is None:
        return []
    setting, capped = cap
    problems = []
    for leaf in sorted(shares if targets is None else targets & shares.keys()):
        share, where = shares[leaf]
        if capped > max(1, math.ceil(share)):
            problems.append(
                f"{path}.opaque.parameters.sharing.{setting}: {capped} is above "
                f"the claim's share of the card ({float(share):g} % at {where}): lower it, or ask for a "
                "larger sharePercent"
            )
    return problems
