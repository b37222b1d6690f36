"""Names vulture cannot see used: each is called or read by a framework or a protocol, never by our code.

Only such names belong here; a name no framework reads is dead and goes (issue 29). ``_`` stands for any object.
"""

# ruff: noqa: F821  (the names are only mentioned, for vulture)

# a module's __getattr__ (PEP 562): renderer/__init__.py imports its faces lazily
__getattr__

# onnxruntime.SessionOptions, set for the runs (shape runs, compare, profiles)
_.enable_profiling
_.graph_optimization_level
_.intra_op_num_threads
_.log_severity_level
_.profile_file_prefix

# onnxruntime.quantization.CalibrationDataReader
_.get_next
_.rewind

# torch.nn.Module
_.forward

# tf.lite.TFLiteConverter (samples/tools)
_.optimizations
_.representative_dataset
_.supported_ops
_.inference_input_type
_.inference_output_type

# html.parser.HTMLParser
_.handle_starttag
_.handle_endtag
_.handle_startendtag
_.handle_data

# xml.parsers.expat parsers
_.StartElementHandler
_.EndElementHandler
_.CharacterDataHandler
_.StartDoctypeDeclHandler

# pypdf.PdfWriter: no random file identifier (compose/book_output.py)
_._ID

# IPython's display protocol (integrations/notebook.py); IPython passes include= and exclude= by name
_._repr_html_
_._repr_mimebundle_
include
exclude

# docutils directives and transforms (integrations/sphinx.py)
_.required_arguments
_.final_argument_whitespace
_.option_spec
_.default_priority

# pytest: a module's marks, hooks in conftest.py and their arguments (pytest passes them by name)
pytestmark
pytest_sessionfinish
_no_results_cache_outside_a_render  # an autouse fixture in conftest.py
exitstatus

# the file object zipfile.ZipFile reads a mapped .pt2 archive through (loaders/torch_export/archive.py)
_.seekable
_.tell

# pickle.Pickler, called for each object pickled (renderer/loaders/snapshot.py)
_.reducer_override
