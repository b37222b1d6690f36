"""The OpenVINO IR loader (``loader``): a model's ``.xml`` and the ``.bin`` beside it; ``build`` turns an
OpenVINO XML net into the IR for it and for the execution graph's loader (``loaders.openvino_exec``)."""

__all__: list[str] = []
