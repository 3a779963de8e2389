# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""License headers as dmt checks them (the port is tests/module/license_headers.py): the checker on
good and bad headers, tools/add-license-headers on a scratch module, and every source file of the
repository (tracked, or new and not ignored).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.module.dmt_checklist import ROOT, project_files
from tests.module.license_headers import APACHE_BODY, check_content, checked, dmt_selects

TOOL = ROOT / "tools" / "add-license-headers"
SPDX = "# Copyright (c) 2026 Flant JSC\n# SPDX-License-Identifier: Apache-2.0\n"


def commented(text: str, prefix: str = "#") -> str:
    return "".join(f"{prefix} {line}".rstrip() + "\n" for line in text.splitlines())


GOOD = {
    "spdx after a shebang": ("hook.py", f"#!/usr/bin/env python3\n{SPDX}\nimport sys\n"),
    "spdx, no year": ("a.py", "# Copyright (c) Flant JSC\n# SPDX-License-Identifier: Apache-2.0\n"),
    "full apache text": ("a.py", commented(f"Copyright 2023 Flant JSC\n\n{APACHE_BODY}") + "\nimport os\n"),
    "apache text in a docstring": ("a.py", f'"""\nCopyright 2021 Flant JSC\n\n{APACHE_BODY}\n"""\n'),
    "apache in a go block": (
        "main.go",
        f"/*\nCopyright 2025 Flant JSC\n\n{APACHE_BODY}\n*/\n\npackage main\n",
    ),
    "modified apache": (
        "a.sh",
        commented(
            "Copyright 2024 Flant JSC\n\n"
            f"Modifications made by Flant JSC as part of the Deckhouse project.\n\n{APACHE_BODY}"
        ),
    ),
    "enterprise edition": (
        "ee.py",
        "# Copyright 2022 Flant JSC\n"
        "# Licensed under the Deckhouse Platform Enterprise Edition (EE) license. "
        "See https://github.com/deckhouse/deckhouse/blob/main/ee/LICENSE\n",
    ),
    "shell script without extension": ("tools/run", f"#!/usr/bin/env bash\n{SPDX}set -e\n"),
    "header after other comments": ("a.sh", f"#!/bin/sh\n# what this does\n{SPDX}"),
}
BAD = {
    "no header": ("a.py", '"""A module."""\nimport os\n', "does not match"),
    "empty file": ("pkg/__init__.py", "", "no license header found"),
    "another company": (
        "a.py",
        "# Copyright (c) 2026 Example Corp\n# SPDX-License-Identifier: Apache-2.0\n",
        "does not match",
    ),
    "another license": (
        "a.py",
        "# Copyright (c) 2026 Flant JSC\n# SPDX-License-Identifier: MIT\n",
        "does not match",
    ),
    "apache text cut short": (
        "a.py",
        commented("Copyright 2023 Flant JSC\n\nLicensed under the Apache License"),
        "does not match",
    ),
    "code between the lines": (
        "a.py",
        "# Copyright (c) 2026 Flant JSC\nimport os\n# SPDX-License-Identifier: Apache-2.0\n",
        "does not match",
    ),
    "year out of range": ("a.py", commented(f"Copyright 1999 Flant JSC\n\n{APACHE_BODY}"), "does not match"),
    "no shebang, no extension": ("tools/data", "just text\n", "unsupported file type"),
    "header past 2048 bytes": ("a.py", "#\n" * 1100 + SPDX, "no license header found"),
}


@pytest.mark.parametrize(("name", "text"), GOOD.values(), ids=GOOD.keys())
def test_accepted_headers(name: str, text: str) -> None:
    assert check_content(name, text.encode()).valid


@pytest.mark.parametrize(("name", "text", "error"), BAD.values(), ids=BAD.keys())
def test_refused_headers(name: str, text: str, error: str) -> None:
    info = check_content(name, text.encode())
    assert not info.valid
    assert error in info.error


def test_the_year_and_edition_are_reported() -> None:
    info = check_content("a.py", commented(f"Copyright 2023 Flant JSC\n\n{APACHE_BODY}").encode())
    assert (info.kind, info.year) == ("CE", "2023")


@pytest.mark.parametrize(
    ("name", "selected"),
    [
        ("hooks/derive_settings.py", True),
        ("tools/gen-proto", True),
        (".ci/run", True),
        ("main.go", True),
        ("scripts/x.sh", True),
        ("Makefile", False),  # no directory part, and skipped by name
        ("images/x/Dockerfile", False),
        ("images/x/api.pb.go", False),
        ("a/lib/python/dist/six.py", False),
        ("templates/x.yaml", False),
        ("images/x/py.typed", False),
        ("README", False),  # at the root: the extension-less pattern needs a directory
    ],
)
def test_which_files_dmt_checks(name: str, selected: bool) -> None:
    assert dmt_selects(name) is selected


def run_tool(root: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--root", str(root)], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_the_tool_adds_the_header_once(tmp_path: Path) -> None:
    files = {
        "hooks/hook.py": '#!/usr/bin/env python3\n"""A hook."""\n\nimport sys\n',
        "pkg/module.py": '"""A module."""\n\nimport os\n',
        "pkg/__init__.py": "",
        "pkg/headed.py": f"{SPDX}\nimport os\n",
        "tools/run": "#!/usr/bin/env bash\n# Runs it.\nset -euo pipefail\n",
        "tools/legacy.py": "# -*- coding: utf-8 -*-\nx = 1\n",
        "templates/ignored.yaml": "kind: ConfigMap\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "tools" / "run").chmod(0o755)

    first = run_tool(tmp_path)
    for name in ("hooks/hook.py", "pkg/module.py", "pkg/__init__.py", "tools/run", "tools/legacy.py"):
        assert f"added header: {name}\n" in first, first
    assert "pkg/headed.py" not in first
    assert "ignored.yaml" not in first
    hook = (tmp_path / "hooks" / "hook.py").read_text()
    assert hook == f'#!/usr/bin/env python3\n{SPDX}\n"""A hook."""\n\nimport sys\n'
    assert (tmp_path / "pkg" / "__init__.py").read_text() == SPDX
    assert (tmp_path / "pkg" / "headed.py").read_text() == files["pkg/headed.py"]
    assert (tmp_path / "tools" / "legacy.py").read_text().startswith(f"# -*- coding: utf-8 -*-\n{SPDX}")
    assert os.access(tmp_path / "tools" / "run", os.X_OK)
    for name in checked(tmp_path, sorted(files)):
        assert check_content(name, (tmp_path / name).read_bytes()).valid, name
    compile((tmp_path / "hooks" / "hook.py").read_text(), "hook.py", "exec")

    second = run_tool(tmp_path)
    assert "added header" not in second, second
    assert (tmp_path / "hooks" / "hook.py").read_text() == hook


def test_the_tool_leaves_other_copyrights_alone(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    vendored = "# Copyright 2020 The Kubernetes Authors.\n# Licensed under the Apache License.\n"
    (tmp_path / "pkg" / "vendored.py").write_text(vendored)
    assert "another copyright" in run_tool(tmp_path)
    assert (tmp_path / "pkg" / "vendored.py").read_text() == vendored


def test_the_tool_carries_its_own_header() -> None:
    assert os.access(TOOL, os.X_OK)
    assert check_content("tools/add-license-headers", TOOL.read_bytes()).valid


def test_every_source_file_has_an_accepted_header() -> None:
    # Fails until tools/add-license-headers has been run over the tree.
    missing = [
        f"{name}: {info.error}"
        for name in checked(ROOT, project_files())
        if not (info := check_content(name, (ROOT / name).read_bytes())).valid
    ]
    assert not missing, (
        f"{len(missing)} files without an accepted header (run tools/add-license-headers):\n"
        + "\n".join(missing)
    )
