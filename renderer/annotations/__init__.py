"""Annotations: one reader per source (``readers/``, each meeting ``protocol.Reader``), the registry that picks
one for a file and loads a model's annotations (``registry``), their merge onto the model (``merge``), the id
look-up readers share (``lookup``) and what the readers' values mean (``measures``, ``metric_meta``, ``style``).
"""

from __future__ import annotations

from renderer.annotations.merge import merge
from renderer.annotations.protocol import Reader
from renderer.annotations.registry import (
    READERS,
    input_paths,
    load_annotations,
    model_files,
    read_file,
    reader,
    reader_modules,
    reader_of,
    shape_profiles,
)

__all__ = [
    "READERS",
    "Reader",
    "input_paths",
    "load_annotations",
    "merge",
    "model_files",
    "read_file",
    "reader",
    "reader_modules",
    "reader_of",
    "shape_profiles",
]
