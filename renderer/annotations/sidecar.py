"""Annotations that travel with a model: sidecar files next to it, found like debuggers find symbol files."""

from __future__ import annotations

from pathlib import Path

SIDECAR_SUFFIXES = (".json", ".yaml", ".yml", ".csv", ".txt")


def sidecars(model_path: str | Path) -> list[Path]:
    """``model.onnx.annotations.*`` and ``model.annotations.*`` beside the model, in a stable order."""
    path = Path(model_path)
    found: list[Path] = []
    for stem in (path.name, path.stem):
        for suffix in SIDECAR_SUFFIXES:
            candidate = path.with_name(f"{stem}.annotations{suffix}")
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
    return found
