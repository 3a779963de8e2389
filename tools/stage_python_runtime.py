#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Stages a CPython interpreter, and the shared libraries it and its packages need, under one prefix.

The module's images run on Deckhouse's ``base/distroless``, which brings the C library (glibc) but
no Python. The image build (images/gpu-artifact/werf.inc.yaml) therefore copies the builder's
interpreter into ``/opt/deckhouse-gpu/python``:

``interpreter DEST``
    Run with the interpreter to stage. Copies its real executable and its standard library to
    ``DEST``, each at its path relative to ``sys.base_prefix``: CPython looks for its standard library
    by searching up from the executable (or a venv's ``home``) for ``<libdir>/pythonX.Y/os.py`` before
    it falls back to the prefix it was built with, so the copy works as a prefix of its own. Creates
    ``DEST/bin/python3`` and copies the shared libraries that the executable and the extension modules
    need into ``DEST/solib``. Then runs the copy to prove that it finds its standard library in DEST.

``libraries DEST PATH... [--soname NAME]...``
    Copies into ``DEST/solib`` the shared libraries needed by every ELF file under the PATHs (a venv's
    binary wheels), and the libraries named by ``--soname`` (loaded with dlopen, e.g. libudev.so.1 for
    pyudev), with what they need in turn. Libraries found under DEST or a PATH travel with them.

Libraries of the C library itself are never copied: the runtime base brings its own, and two C
libraries in one process do not work. The copies are named by soname, so the runtime image makes
the dynamic loader find them by running ``ldconfig DEST/solib`` (an ``/etc/ld.so.cache`` entry).
Fails when the loader cannot resolve a library, so a missing one stops the build, not a pod.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path

LOADER = os.environ.get("STAGE_LOADER", "/lib64/ld-linux-x86-64.so.2")
LDCONFIG = os.environ.get("STAGE_LDCONFIG", "/sbin/ldconfig")
# glibc's own libraries (sonames), which the runtime base provides.
GLIBC = frozenset(
    {
        "ld-linux-x86-64.so.2",
        "libBrokenLocale.so.1",
        "libanl.so.1",
        "libc.so.6",
        "libc_malloc_debug.so.0",
        "libdl.so.2",
        "libm.so.6",
        "libmvec.so.1",
        "libnsl.so.1",
        "libpthread.so.0",
        "libresolv.so.2",
        "librt.so.1",
        "libthread_db.so.1",
        "libutil.so.1",
    }
)
# Parts of the standard library a service never imports: GUI, tests, the interactive console,
# installers, and the build configuration (its static libpython alone is tens of megabytes). The
# skipped extension modules would also drag in X11, Tk, ncurses and Kerberos libraries.
STDLIB_SKIP = (
    *("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "__phello__"),
    *("site-packages", "dist-packages", "config-*"),
    *("_tkinter.*", "_test*", "_ctypes_test.*", "_xx*", "xx*", "nis.*", "readline.*", "_curses*"),
)


class StageError(Exception):
    pass


def is_glibc(soname: str) -> bool:
    return soname in GLIBC or soname.startswith("libnss_")


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(root: Path) -> Iterator[Path]:
    if root.is_file() and not root.is_symlink():
        if is_elf(root):
            yield root
        return
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            path = Path(directory, name)
            if not path.is_symlink() and path.is_file() and is_elf(path):
                yield path


def needed(path: Path) -> list[tuple[str, Path]]:
    """(soname, resolved path) of every shared library the loader maps for ``path``, transitively."""
    result = subprocess.run([LOADER, "--list", str(path)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StageError(f"{LOADER} --list {path}: {(result.stderr or result.stdout).strip()}")
    found: list[tuple[str, Path]] = []
    for line in result.stdout.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if not arrow:
            continue  # the vdso, the loader itself, "statically linked"
        target = rest.split(" (", 1)[0].strip()
        if target == "not found":
            raise StageError(f"{path} needs {name}, which the loader does not find")
        found.append((name, Path(target)))
    return found


def under(path: Path, roots: Iterable[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(Path(os.path.realpath(root))) for root in roots)


def copy_libraries(files: Iterable[Path], solib: Path, keep: Iterable[Path]) -> list[str]:
    """Copies what ``files`` need (glibc and anything under ``keep`` aside); returns the sonames."""
    roots = list(keep)
    solib.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []
    for file in files:
        for soname, target in needed(file):
            if is_glibc(soname) or under(target, roots):
                continue
            destination = solib / soname
            if not destination.exists():
                shutil.copy2(target, destination)  # follows the soname link to the library
                copied.append(soname)
    return copied


def soname_path(soname: str) -> Path:
    """The library ``soname`` resolves to, from the loader cache (``ldconfig -p``)."""
    try:
        result = subprocess.run([LDCONFIG, "-p"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise StageError(f"cannot read the loader cache with {LDCONFIG} -p: {error}") from None
    for line in result.stdout.splitlines():
        name, arrow, target = line.strip().partition(" => ")
        if arrow and name.split(" (", 1)[0] == soname and "x86-64" in name:
            return Path(target.strip())
    raise StageError(f"{soname} is not in the loader cache: install the package that provides it")


def stdlib_dirs() -> list[Path]:
    pure = Path(os.path.realpath(os.__file__)).parent
    dirs = [pure]
    dynload = sysconfig.get_config_var("DESTSHARED")
    if dynload and Path(dynload).is_dir():
        real = Path(os.path.realpath(dynload))
        if not real.is_relative_to(pure):
            dirs.append(real)
    return dirs


def stage_interpreter(dest: Path) -> Path:
    prefix = Path(os.path.realpath(sys.base_prefix))
    executable = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    if not executable.is_relative_to(prefix):
        raise StageError(f"the interpreter {executable} is not under its prefix {prefix}")
    staged = dest / executable.relative_to(prefix)
    staged.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executable, staged)
    python3 = dest / "bin" / "python3"
    if not python3.exists():
        python3.parent.mkdir(parents=True, exist_ok=True)
        python3.symlink_to(os.path.relpath(staged, python3.parent))
    for directory in stdlib_dirs():
        if not directory.is_relative_to(prefix):
            raise StageError(f"the standard library {directory} is not under the prefix {prefix}")
        shutil.copytree(
            directory,
            dest / directory.relative_to(prefix),
            symlinks=True,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(*STDLIB_SKIP),
        )
    copy_libraries([staged, *elf_files(dest)], dest / "solib", keep=[dest])
    return python3


def check_interpreter(python3: Path, dest: Path) -> None:
    """Runs the copy with only DEST/solib added to the library path: its prefix must be DEST."""
    env = {"LD_LIBRARY_PATH": str(dest / "solib"), "PATH": "/usr/bin:/bin"}
    script = "import sys, asyncio, ctypes, json, ssl, zlib; print(sys.prefix)"
    result = subprocess.run(
        [str(python3), "-I", "-c", script], capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise StageError(f"the staged interpreter does not start: {result.stderr.strip()}")
    if Path(os.path.realpath(result.stdout.strip())) != Path(os.path.realpath(dest)):
        raise StageError(f"the staged interpreter found its prefix at {result.stdout.strip()}, not {dest}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    interpreter = commands.add_parser("interpreter", help="stage this interpreter and its stdlib")
    interpreter.add_argument("dest", type=Path)
    libraries = commands.add_parser("libraries", help="stage the libraries ELF files under PATHs need")
    libraries.add_argument("dest", type=Path)
    libraries.add_argument("paths", type=Path, nargs="+")
    libraries.add_argument("--soname", action="append", default=[], help="a library loaded with dlopen")
    args = parser.parse_args(argv)
    dest: Path = args.dest.absolute()
    try:
        if args.command == "interpreter":
            check_interpreter(stage_interpreter(dest), dest)
        else:
            paths = [path.absolute() for path in args.paths]
            loaded = {name: soname_path(name) for name in args.soname}
            files = [file for path in paths for file in elf_files(path)] + list(loaded.values())
            copied = copy_libraries(files, dest / "solib", keep=[dest, *paths])
            for name, target in loaded.items():  # dlopen'ed: nobody's dependency, so copied here
                if not (dest / "solib" / name).exists():
                    shutil.copy2(target, dest / "solib" / name)
                    copied.append(name)
            print("stage_python_runtime: copied", " ".join(sorted(copied)) or "nothing new")
    except StageError as error:
        print(f"stage_python_runtime: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
