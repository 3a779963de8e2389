# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Xid table: what each Xid does to the card, the condition it writes, and the number read back."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.inventory.health import xid
from deckhouse_gpu.domain.inventory.health.card_events import health_event
from deckhouse_gpu.domain.inventory.health.hardware_health import REASON_XID
from deckhouse_gpu.domain.inventory.health.xid import XidClass
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

ADDRESS = "0000:17:00.0"


@pytest.mark.parametrize(
    ("number", "kind"),
    [
        *((n, XidClass.APPLICATION) for n in (13, 31, 43, 45, 68, 109)),
        (79, XidClass.CARD_LOST),
        *((n, XidClass.RESET_REQUIRED) for n in (48, 61, 62, 64, 74, 95, 119, 120, 140)),
        *((n, XidClass.DEGRADED) for n in (63, 92, 94)),
        *((n, XidClass.UNCLASSIFIED) for n in (1, 32, 57, 154, 9999)),
    ],
)
def test_each_xid_has_its_class(number, kind):
    info = xid.classify(number)
    assert (info.xid, info.kind) == (number, kind)
    assert info.meaning
    assert xid.is_fatal(number) == (kind in (XidClass.CARD_LOST, XidClass.RESET_REQUIRED, XidClass.DEGRADED))


def test_the_table_agrees_with_the_reset_alert_of_the_monitoring_docs():
    # docs/MONITORING.md: D8GPUXidErrorNeedsReset fires for these; each must evict here too.
    for number in (48, 61, 62, 64, 74, 79, 95, 119, 120, 140):
        assert xid.classify(number).kind in xid.EVICTING


def test_no_verdict_without_a_fatal_xid():
    assert xid.verdict(ADDRESS, ()) is None
    assert xid.verdict(ADDRESS, (13, 31, 154)) is None


def test_a_fatal_xid_makes_the_card_unhealthy_and_says_what_to_do():
    found = xid.verdict(ADDRESS, (48,))
    assert found is not None
    assert (found.status, found.reason) == (ConditionStatus.FALSE, REASON_XID)
    assert found.message.startswith("Xid 48 (double-bit ECC error): ")
    assert f"nvidia-smi -r -i {ADDRESS}" in found.message
    assert "restart gpu-handler" in found.message
    assert "until gpu-handler restarts on the node or the card is removed and added" in found.message


def test_the_worst_xid_leads_and_the_others_are_named():
    found = xid.verdict(ADDRESS, (63, 48, 79, 13, 48))
    assert found is not None
    assert found.message.startswith("Xid 79 (GPU has fallen off the bus) (also Xid 48, 63): ")
    assert "reboot the node" in found.message
    assert xid.xid_of_message(found.message) == 79
    equal = xid.verdict(ADDRESS, (119, 48))
    assert equal is not None
    assert xid.xid_of_message(equal.message) == 119  # the first of equals


@pytest.mark.parametrize("number", [63, 79, 48, 94])
def test_the_number_reads_back_from_the_message(number):
    found = xid.verdict(ADDRESS, (number,))
    assert found is not None
    assert xid.xid_of_message(found.message) == number


@pytest.mark.parametrize(
    "text", ["", "GPU is lost", "an Xid 79 somewhere", "Xid seventy-nine", "xid 79: lower"]
)
def test_other_texts_carry_no_number(text):
    assert xid.xid_of_message(text) is None


def test_an_unknown_xid_gets_a_notice_not_a_verdict():
    text = xid.notice(ADDRESS, 154)
    assert text.startswith(f"Xid 154 on GPU {ADDRESS}: ")
    assert "health is unchanged" in text


def test_the_transition_event_names_the_xid_the_taint_and_the_kernel_log():
    found = xid.verdict(ADDRESS, (79,))
    assert found is not None
    event = health_event("True", found, "w1", ADDRESS)
    assert event is not None
    assert (event.type, event.reason) == ("Warning", "HardwareHealthyFalse")
    assert event.message.startswith(
        "HardwareHealthy True -> False (XidError): Xid 79 (GPU has fallen off the bus)"
    )
    assert "tainted gpu.deckhouse.io/unhealthy" in event.message
    assert "dmesg | grep -i xid" in event.message
    assert len(event.message) < 1024
