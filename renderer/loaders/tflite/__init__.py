"""The TFLite loader (``loader``): the flatbuffer layout (``layout``), sparse tensors (``sparsity``), shapes from a
LiteRT run (``litert_shapes``)."""

__all__: list[str] = []
