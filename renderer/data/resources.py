"""Where the data folders are: inside the installed package (``renderer.templates``, ``renderer.colormaps``,
mapped from the top-level ``templates/`` and ``colormaps/`` at build time) or beside ``renderer/`` in a checkout."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


def folder(name: str) -> Traversable:
    """The ``templates`` or ``colormaps`` folder."""
    try:
        found = resources.files(f"renderer.{name}")
        if found.is_dir():
            return found
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / name
