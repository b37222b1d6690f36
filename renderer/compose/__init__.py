"""The composer, the one place that joins the picture and the reports: model + annotations + options → scene →
DOT → Graphviz → the output plan's files (``rendering``, ``book_output``, ``output_plan``)."""

__all__: list[str] = []
