"""Files in and out: bounded reading of inputs, atomic writes, output formats by extension, page file names."""

__all__: list[str] = []
