"""The ExecuTorch loader (``loader``): the program's tables (``program``), the ETRecord beside it (``etrecord``), what
an XNNPACK delegate's blob holds (``xnnpack_blob``)."""

__all__: list[str] = []
