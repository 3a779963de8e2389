# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import re

import pytest

from deckhouse_gpu.domain.naming import label_value, model_slug, physical_gpu_name

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def test_name_comes_from_node_and_pci_address_only():
    assert physical_gpu_name("worker-1", "0000:02:00.0") == "worker-1-0000-02-00-0"
    assert physical_gpu_name("k8s.w3.example.com", "0000:b1:00.1") == "k8s.w3.example.com-0000-b1-00-1"


def test_long_node_names_stay_valid_and_distinct():
    node = "n" + "x" * 252
    first = physical_gpu_name(node, "0000:02:00.0")
    second = physical_gpu_name(node, "0000:03:00.0")
    assert len(first) <= 253
    assert DNS_SUBDOMAIN.match(first)
    assert first != second


@pytest.mark.parametrize(
    "text", ["worker-1", "a" * 64, "x" * 200 + ".example.com", "-bad-", "ends.with.dot."]
)
def test_label_values_are_valid(text):
    value = label_value(text)
    assert len(value) <= 63
    assert LABEL_VALUE.match(value), value


def test_truncated_label_values_keep_inputs_apart():
    assert label_value("a" * 70) != label_value("a" * 71)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GA100GL [A30 PCIe]", "a30-pcie"),
        ("GA100 [A100 PCIe 80GB]", "a100-pcie-80gb"),
        ("GH100 [H100 SXM5 80GB]", "h100-sxm5-80gb"),
        ("TU104GL [Tesla T4]", "tesla-t4"),
        ("Some Device Without Brackets", "some-device-without-brackets"),
        (None, "10de-20b7"),
        ("[]", "10de-20b7"),
    ],
)
def test_model_slug(name, expected):
    assert model_slug(name, "10de", "20b7") == expected
