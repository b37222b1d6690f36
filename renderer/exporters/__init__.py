"""Exporters: annotations out to other viewers and formats."""
