"""The OpenVINO execution graph loader (``loader``): the graph a compiled model ran, with its layer times."""

__all__: list[str] = []
