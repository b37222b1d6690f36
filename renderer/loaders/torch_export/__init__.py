"""The torch.export loader (``loader``): the PT2 archive read without torch or pickle (``archive``), the program's FX
graph (``graph``), its weights (``tensors``) and its symbolic sizes (``symbols``)."""

__all__: list[str] = []
