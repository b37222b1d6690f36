"""The TensorRT loader (``loader``): an engine's layer graph as ``trtexec --exportLayerInfo`` writes it."""

__all__: list[str] = []
