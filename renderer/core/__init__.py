"""The shared core every layer may use: the object model (``ir``), annotation records, render options, id rules,
dimension pinning, numbers, escaping, errors and progress."""

__all__: list[str] = []
