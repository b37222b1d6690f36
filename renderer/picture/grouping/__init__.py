"""Operators gathered into a tree of groups, so a big model can be drawn as an overview and a page per group.

Pure: IR in, group tree out (no Graphviz, no files). ``group`` holds the tree's ``Group``; ``build`` makes the tree
(``group_model``), reading scopes with ``scopes``, finding repeated blocks and cuts with ``blocks`` and naming what
no scope names with ``names``. The rules, in the order ``group_model`` applies them:

1. **Name scopes.** An operator's scope is, first found: torch dynamo's ``pkg.torch.onnx.name_scopes`` or
   ``namespace`` node metadata; its node name split on ``/`` (the last component is the op itself, a leading
   ``/`` is not a level); for nodes whose name has no scope (nameless TFLite and ONNX nodes, and the fused
   ``Attention_0`` or ``SkipLayerNorm_AddBias_3`` of onnxruntime's transformer optimizer, which keep the last
   fused operator's output name) the first output's name, taking the first of TFLite's ``;``-joined fused
   names. A graph uses names when at least ``SCOPED_SHARE`` of its drawn
   operators have a scope; otherwise all its operators are placed flat and cut into stages (rule 5).
2. **Subgraphs.** Every If/Loop/Scan body and TFLite subgraph is a group of kind ``graph``, placed beside the
   operator that owns it (top-level TFLite subgraphs under the root).
3. **Chains.** A scope group with no operators and one scope child becomes that child (label ``a/b``); a root
   or subgraph with only one scope child takes that scope's content (its loose operators stay beside it).
4. **Tiny leaves.** A one-operator scope group is dissolved into its parent, and so is a leaf scope group of
   at most ``INLINE_MAX`` operators when the parent's whole content fits one page (``max_items``): a page for
   a Linear's MatMul + Add helps nobody, while ``embeddings`` (3 ops) stays a box on a 400-op overview.
5. **Wide levels.** A group with more than ``max_items`` direct items (operators + child groups) is split,
   never drawn as a strip. Only operators: first a block repeated at least ``BLOCK_MIN_REPEATS`` times is
   looked for (``repeated_spans``: a flat-named transformer's layers, a CNN's identical bottlenecks); each
   repeat becomes a ``block`` group. Still only operators: cut them, in graph order, into contiguous ``stage``
   groups of ``max_items // 2`` to ``max_items`` operators at the narrowest points (fewest tensors crossing
   the cut). Graph order is the file's, or where a file lists an operator before the one making its input, an
   order that makes every tensor before it is read (``build._in_order``): each stage feeds only later ones.
   Mixed: each run of two or more consecutive loose operators becomes one ``gathered`` group; if still too wide,
   the items are cut into contiguous ``gathered`` runs the same way. Repeated while a level is
   too wide, so stages nest into super-stages. Cut-out runs are named last (``names.name_synthetic``) by the named
   groups they hold (``layers.12 … layers.25``), else by where they sit and what they compute
   (``between embeddings and encoder · Mul Div Floor Cast``), never by operator indices or counts.
6. **One box.** While the root holds a single group (not a body), it takes that group's content if the
   level still fits: an overview of one box would only be a click on the way.
7. **Depth.** With ``max_depth``, every group at that depth takes all operators below it as its own.
8. **Repeats.** Consecutive sibling scope, subgraph or block groups with the same structure (op types in graph order,
   and the internal edges between them) are marked: the first has ``repeat = N``, the others ``twin_of`` it. Not
   two with an operator of their level on a path from one to the other (a GPT-2's fused MLP, unscoped after
   onnxruntime's optimizer, between its ``h.N/attn`` groups): one box for both would draw edges out and back in.

Deterministic: the tree depends only on the model and the arguments; paths are unique.
"""

from __future__ import annotations

from renderer.picture.grouping.blocks import BLOCK_MAX_OPS, BLOCK_MIN_OPS, repeated_spans, segment
from renderer.picture.grouping.build import group_model, repeated_runs
from renderer.picture.grouping.group import KINDS, TWIN_KINDS, Group
from renderer.picture.grouping.names import SYNTHETIC_KINDS, computes, display_path, name_run, series_prefix, span_name
from renderer.picture.grouping.scopes import scope_of

__all__ = [
    "BLOCK_MAX_OPS",
    "BLOCK_MIN_OPS",
    "Group",
    "KINDS",
    "SYNTHETIC_KINDS",
    "TWIN_KINDS",
    "computes",
    "display_path",
    "group_model",
    "name_run",
    "repeated_runs",
    "repeated_spans",
    "scope_of",
    "segment",
    "series_prefix",
    "span_name",
]
