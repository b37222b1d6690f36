"""Models as onnxruntime's static quantizer writes them, calibrated on a few random inputs (seed 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def quantize_static_random(source: Path, target: Path, **options: Any) -> Path:
    """``quantize_static(source, target, ...)`` with three random batches (free dims 1); ``options`` are the
    quantizer's (``quant_format``, ``activation_type``, ``weight_type``…)."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    inputs = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()

    class Random(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            self.batches = iter([
                {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
                 for i in inputs}
                for _ in range(3)
            ])

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.batches, None)

    quantize_static(str(source), str(target), Random(), **options)
    return target
