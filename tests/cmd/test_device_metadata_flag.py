# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler writes device metadata files unless told not to (--no-device-metadata or
DEVICE_METADATA=false)."""

import argparse

import pytest

from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import add_plugin_arguments


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_plugin_arguments(parser)
    return parser.parse_args(list(argv))


def test_device_metadata_is_on_by_default(monkeypatch):
    monkeypatch.delenv("DEVICE_METADATA", raising=False)
    assert parse().no_device_metadata is False


@pytest.mark.parametrize(("env", "off"), [("false", True), ("False", True), ("true", False), ("", False)])
def test_the_environment_turns_it_off(monkeypatch, env, off):
    monkeypatch.setenv("DEVICE_METADATA", env)
    assert parse().no_device_metadata is off


def test_the_flag_turns_it_off(monkeypatch):
    monkeypatch.delenv("DEVICE_METADATA", raising=False)
    assert parse("--no-device-metadata").no_device_metadata is True
