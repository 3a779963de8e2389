# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""pu.lock across processes (two handler pods during a rolling update) and across threads."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from deckhouse_gpu.adapters.files.node_lock import LockTimeout, NodeLock

HOLDER = textwrap.dedent(
    """
    import sys
    from deckhouse_gpu.adapters.files.node_lock import NodeLock

    with NodeLock(sys.argv[1], timeout=5):
        print("locked", flush=True)
        sys.stdin.readline()  # hold until told (or killed)
    """
)


@pytest.fixture
def lock_path(tmp_path):
    return tmp_path / "plugins/gpu.deckhouse.io/pu.lock"


@pytest.fixture
def holder(lock_path):
    """Another process holding the lock until its stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "locked"
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()
    process.stdin.close()
    process.stdout.close()


def test_a_second_process_waits_and_times_out_naming_the_holder(lock_path, holder):
    started = time.monotonic()
    with pytest.raises(LockTimeout) as caught:
        NodeLock(lock_path, timeout=0.3).acquire()
    assert time.monotonic() - started >= 0.3
    message = str(caught.value)
    assert str(lock_path) in message
    assert f"PID {holder.pid}" in message
    assert socket.gethostname() in message
    assert caught.value.holder_pid == holder.pid


def test_the_waiter_gets_the_lock_once_the_holder_releases_it(lock_path, holder):
    def let_go():
        time.sleep(0.2)
        holder.stdin.close()

    releaser = threading.Thread(target=let_go)
    releaser.start()
    started = time.monotonic()
    with NodeLock(lock_path, timeout=10):
        assert time.monotonic() - started >= 0.2
        assert lock_path.read_text().split()[0] == str(os.getpid())
    releaser.join(5)
    holder.wait(timeout=5)
    assert holder.returncode == 0


def test_a_killed_holder_releases_the_lock(lock_path, holder):
    with pytest.raises(LockTimeout):
        NodeLock(lock_path, timeout=0.1).acquire()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=5)
    with NodeLock(lock_path, timeout=2):  # the kernel dropped the flock with the process
        pass


def test_released_lock_file_stays_and_is_reusable(lock_path):
    lock = NodeLock(lock_path, timeout=1)
    for _ in range(3):
        with lock:
            assert lock_path.read_text().startswith(f"{os.getpid()} ")
    assert lock_path.exists()
    assert lock_path.read_text() == ""


def test_threads_with_their_own_instances_exclude_each_other(lock_path):
    held = threading.Event()
    done = threading.Event()

    def hold():
        with NodeLock(lock_path):
            held.set()
            done.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(5)
    with pytest.raises(LockTimeout, match=f"PID {os.getpid()}"):
        NodeLock(lock_path, timeout=0.1).acquire()
    done.set()
    thread.join(5)
    with NodeLock(lock_path, timeout=1):
        pass


def test_threads_sharing_one_instance_take_turns(lock_path):
    lock = NodeLock(lock_path, timeout=10, poll=0.001)
    inside = []
    overlaps = []

    def work():
        for _ in range(20):
            with lock:
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(True)
                time.sleep(0.0005)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert overlaps == []


def test_a_shared_instance_times_out_for_the_second_thread(lock_path):
    lock = NodeLock(lock_path, timeout=0.1)
    lock.acquire()
    errors = []

    def second():
        try:
            lock.acquire()
        except LockTimeout as error:
            errors.append(error)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(5)
    lock.release()
    assert len(errors) == 1
    assert errors[0].holder_pid == os.getpid()


def test_not_reentrant_and_release_needs_a_hold(lock_path):
    lock = NodeLock(lock_path, timeout=0.05)
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()
    with lock, pytest.raises(LockTimeout):
        lock.acquire()


def test_unknown_holder_is_said_so(lock_path):
    lock_path.parent.mkdir(parents=True)
    lock_path.write_text("")
    error = LockTimeout(lock_path, 1.0, "")
    assert "held by an unknown process" in str(error)
    assert error.holder_pid is None
