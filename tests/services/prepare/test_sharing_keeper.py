# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The loop that keeps MPS daemons running: it calls the keeper until stopped, past failures."""

import threading

from deckhouse_gpu.services.prepare.sharing_keeper import keep_daemons_until, start_daemon_keeper


class Keeper:
    def __init__(self, stop: threading.Event, rounds: int, fail_first: bool) -> None:
        self.stop, self.rounds, self.fail_first = stop, rounds, fail_first
        self.calls = 0

    def keep_daemons(self) -> list[str]:
        self.calls += 1
        if self.calls >= self.rounds:
            self.stop.set()
        if self.fail_first and self.calls == 1:
            raise RuntimeError("the API server is away")
        return []


def test_a_failed_round_is_followed_by_the_next_until_stopped():
    stop = threading.Event()
    keeper = Keeper(stop, rounds=3, fail_first=True)
    keep_daemons_until(keeper, stop, 0.001)
    assert keeper.calls == 3


def test_the_keeper_thread_ends_with_stop():
    stop = threading.Event()
    keeper = Keeper(stop, rounds=2, fail_first=False)
    thread = start_daemon_keeper(keeper, stop, 0.001)
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert keeper.calls == 2
