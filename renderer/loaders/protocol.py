"""What a loader module provides (``Loader``), and where a load takes the shapes that depend on input values
(``RealValues``). ``registry.LOADERS`` names one package per format whose ``loader`` module meets ``Loader``;
``tests/unit`` checks each against it, names and parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from renderer.core.ir import Model


@dataclass(frozen=True)
class RealValues:
    """Where a load takes the shapes that depend on the values of a model's inputs: without either, from one
    onnxruntime run on zero inputs (``ort_shapes``; ONNX).

    Attributes:
        inputs: an ``.npz`` file with one array per model input (``--inputs``): its shapes pin every input dim and
            one run on those values gives the rest (onnxruntime, or LiteRT for TFLite).
        profiles: onnxruntime profiles of the model (``-a``): the input and output shapes each operator recorded,
            no run (``profile_shapes``).
    """

    inputs: Path | None = None
    profiles: tuple[Path, ...] = ()


class Loader(Protocol):
    """A loader module: one model format read into the IR.

    Attributes:
        FORMAT: the format tag stored in ``Model.format``.
        EXTENSIONS: usual file extensions (lower case, with the dot), tried when no loader claims the first bytes.
    """

    FORMAT: str
    EXTENSIONS: tuple[str, ...]

    def match(self, head: bytes) -> bool:
        """A cheap check on the first bytes of the file."""
        ...

    def load(self, path: Path, dims: dict[str, int] | None = None, check_dims: bool = True,
             shape_run: bool = True, values: RealValues | None = None, assume: bool = True) -> Model:
        """Parse ``path``; raise LoaderError naming the file on any failure (and, with ``check_dims``, for a
        ``dims`` name the model cannot pin: ``core.pinning``). ``shape_run``: False skips the runtime run for
        shapes; ``values``: where shapes that depend on input values come from; ``assume``: free dims nothing
        pins take a stated value (``free_dims``, ``Model.assumed_dims``)."""
        ...

    def pinnable(self, path: Path) -> list[str]:
        """The names ``dims`` can pin, read without loading the whole model."""
        ...
