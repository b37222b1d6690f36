"""``annograph batch``: many heatmaps of a model from one Graphviz layout, many models in parallel.

``layout`` renders the graph once with fixed-width placeholders, ``svg_template`` cuts that SVG at the fills
and values, ``job`` makes one model's pictures (a pure function, so it runs the same in a worker process or on
a Dask cluster), ``parallel`` spreads jobs, ``contact_sheet`` writes index.html.
"""

from __future__ import annotations

from renderer.batch.job import ModelJob, ModelResult, Picture, run_job

__all__ = ["ModelJob", "ModelResult", "Picture", "run_job"]
