# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The images the module builds and deploys, by the name their digests have in the values.

Each is a final werf image ``gpu/<name>`` built from ``images/<dir>/werf.inc.yaml`` (``<name>`` is the
camelCased ``<dir>``), and its digest reaches the templates as
``.Values.global.modulesImages.digests.gpu.<name>``. ``tests/module/test_werf_images.py`` checks that
the werf configuration builds exactly these as final images; template tests can check that the
templates reference no other image.
"""

from __future__ import annotations

RUNTIME_IMAGES: frozenset[str] = frozenset(
    {"gpuNodeAgent", "gpuController", "gpuDraController", "gpuHandler", "nvidiaDcgm", "nvidiaDcgmExporter"}
)

# The platform's images (global.modulesImages.digests.common) the templates use, through
# templates/_helpers.tpl gpu.commonImage: Deckhouse builds them, not this module.
COMMON_IMAGES: frozenset[str] = frozenset({"kubeRbacProxy"})
