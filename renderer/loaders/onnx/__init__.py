"""The ONNX loader (``loader``) and what it needs: the wire-level reads (``wire``), shapes from an onnxruntime run
(``ort_shapes``) or profile (``profile_shapes``)."""

__all__: list[str] = []
