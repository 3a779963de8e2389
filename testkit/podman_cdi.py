# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A real CDI consumer for the tests: podman with runc, reading CDI specs from a folder of the test.

Podman (4.3, Debian's) loads CDI specs with the container-device-interface library, resolves
``--device <kind>=<name>`` against them and applies their edits to the OCI spec that runc starts:
device nodes, environment, mounts and hooks. A spec the library refuses is dropped with its
message in podman's debug log, and its devices are then "unresolvable": ``run`` fails, and names
every refusal from a second try at debug level.

Everything stays in the test's folder: podman's storage and run state, the image (a root file
system of Debian's busybox-static, ``podman import``-ed: no registry), and the CDI specs. Podman
4.3 reads specs only from /etc/cdi and /var/run/cdi, so each container is started in a mount
namespace of its own in which the test's folder is bound on /var/run/cdi and an empty tmpfs hides
/etc/cdi where it exists: nothing of the machine's CDI specs is seen, and nothing of the test's
leaks out (only an empty /var/run/cdi is left, as the mount point).

The flags are those that work on these machines (root, cgroup v1, no systemd, no
CAP_SYS_RESOURCE): runc (crun refuses hybrid cgroups), cgroupfs, no network, file and process
limits at or under the hard limits of this process.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

IMAGE = "localhost/gpu-cdi-busybox:test"
BUSYBOX_PATHS = ("/bin/busybox", "/usr/bin/busybox")
APPLETS = ("sh", "cat", "env", "find", "stat", "ls", "readlink")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
# Lines a container prints for the test: each section starts with its marker.
_PROBE = (
    "echo '## nodes'; find /dev -type c -exec stat -c '%n %t %T' {} +; "
    "echo '## env'; env; "
    "echo '## mounts'; cat /proc/self/mountinfo"
)
_REFUSED = re.compile(r'msg="The following error was triggered when refreshing the CDI registry: (.*)"')


class RuntimeUnavailable(Exception):
    """Podman cannot run containers here; the message says what is missing."""


@dataclass(frozen=True)
class Container:
    """What a container saw: its character devices (path -> major, minor), env and mount points."""

    nodes: dict[str, tuple[int, int]]
    env: dict[str, str]
    mounts: dict[str, str]  # mount point -> the host path (the root of the bind, as mountinfo says)


def _busybox() -> Path:
    for candidate in BUSYBOX_PATHS:
        path = Path(candidate)
        # Only the static build runs in an empty root file system.
        if path.is_file() and b"ld-linux" not in path.read_bytes()[:65536]:
            return path
    raise RuntimeUnavailable("no static busybox (Debian's busybox-static): run tools/install-podman")


def check_available() -> None:
    """Raises RuntimeUnavailable unless podman, runc, unshare and a static busybox are here, as root."""
    missing = [tool for tool in ("podman", "runc", "unshare", "mount") if shutil.which(tool) is None]
    if missing:
        raise RuntimeUnavailable(f"no {', '.join(missing)} on PATH: run tools/install-podman (as root)")
    if os.geteuid() != 0:
        raise RuntimeUnavailable("podman with runc and device nodes needs root here")
    _busybox()


class Podman:
    def __init__(self, directory: Path, cdi_dir: Path) -> None:
        self.directory, self.cdi_dir = directory, cdi_dir
        self.logs = directory / "logs"

    def global_flags(self) -> list[str]:
        return [
            "--root", str(self.directory / "storage"),
            "--runroot", str(self.directory / "run"),
            "--storage-driver", "vfs",
            "--events-backend", "file",
            "--cgroup-manager", "cgroupfs",
            "--runtime", "runc",
        ]  # fmt: skip

    def import_image(self) -> None:
        """A root file system with busybox and a few applets, imported as IMAGE."""
        rootfs = self.directory / "rootfs"
        (rootfs / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(_busybox(), rootfs / "bin/busybox")
        for applet in APPLETS:
            (rootfs / "bin" / applet).unlink(missing_ok=True)
            (rootfs / "bin" / applet).symlink_to("busybox")
        for directory in ("dev", "proc", "sys", "etc", "tmp", "run"):
            (rootfs / directory).mkdir(exist_ok=True)
        archive = self.directory / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(rootfs, arcname=".")
        self._podman(["import", str(archive), IMAGE], "import")

    def run(self, name: str, *devices: str) -> Container:
        """Starts a container with the CDI ``devices`` and returns what it saw; AssertionError with
        podman's answer and the CDI library's refusals when it does not start."""
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        processes = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        processes = 4096 if processes == resource.RLIM_INFINITY else min(processes, 4096)
        argv = [
            "run", "--rm", "--network", "none",
            "--ulimit", f"nofile={files}:{files}", "--ulimit", f"nproc={processes}:{processes}",
            *(f"--device={device}" for device in devices),
            IMAGE, "sh", "-c", _PROBE,
        ]  # fmt: skip
        result = self._podman(argv, name, check=False)
        if result.returncode != 0:
            # Podman logs why the library refused a spec at debug level only; that level costs
            # some 20 s a container here (conmon), so only a failure is run again with it.
            self._podman(["--log-level", "debug", *argv], f"{name}-debug", check=False)
            raise AssertionError(
                f"podman did not start {name} with {', '.join(devices)} (exit {result.returncode}): "
                f"{result.stderr.strip()[-1000:] or 'no message'}\n"
                f"specs the CDI library refused: {self.refusals(f'{name}-debug') or 'none'}\n"
                f"logs: {self.logs}"
            )
        return parse(result.stdout)

    def refusals(self, name: str) -> list[str]:
        """The CDI library's messages about the specs of the folder, from a debug log."""
        text = (self.logs / f"{name}.log").read_text(errors="replace")
        return [match.group(1).encode().decode("unicode_escape").strip() for match in _REFUSED.finditer(text)]

    def _podman(self, argv: list[str], name: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        self.logs.mkdir(parents=True, exist_ok=True)
        podman = ["podman", *self.global_flags(), *argv]
        # A mount namespace of its own: the test's specs on /var/run/cdi, an empty /etc/cdi.
        script = (
            "mkdir -p /var/run/cdi && { [ ! -d /etc/cdi ] || mount -t tmpfs -o size=1m cdi /etc/cdi; } && "
            'mount --bind "$0" /var/run/cdi && exec "$@"'
        )
        command = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            str(self.cdi_dir),
            *podman,
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        (self.logs / f"{name}.log").write_text(result.stderr)
        if check and result.returncode != 0:
            raise RuntimeUnavailable(f"podman {argv[0]} failed: {result.stderr.strip()[-2000:]}")
        return result


def parse(output: str) -> Container:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in output.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        else:
            current.append(line)
    nodes = {}
    for line in sections.get("nodes", []):
        path, major, minor = line.rsplit(" ", 2)
        nodes[path] = (int(major, 16), int(minor, 16))
    env = dict(line.split("=", 1) for line in sections.get("env", []) if "=" in line)
    mounts = {}
    for line in sections.get("mounts", []):
        fields = line.split()
        # mountinfo: id parent major:minor root mount-point options ... - type source super
        mounts[fields[4]] = fields[3]
    return Container(nodes, env, mounts)
