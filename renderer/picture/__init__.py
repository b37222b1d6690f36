"""The picture pipeline: from a loaded model and its annotations to finished files.

prepare (built-in metrics, heatmaps) → fold (constants into the boxes that read them) → group (the model's own
scopes and repeated blocks) → pages (a flat picture, or an overview with detail pages sized to fit) → DOT →
Graphviz layout → book output (every output of one run written together).

What is written where (formats, pages folders, page files and their links, inputs never overwritten, the one
all-or-nothing write) is the output plan's (``output_plan``), made once per command from the output names.
"""
