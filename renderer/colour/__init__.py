"""Colour: colour maps (``maps``), a metric's values fitted to a map (``heatmap``), group sums (``aggregate``)."""

__all__: list[str] = []
