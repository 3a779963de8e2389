# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""A port of dmt's license rule: which files it checks and which headers it accepts.

Follows deckhouse/dmt pkg/linters/module/rules/license.go (the file selection) and
license_parser.go (reading the header and matching it against the accepted licenses):

- dmt walks the module directory (all but .git) and checks a file when its path relative to the
  module matches ``\\.go$|/[^.]+$|\\.sh$|\\.lua$|\\.py$`` (the middle one: an extension-less file below
  the module root) and does not match the skip list (Dockerfile, Makefile, /lib/python/,
  charts/helm_lib, generated Go, ...); .dmtlint.yaml adds exact files and directory prefixes
  under module.exclude-rules.license.
- The comment style comes from the extension; an extension-less file needs a ``#!/`` shebang that
  names sh/bash (shell) or python, else it is an unsupported file and fails.
- From the first 2048 bytes it takes, per comment style in order, the license text: for line
  comments, from the first comment line whose text starts with "copyright" (any case) up to a
  line with "limitations under the License" or "See https://github.com/deckhouse/deckhouse", or
  to the first non-comment line that is not blank; for block comments, the first block.
- That text matches a license when the license's template, with {{YEAR}} as 20[0-9]{2} and
  {{ANYTHING}} as any text, is found in it after both are normalized (lines trimmed, leading
  `*` of block comments dropped). An empty file has no header and fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

APACHE_BODY = """Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License."""


@dataclass(frozen=True)
class License:
    kind: str  # "CE" or "EE"
    name: str
    template: str
    year_pattern: str = ""


LICENSES = (
    License(
        "CE",
        "Apache License 2.0",
        f"Copyright {{{{YEAR}}}} Flant JSC{{{{ANYTHING}}}}\n\n{APACHE_BODY}",
        "20[0-9]{2}",
    ),
    License(
        "CE",
        "Apache License 2.0 Modified",
        "Copyright {{YEAR}} Flant JSC{{ANYTHING}}\n\n"
        f"Modifications made by Flant JSC as part of the Deckhouse project.\n\n{APACHE_BODY}",
        "20[0-9]{2}",
    ),
    License(
        "CE",
        "SPDX Apache-2.0",
        "Copyright (c){{ANYTHING}} Flant JSC{{ANYTHING}}\nSPDX-License-Identifier: Apache-2.0",
    ),
    License(
        "EE",
        "Deckhouse Platform Enterprise Edition",
        "Copyright {{YEAR}} Flant JSC{{ANYTHING}}\n"
        "Licensed under the Deckhouse Platform Enterprise Edition (EE) license. "
        "See https://github.com/deckhouse/deckhouse/blob/main/ee/LICENSE",
        "20[0-9]{2}",
    ),
)

# (line prefix, block start, block end) per comment style; the order is dmt's.
LINE = "line"
STYLES: dict[str, tuple[tuple[str, str], ...]] = {
    "go": ((LINE, "//"), ("/*", "*/")),
    "sh": ((LINE, "#"),),
    "py": ((LINE, "#"), ('"""', '"""'), ("'''", "'''")),
    "lua": ((LINE, "--"), ("--[[", "--]]")),
    "yaml": ((LINE, "#"),),
    "dockerfile": ((LINE, "#"),),
    "js": ((LINE, "//"), ("/*", "*/")),
    "c": ((LINE, "//"), ("/*", "*/")),
}
EXTENSIONS = {
    ".go": "go",
    ".sh": "sh",
    ".bash": "sh",
    ".py": "py",
    ".lua": "lua",
    ".yaml": "yaml",
    ".yml": "yaml",
    **dict.fromkeys((".js", ".ts", ".jsx", ".tsx"), "js"),
    **dict.fromkeys((".c", ".h", ".cpp", ".hpp", ".cc", ".hh"), "c"),
}
FILE_TO_CHECK = re.compile(r"\.go$|/[^.]+$|\.sh$|\.lua$|\.py$")
FILE_TO_SKIP = re.compile(
    r"geohash.lua$|\.github/.*|Dockerfile$|Makefile$|/docs/documentation/|/docs/site/|bashrc$|inputrc$"
    r"|modules_menu_skip$|LICENSE$|tools/spelling/.+|/lib/python/|charts/helm_lib|PROJECT|pb.go$"
    r"|zz_generated.go$|zz_generated.*\.go$|zz_generated.*\.yaml$"
)
HEADER_BYTES = 2048
SHEBANG_BYTES = 100


@dataclass(frozen=True)
class LicenseInfo:
    valid: bool
    kind: str = ""
    year: str = ""
    error: str = ""


def dmt_selects(relative: str) -> bool:
    """Whether dmt's license rule looks at this module-relative path at all."""
    return FILE_TO_CHECK.search(relative) is not None and FILE_TO_SKIP.search(relative) is None


def go_extension(name: str) -> str:
    """filepath.Ext: from the last dot of the last path element, "" without one."""
    base = name.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot:] if dot >= 0 else ""


def style_of(name: str, head: bytes) -> str | None:
    """The comment style dmt reads the file with; None for an unsupported file."""
    if name.endswith("Dockerfile"):
        return "dockerfile"
    extension = go_extension(name).lower()
    if extension in EXTENSIONS:
        return EXTENSIONS[extension]
    if extension == "":
        start = head[:SHEBANG_BYTES].decode(errors="replace")
        if start.strip().startswith("#!/"):
            if "sh" in start or "bash" in start:
                return "sh"
            if "python" in start:
                return "py"
    return None


def normalize(text: str) -> str:
    lines = text.strip().replace("\r\n", "\n").split("\n")
    cleaned = []
    for line in lines:
        cleaned.append(line.strip().removeprefix("* ").removeprefix(" *").removeprefix("*").strip())
    return "\n".join(cleaned)


def extract(header: str, style: tuple[str, str]) -> str:
    first, second = style
    if first != LINE:
        start = header.find(first)
        if start < 0:
            return ""
        end = header.find(second, start + len(first))
        return normalize(header[start + len(first) : end]) if end >= 0 else ""
    lines: list[str] = []
    in_license = False
    for raw in header.split("\n"):
        trimmed = raw.removesuffix("\r").strip()
        if trimmed.startswith(second):
            content = trimmed.removeprefix(second).strip()
            if not in_license and content.lower().startswith("copyright"):
                in_license = True
            if in_license:
                lines.append(content)
                if (
                    "limitations under the License" in content
                    or "See https://github.com/deckhouse/deckhouse" in content
                ):
                    break
        elif in_license and trimmed:
            break
    return "\n".join(lines)


def license_pattern(lic: License) -> re.Pattern[str]:
    parts = re.split(r"(\{\{YEAR\}\}|\{\{ANYTHING\}\})", normalize(lic.template))
    pattern = ""
    for part in parts:
        if part == "{{YEAR}}" and lic.year_pattern:
            pattern += f"({lic.year_pattern})"
        elif part == "{{ANYTHING}}":
            pattern += "(?s:.*)"
        else:
            pattern += re.escape(part)
    return re.compile(pattern)


def check_content(name: str, content: bytes) -> LicenseInfo:
    """dmt's ParseFile on a file named `name` holding `content`."""
    kind = style_of(name, content)
    if kind is None:
        return LicenseInfo(False, error=f"unsupported file type: {name}")
    header = content[:HEADER_BYTES].decode(errors="replace")
    text = next((t for style in STYLES[kind] if (t := extract(header, style))), "")
    if not text:
        return LicenseInfo(False, error="no license header found")
    for lic in LICENSES:
        found = license_pattern(lic).search(normalize(text))
        if found:
            return LicenseInfo(True, lic.kind, found.group(1) if found.groups() else "2025")
    return LicenseInfo(False, error="license header does not match any known license")


def check_file(path: Path) -> LicenseInfo:
    return check_content(str(path), path.read_bytes())


def exclusions(root: Path) -> tuple[set[str], tuple[str, ...]]:
    """module.exclude-rules.license of the module's .dmtlint.yaml: exact files, directory prefixes."""
    config_file = root / ".dmtlint.yaml"
    config = yaml.safe_load(config_file.read_text()) if config_file.exists() else None
    license_rule = (((config or {}).get("linters-settings") or {}).get("module") or {}).get(
        "exclude-rules"
    ) or {}
    license_rule = license_rule.get("license") or {}
    return set(license_rule.get("files") or []), tuple(license_rule.get("directories") or [])


def checked(root: Path, relative_names: list[str]) -> list[str]:
    """The names, relative to the module root, that dmt's license rule checks."""
    files, directories = exclusions(root)
    return [
        name
        for name in relative_names
        if dmt_selects(name) and name not in files and not name.startswith(directories)
    ]
