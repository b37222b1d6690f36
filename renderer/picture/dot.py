"""The DOT emitter: IR + annotations + heatmaps → DOT text. Pure: no subprocess, no files.

Element ids in the SVG (set through Graphviz's ``id`` attribute):
    ``op-S-N``   operator N of graph S           class ``op cat-<category>``
    ``t-S-N``    the first edge of tensor N       class ``tensor``; further edges ``t-S-N.K``
    ``io-S-N``   the box of graph input/output tensor N
    ``legend``   the title, meta and colour-bar table
All user text reaches the DOT only through ``renderer.core.escape``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import graphviz

from renderer.colour.heatmap import Heatmap
from renderer.colour.maps import NA_COLOR, category_colors, text_color
from renderer.core import escape
from renderer.core.ir import Graph, Model, Node, SubgraphRef, Value
from renderer.core.numbers import format_number
from renderer.core.records import Entry, metric_value
from renderer.picture.columns import Columns, Sheet
from renderer.picture.digraph import Digraph
from renderer.picture.fanout import far_readers
from renderer.picture.folding import NodeKey
from renderer.picture.scene import Scene

FONT = "Helvetica"
BORDER_COLOR = "#5a5a5a"
PLAIN_FILL = "#ffffff"
EDGE_COLOR = "#606060"
LINK_COLOR = "#1a4f8b"
"""Ink of a link in a stub: to another page, or from a far reader to its tensor's producer (``fanout``)."""
LABEL_CHARS = 48
CAPTION_CHARS = 64
DEFAULT_SHOWN_VALUES = 3
FOLDED_OPS_LISTED = 12  # annotated folded ops listed in the tooltip of the box that reads them
MAX_DRAWN_VALUES = 40
"""Values drawn in one box (``--show all``); the rest are counted in a last row and listed in the tooltip."""
EDGE_COLOR_FLOOR = 0.35
LEGEND_VALUE_CHARS = 120
"""A graph value longer than this is no caption: the legend shows its length (``_meta_row``)."""
LEGEND_TOOLTIP_CHARS = 2000
LEGEND_META_ROWS = 24
"""Totals and graph values listed in the legend (a diff lists its top regressions and improvements there)."""
BORDER_STYLES = frozenset({"dashed", "dotted"})
"""Operator ``style`` words drawn on the box border (an HTML-like table takes one)."""


def emit(scene: Scene, columns: Columns | None = None) -> str:
    """The DOT source for ``scene``; in ``columns`` (``renderer.picture.columns``) once they are cut."""
    return Emitter(scene, columns).run()


class Emitter:
    """The DOT of a scene: the whole graph, or (extended by ``dot_pages``' page emitter) one page of a book. Its
    building blocks for subclasses are the methods without a leading underscore and the module's public helpers
    (``op_name``, ``io_name``, ``origin_id``, ``text_row``, ``unique_nodes``)."""

    def __init__(self, scene: Scene, columns: Columns | None = None) -> None:
        self.scene = scene
        self.columns = columns
        if columns is not None:
            columns.rankdir = scene.options.rankdir
        self.model = scene.model
        self.opts = scene.options
        self.folding = scene.folding
        self.highlight: frozenset[tuple[str, int, int]] = frozenset()
        self.cat_colors = category_colors()
        self.drawn_graphs: set[int] = set()
        self.far: dict[object, set[str]] = {}
        """Tensor key → the readers drawn with a stub of their own (``fanout``)."""
        self.value_lines: dict[int, str] = {}
        """id(tensor) → its line in tooltips (``_value_line``): the tensors live as long as the scene."""

    # -- top level ------------------------------------------------------------------------------------------

    def run(self) -> str:
        opts = self.opts
        dot = Digraph("annograph")
        dot.attr(
            "graph", rankdir=opts.rankdir, fontname=FONT, fontsize="11", nodesep="0.25", ranksep="0.35",
            bgcolor="#ffffff", compound="true", newrank="true", id="graph", pad="0.3",
        )
        dot.attr("node", shape="plain", fontname=FONT, fontsize="10", margin="0")
        dot.attr("edge", fontname=FONT, fontsize="8", color=EDGE_COLOR, fontcolor="#333333", arrowsize="0.6")
        sheet = Sheet(dot, self.columns)
        sheet.node("legend", label=escape.html_label(self._legend()), id="legend", tooltip=self._legend_tooltip())
        self.far = self._far_readers()
        self._graph_body(sheet, self.model.main)
        for graph in self.model.graphs[1:]:
            if graph.index not in self.drawn_graphs:  # subgraphs nobody references (other signatures)
                self._cluster(sheet, graph)
        sheet.finish()
        return dot.source

    # -- graphs ---------------------------------------------------------------------------------------------

    def _graph_body(self, container: Sheet, graph: Graph) -> None:
        self.drawn_graphs.add(graph.index)
        for value in graph.inputs:
            self._io_node(container, value, "input")
        for node in graph.nodes:
            if self.folding.is_hidden(node):
                continue
            self._op_node(container, node)
            for sub in node.subgraphs:
                if sub.index not in self.drawn_graphs:
                    self._cluster(container, sub)
                    self._link_cluster(container, node, sub)
        if self.opts.show_constants:
            for value in graph.values:
                if value.is_constant and value.producer is None and value.consumers:
                    self._constant_node(container, value)
        for value in graph.outputs:
            self._io_node(container, value, "output")
        for value in graph.values:
            self._edges(container, value)

    def _cluster(self, container: Sheet, graph: Graph) -> None:
        with container.subgraph(name=f"cluster_{graph.index}") as sub:
            owner = graph.parent
            caption = f"graph {graph.index}"
            if graph.name:
                caption += f": {graph.name}"
            if owner is not None:
                caption += f"  (body of {owner.op_type} {owner.graph.index}:{owner.index})"
            sub.attr(
                label=escape.html_label(
                    f'<FONT POINT-SIZE="10" COLOR="#333333">{escape.html_text(caption, 90)}</FONT>'),
                style="rounded,dashed", color="#8c8c8c", id=f"graph-{graph.index}", labeljust="l",
            )
            self._graph_body(sub, graph)

    def _link_cluster(self, container: Sheet, node: Node, sub: Graph) -> None:
        target = self._any_drawn_node(sub)
        if target is None:
            return
        container.edge(
            op_name(node), target, lhead=f"cluster_{sub.index}", style="dashed", color="#8c8c8c",
            arrowhead="odot", id=f"link-{node.graph.index}-{node.index}-{sub.index}",
            tooltip=escape.tooltip([f"{node.op_type} runs graph {sub.index}"]),
        )

    def _any_drawn_node(self, graph: Graph) -> str | None:
        if graph.inputs:
            return io_name(graph.inputs[0])
        for node in graph.nodes:
            if not self.folding.is_hidden(node):
                return op_name(node)
        if graph.outputs:
            return io_name(graph.outputs[0])
        return None

    # -- nodes ----------------------------------------------------------------------------------------------

    def _op_node(self, container: Sheet, node: Node) -> None:
        made = (node.key, node.key in self.highlight)
        box = self.scene.op_boxes.get(made)
        if box is None:
            box = self.scene.op_boxes[made] = self._op_box(node)
        attrs_out = {"id": node.element_id, "class": f"op cat-{node.category}", "tooltip": box[1]}
        container.node(op_name(node), label=box[0], **attrs_out)

    def _op_box(self, node: Node) -> tuple[str, str]:
        """An operator box's label and tooltip (``Scene.op_boxes`` keeps them)."""
        entry = self.scene.annotations.ops.get(node.key)
        fill = self._fill(node, entry)
        ink = text_color(fill)
        header_fill = self.cat_colors.get(node.category, self.cat_colors["other"])
        header_ink = text_color(header_fill)
        rows = [
            f'<TR><TD BGCOLOR="{header_fill}" ALIGN="LEFT" BALIGN="LEFT"><FONT COLOR="{header_ink}" POINT-SIZE="11">'
            f"<B>{escape.html_text(_type_text(node), 40)}</B></FONT>"
            f'<FONT COLOR="{header_ink}" POINT-SIZE="8">  {node.graph.index}:{node.index}</FONT></TD></TR>'
        ]
        if node.name:
            rows.append(text_row(escape.html_text(node.title or node.name, LABEL_CHARS, middle=True), ink, size=8))
        folded = self.folding.folded_inputs(node)
        for slot, value in folded[:4]:
            rows.append(text_row(self._constant_text(node, slot, value), ink, size=8))
        extra = len(folded) - 4
        if extra > 0:
            rows.append(text_row(f"+{extra} more folded inputs", ink, size=8))
        for line in _attribute_lines(node, self.opts.max_attributes):
            rows.append(text_row(escape.html_text(line, LABEL_CHARS + 12), ink, size=8))
        shown = self._shown_values(entry, node.metadata)
        for key, value in shown[:MAX_DRAWN_VALUES]:
            rows.append(text_row(f"{escape.html_text(key, 28)}: <B>{escape.html_text(_box_text(value), 24)}</B>", ink))
        if len(shown) > MAX_DRAWN_VALUES:
            rows.append(text_row(f"+{len(shown) - MAX_DRAWN_VALUES} more values (in the tooltip)", ink, size=8))
        heatmap = self.scene.heatmap
        if heatmap is not None and node.key not in heatmap.values and heatmap.metric not in dict(shown):
            rows.append(text_row(f"{escape.html_text(self.scene.heatmap.metric, 28)}: n/a", ink))
        border_color, border, line = BORDER_COLOR, 1, ""
        if entry is not None:
            border_color = entry.style.get("color", BORDER_COLOR)[:7]
            border = max(1, min(8, round(float(entry.style.get("penwidth", 1)))))
            line = next((f' STYLE="{w}"' for w in entry.style.get("style", "").split(",") if w in BORDER_STYLES), "")
        if node.key in self.highlight:
            border_color, border = "#000000", 4
        label = (
            f'<TABLE BORDER="{border}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" COLOR="{border_color}" '
            f'BGCOLOR="{fill}"{line}>{"".join(rows)}</TABLE>'
        )
        return escape.html_label(label), self._op_tooltip(node, entry)

    def _fill(self, node: Node, entry: Entry | None) -> str:
        if entry is not None and "fillcolor" in entry.style:
            return entry.style["fillcolor"][:7]
        if self.scene.heatmap is not None:
            return self.scene.heatmap.color(node.key)
        return PLAIN_FILL

    def _shown_values(self, entry: Entry | None, stored: dict[str, str]) -> list[tuple[str, object]]:
        """The values a box lists: by default the colour metric and a few more, leaving out built-in metrics
        and the text the model file stores with the node (an exporter's ``pkg.torch.onnx.*`` or
        ``namespace``: it stays in the tooltip), which ``--show all`` or ``--show KEY`` bring back."""
        if entry is None:
            return []
        show = self.opts.show
        metric = self.scene.heatmap.metric if self.scene.heatmap else None
        if show is None:
            metrics = self.scene.annotations.metrics
            keys = [metric] if metric and metric in entry.values else []
            keys += [k for k, v in entry.values.items()
                     if k != metric and (k not in metrics or metrics[k].source != "builtin")
                     and not _stored_text(k, v, stored)][:DEFAULT_SHOWN_VALUES]
        elif show == ["all"]:
            keys = list(entry.values)
        else:
            keys = [k for k in show if k in entry.values]
        return [(k, entry.values[k]) for k in keys]

    def _constant_text(self, node: Node, slot: int, value: Value) -> str:
        """``name [shape] dtype`` of a folded input: the stored tensor (``float16→float32`` when a folded op
        only changes its storage), or the computed value's own type, marked ``(computed)``."""
        name = node.input_names[slot] if slot < len(node.input_names) else _short(value.name) or f"in{slot}"
        stored = value if value.is_constant else self.folding.stored(value)
        if stored is None:
            shape = value.type.shape_text() if value.type is not None else "?"
            dtype = f"{value.type.dtype if value.type else '?'} (computed)"
        else:
            tensor = stored.initializer
            dims = (tensor.dense_shape if tensor.dense_shape is not None else tensor.shape) if tensor else ()
            shape = "×".join(str(d) for d in dims) if dims else "scalar"
            dtype = tensor.dtype if tensor else (stored.type.dtype if stored.type else "?")
            sparse = " sparse" if tensor is not None and tensor.dense_shape is not None else ""
            if stored is not value and value.type is not None and value.type.dtype != dtype:
                dtype = f"{dtype}{sparse}→{value.type.dtype}"
            else:
                dtype += sparse
        return (f"{escape.html_text(name, 20, middle=True)} [{escape.html_text(shape, 30)}] "
                f"{escape.html_text(dtype, 30)}")

    def _op_tooltip(self, node: Node, entry: Entry | None) -> graphviz.quoting.NoHtml:
        lines = [f"{_type_text(node)}  (operator {node.graph.index}:{node.index}, {node.element_id})"]
        if node.name:
            lines.append(f"name: {node.name}")
        for i, value in enumerate(node.inputs):
            if value is not None:
                slot = node.input_names[i] if i < len(node.input_names) else f"input {i}"
                lines.append(f"{slot}: {self._value_line(value)}")
        lines += [f"→ {self._value_line(value)}" for value in node.outputs]
        lines.extend(self._folded_lines(node))
        for key, value in node.attributes.items():
            lines.append(f"{key} = {escape.clean(_value_text(value), 120)}")
        lines.extend(_stored_and_annotated(node.metadata, entry))
        formula = self._formula(node)
        if formula:
            lines.append(f"macs = {formula} (of the assumed dims)")
        return escape.tooltip(lines)

    def _value_line(self, value: Value) -> str:
        """``name type`` of a tensor in its writer's and readers' tooltips, made once an emission."""
        line = self.value_lines.get(id(value))
        if line is None:
            line = self.value_lines[id(value)] = f"{escape.clean(value.name, 80)} {value.type or ''}"
        return line

    def _formula(self, node: Node) -> str:
        """The op's MACs as a polynomial of the assumed dims (``metrics.dim_formulas``), "" without one."""
        if not self.model.assumed_dims:
            return ""
        from renderer.metrics.dim_formulas import formulas

        found = formulas(self.model)
        polynomial = found.ops.get(node.key) if found is not None else None
        return polynomial.text() + found.at() if polynomial is not None else ""  # type: ignore[union-attr]

    def _folded_lines(self, node: Node) -> list[str]:
        """What the folded inputs of ``node`` were computed from, and the annotations of the folded ops."""
        lines: list[str] = []
        annotated: set[NodeKey] = set()
        for slot, value in self.folding.folded_inputs(node):
            if value.producer is not None:
                annotated.add(value.producer.key)  # a Constant node may carry annotations too
            how = self.folding.computation(value)
            if how is None:
                continue
            annotated |= how.ops
            if self.folding.stored(value) is not None:
                continue
            text = f"{node.input_names[slot] if slot < len(node.input_names) else f'input {slot}'}: computed by "
            text += f"{len(how.ops)} folded op{'s' if len(how.ops) > 1 else ''}"
            if how.shapes_of:
                names = ", ".join(escape.clean(v.name or f"tensor {v.graph.index}:{v.index}", 80)
                                  for v in how.shapes_of[:3])
                text += f" from the shape of {names}" + (f" and {len(how.shapes_of) - 3} more"
                                                         if len(how.shapes_of) > 3 else "")
            lines.append(text)
        graphs, ops = self.model.graphs, self.scene.annotations.ops
        with_values = [key for key in sorted(annotated) if key in ops and ops[key].values]
        for _, g, i in with_values[:FOLDED_OPS_LISTED]:
            producer = graphs[g].nodes[i]
            shown = ", ".join(f"{escape.clean(k, 40)} {escape.clean(_value_text(v), 40)}"
                              for k, v in list(ops[("op", g, i)].values.items())[:6])
            lines.append(f"folded {_type_text(producer)} {g}:{i}: {shown}")
        if len(with_values) > FOLDED_OPS_LISTED:
            lines.append(f"… and {len(with_values) - FOLDED_OPS_LISTED} more folded ops with values")
        return lines

    def _io_node(self, container: Sheet, value: Value, role: str) -> None:
        fill = "#eef3f8" if role == "input" else "#f3eef8"
        text = (
            f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="4" COLOR="{BORDER_COLOR}" '
            f'BGCOLOR="{fill}" STYLE="rounded"><TR><TD><FONT POINT-SIZE="8" COLOR="#333333">{role}</FONT></TD></TR>'
            f"<TR><TD><B>{escape.html_text(value.name or f'tensor {value.index}', LABEL_CHARS)}</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="8">{escape.html_text(str(value.type) if value.type else "?", LABEL_CHARS)}'
            f"</FONT></TD></TR></TABLE>"
        )
        container.node(
            io_name(value, role), label=escape.html_label(text), id=f"io-{value.graph.index}-{value.index}"
            + ("" if role == "input" else "-out"), **{"class": f"graph-{role}"}, tooltip=self._tensor_tooltip(value),
        )

    def _constant_node(self, container: Sheet, value: Value) -> None:
        text = (
            f'<TABLE BORDER="1" CELLBORDER="0" CELLPADDING="2" COLOR="#9a9a9a" BGCOLOR="#f7f7f7">'
            f'<TR><TD><FONT POINT-SIZE="8">{escape.html_text(value.name, LABEL_CHARS)}<BR/>'
            f"{escape.html_text(str(value.type) if value.type else '?', LABEL_CHARS)}</FONT></TD></TR></TABLE>"
        )
        container.node(_const_name(value), label=escape.html_label(text), id=f"const-{value.graph.index}-{value.index}",
                       tooltip=self._tensor_tooltip(value), **{"class": "constant"})

    # -- edges ----------------------------------------------------------------------------------------------

    def _edges(self, container: Sheet, value: Value) -> None:
        ends = self._edge_ends(value)
        if ends is None:
            return
        source, targets = ends
        attrs = self._edge_style(value)
        far = self.far.get(value.key, set())
        for k, target in enumerate(targets):
            element = value.element_id if k == 0 else f"{value.element_id}.{k}"
            start = source
            if target in far:
                start = f"use_{value.graph.index}_{value.index}_{k}"
                self._use_node(container, value, start, f"use-{value.graph.index}-{value.index}-{k}",
                               escape.href(f"#{origin_id(value)}"))
            container.edge(start, target, id=element, **attrs)

    def _edge_ends(self, value: Value) -> tuple[str, list[str]] | None:
        """The dot names of ``value``'s source and readers in the flat picture, None when it has no edge."""
        producer = value.producer
        if producer is not None and self.folding.is_hidden(producer):
            return None
        if producer is not None:
            source = op_name(producer)
        elif value.is_input:
            source = io_name(value)
        elif value.is_constant and self.opts.show_constants:
            source = _const_name(value)
        else:
            return None  # a constant not drawn, or produced in no graph we draw (dangling reference)
        targets = [op_name(c) for c in unique_nodes(value.consumers) if self.folding.is_drawn(c)]
        if value.is_output and value.graph.outputs and any(v is value for v in value.graph.outputs):
            targets.append(io_name(value, "output"))
        return (source, targets) if targets else None

    def _far_readers(self) -> dict[object, set[str]]:
        """``fanout.far_readers`` over the whole flat picture."""
        fans: list[tuple[object, list[tuple[str, str]]]] = []
        for graph in self.model.graphs:
            for value in graph.values:
                ends = self._edge_ends(value)
                if ends is not None:
                    fans.append((value.key, [(ends[0], target) for target in ends[1]]))
        edges = [pair for _, pairs in fans for pair in pairs]
        return far_readers(fans, edges, lambda name: name.startswith("op_"))  # type: ignore[return-value]

    def _use_node(self, container: Sheet, value: Value, name: str, ident: str, href: str,
                  where: str = "") -> None:
        """The stub at a far reader of a crowded tensor (``fanout``): ``x_mask · from Cast 0:12``, linked to
        ``href`` (the producer, ``where`` it is: "on page 3")."""
        producer = value.producer
        if producer is not None:
            place = f"{producer.graph.index}:{producer.index}"
            origin = f"from {_type_text(producer)} {place}"
            whose = f"{origin}{where}: {producer.display_name}"
            # too long, the domain goes (in the tooltip still), then the type is cut: never the place
            kind = _type_text(producer) if len(origin) <= 48 else producer.op_type
            shown_origin = f"{escape.html_text(f'from {kind}', 47 - len(place))} {place}"
        else:
            origin = "model input" if value.graph.parent is None else f"input of {value.graph.name or 'a body'}"
            whose = f"{origin}{where}"
            shown_origin = escape.html_text(origin, 48)
        shown = _short(value.name) or f"tensor {value.graph.index}:{value.index}"
        text = f"{escape.html_text(shown, 28, middle=True)} · {shown_origin}"
        label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLPADDING="2" COLOR="#9a9a9a" BGCOLOR="#f4f4f4" '
                 f'STYLE="rounded,dashed"><TR><TD><FONT POINT-SIZE="8" COLOR="{LINK_COLOR}"><U>{text}</U></FONT>'
                 f"</TD></TR></TABLE>")
        tip = [f"{escape.clean(value.name, 120) or '(unnamed)'}  (tensor {value.graph.index}:{value.index})",
               escape.clean(whose, 200), "read by many boxes on this page: drawn once, with a stub like this one "
               "at each reader further down"]
        linked = {"href": href} if href else {}
        container.node(name, label=escape.html_label(label), id=ident, tooltip=escape.tooltip(tip), **linked,
                       **{"class": "use"})

    def _edge_style(self, value: Value) -> dict[str, object]:
        """The attributes of ``value``'s edges (``Scene.edge_styles`` keeps them: not to be changed)."""
        attrs = self.scene.edge_styles.get(value.key)
        if attrs is None:
            attrs = self.scene.edge_styles[value.key] = self._edge_attributes(value)
        return attrs

    def _edge_attributes(self, value: Value) -> dict[str, object]:
        entry = self.scene.annotations.tensors.get(value.key)
        attrs: dict[str, object] = {"class": "tensor", "tooltip": self._tensor_tooltip(value, entry)}
        if self.opts.edge_labels and value.type is not None:
            attrs["label"] = escape.attr(value.type.shape_text(), 40)
        edge_map = self.scene.edge_map
        if edge_map is not None:
            number = edge_map.values.get(value.key)
            if number is not None:
                position = edge_map.scale.position(number)
                attrs["penwidth"] = f"{0.8 + 3.7 * position:.2f}"
                # the pale low end of a sequential map would vanish against the white page
                attrs["color"] = edge_map.scale.color_at(EDGE_COLOR_FLOOR + (1 - EDGE_COLOR_FLOOR) * position)
        if entry is not None:
            attrs.update(entry.style)
        return attrs

    def _tensor_tooltip(self, value: Value, entry: Entry | None = None) -> graphviz.quoting.NoHtml:
        if entry is None:
            entry = self.scene.annotations.tensors.get(value.key)
        where = f"tensor {value.graph.index}:{value.index}, {value.element_id}"
        lines = [f"{escape.clean(value.name, 120) or '(unnamed)'}  ({where})"]
        if value.type is not None:
            lines.append(str(value.type))
            if value.type.shape_signature is not None:
                lines.append(f"shape signature: {list(value.type.shape_signature)}")
        if value.quantization is not None:
            lines.append(f"quantization: {value.quantization}")
        lines.extend(_stored_and_annotated(value.metadata, entry))
        return escape.tooltip(lines)

    # -- legend ---------------------------------------------------------------------------------------------

    def _legend(self, crumbs: str = "", totals: dict[str, str] | None = None, nodes: list[Node] | None = None,
                group_heat: Heatmap | None = None, ops_bar: bool = True, graph_meta: bool = True) -> str:
        """The legend table: title, format, ``crumbs`` (a page's place in a book), totals, graph meta (unless not
        ``graph_meta``), colour bars (operators' unless not ``ops_bar``; the groups' ``group_heat``) and the
        category colours of ``nodes`` (default every drawn operator)."""
        scene, model = self.scene, self.model
        graph_values = dict(scene.annotations.graph.values)
        title = self.opts.title or graph_values.pop("title", None) or model.path.replace("\\", "/").rsplit("/", 1)[-1]
        if not graph_meta:
            graph_values = {}
        rows = [f'<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{escape.html_text(title, 80)}</B>'
                '</FONT></TD></TR>']
        subtitle = f"{model.format.upper()} · {model.version}"
        if model.producer:
            subtitle += f" · {model.producer}"
        rows.append('<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#444444">'
                    f'{escape.html_text(subtitle, 100)}</FONT></TD></TR>')
        if crumbs:
            rows.append(crumbs)
        if totals is None:
            totals = dict(scene.totals)
            folded = len(self.folding.hidden)
            if folded and "operators" in totals:
                totals["operators"] += f" ({folded:,} folded into the boxes that read them)"
        meta = list(totals.items()) + [(k, _value_text(v)) for k, v in graph_values.items()]
        for i, (key, value) in enumerate(meta[:LEGEND_META_ROWS]):
            if i == len(totals) and model.assumed_dims:
                rows.append(self._made_once("assumed", lambda: _assumed_row(model)))  # before the graph's values
            rows.append(_meta_row(key, value))
        if model.assumed_dims and len(totals) >= min(len(meta), LEGEND_META_ROWS):
            rows.append(self._made_once("assumed", lambda: _assumed_row(model)))
        if group_heat is not None:
            rows.append(self._colorbar(group_heat, "group box fill"))
        for heat, what in ((scene.heatmap if ops_bar else None, "box fill"), (scene.edge_map, "edge width and colour")):
            if heat is not None:  # the scene's own maps: the same bar on every page
                rows.append(self._made_once(what, lambda heat=heat, what=what: self._colorbar(heat, what)))
        shown = nodes if nodes is not None else [n for n in model.nodes() if self.folding.is_drawn(n)]
        categories = sorted({n.category for n in shown})
        if categories:
            cells = "".join(
                f'<TD BGCOLOR="{self.cat_colors.get(c, self.cat_colors["other"])}">'
                f'<FONT POINT-SIZE="8" COLOR="{text_color(self.cat_colors.get(c, self.cat_colors["other"]))}">'
                f'{c}</FONT></TD>'
                for c in categories
            )
            rows.append(
                f'<TR><TD COLSPAN="2" ALIGN="LEFT"><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">'
                f'<TR><TD><FONT POINT-SIZE="8">header colour:</FONT></TD>{cells}</TR></TABLE></TD></TR>'
            )
        return (
            f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" COLOR="#9a9a9a" BGCOLOR="#ffffff">'
            f'{"".join(rows)}</TABLE>'
        )

    def _made_once(self, what: str, make: Callable[[], str]) -> str:
        """A legend row every page of the book shows alike, made by ``make`` for the first (``Scene.legend_rows``)."""
        rows = self.scene.legend_rows
        row = rows.get(what)
        if row is None:
            row = rows[what] = make()
        return row

    def _legend_tooltip(self, graph_meta: bool = True) -> str:
        """The legend's hover text: "legend", and the graph values too long for it (``_meta_row``) if it lists
        them (``graph_meta``), each cut at ``LEGEND_TOOLTIP_CHARS``."""
        values = {k: _value_text(v) for k, v in self.scene.annotations.graph.values.items()
                  if k != "title" and graph_meta}
        lines = [f"{escape.clean(k, 40)}: {escape.clean(v, LEGEND_TOOLTIP_CHARS)}" for k, v in values.items()
                 if len(v) > LEGEND_VALUE_CHARS]
        return escape.tooltip(["legend", *lines], 4 * LEGEND_TOOLTIP_CHARS) if lines else escape.attr("legend")

    def _colorbar(self, heat: Heatmap, what: str) -> str:
        scale = heat.scale
        name = heat.title()
        notes = [what, *heat.notes()]
        floor = EDGE_COLOR_FLOOR if heat is self.scene.edge_map else 0.0
        gradient = scale.gradient(20, floor)
        cells = "".join(f'<TD BGCOLOR="{c}" WIDTH="12" HEIGHT="14"> </TD>' for c in gradient)
        ticks = scale.ticks(5)
        tick_cells = "".join(
            f'<TD COLSPAN="{_span(i, len(ticks), len(gradient))}" ALIGN="{_tick_align(i, len(ticks))}">'
            f'<FONT POINT-SIZE="8">{escape.html_text(format_number(t), 12)}</FONT></TD>'
            for i, t in enumerate(ticks)
        )
        single = scale.single_value()
        if single is not None:  # one swatch and the value, not a gradient no box uses
            cells = (f'<TD BGCOLOR="{scale.color(single)}" WIDTH="24" HEIGHT="14"> </TD><TD ALIGN="LEFT">'
                     f'<FONT POINT-SIZE="8"> {escape.html_text("all values " + format_number(single), 40)}</FONT></TD>')
            tick_cells = ""
        missing = len(scene_values_missing(heat, self))
        na = (
            f'<TD WIDTH="6"> </TD><TD BGCOLOR="{NA_COLOR}" WIDTH="22"><FONT POINT-SIZE="8">n/a</FONT></TD>'
            f'<TD ALIGN="LEFT"><FONT POINT-SIZE="8"> {missing} without a value</FONT></TD>'
            if missing else ""
        )
        # the description is wrapped under the name, so a long one cannot widen the whole legend
        described = ""
        if heat.info.description:
            lines = textwrap.wrap(escape.clean(heat.info.description, CAPTION_CHARS * 3), CAPTION_CHARS)
            described = "".join(f'<BR ALIGN="LEFT"/>{escape.html_text(line, CAPTION_CHARS + 1)}' for line in lines)
        # the caption sits outside the bar's table so a long caption cannot stretch the bar's cells
        return (
            f'<TR><TD COLSPAN="2" ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="10"><B>{escape.html_text(name, 60)}</B>'
            f'</FONT><FONT POINT-SIZE="8" COLOR="#444444">  {escape.html_text(" · ".join(notes), CAPTION_CHARS)}'
            f'{described}</FONT></TD></TR>'
            f'<TR><TD COLSPAN="2" ALIGN="LEFT"><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            f"<TR>{cells}{na}</TR>{f'<TR>{tick_cells}</TR>' if tick_cells else ''}</TABLE></TD></TR>"
        )


def _meta_row(key: str, value: str) -> str:
    """A legend row of a total or a graph value; a value longer than ``LEGEND_VALUE_CHARS`` (a character set, a
    vocabulary: a dictionary, not a caption) shows its length, the value itself in the legend's tooltip."""
    if len(value) > LEGEND_VALUE_CHARS:
        value = f"{len(value):,} characters: see the tooltip or info"
    return (f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#444444">{escape.html_text(key, 40)}</FONT></TD>'
            f'<TD ALIGN="LEFT"><FONT POINT-SIZE="9">{escape.html_text(value, 60)}</FONT></TD></TR>')


def _assumed_row(model: Model) -> str:
    """The legend rows stating the values taken for the free input dims (``Model.assumed_dims``) and the MACs as
    a formula of them (``metrics.dim_formulas``), wrapped."""
    from renderer.loaders.free_dims import described
    from renderer.metrics.dim_formulas import total_line

    formula = total_line(model).removeprefix("MACs = ")
    rows = [("dims", described(model.assumed_dims))] + ([("MACs formula", f"= {formula}")] if formula else [])
    cells = []
    for key, text in rows:
        lines = textwrap.wrap(escape.clean(text, CAPTION_CHARS * 4), CAPTION_CHARS)
        wrapped = '<BR ALIGN="LEFT"/>'.join(escape.html_text(line, CAPTION_CHARS + 1) for line in lines)
        cells.append(f'<TR><TD ALIGN="LEFT" VALIGN="TOP"><FONT POINT-SIZE="9" COLOR="#444444">{key}</FONT></TD>'
                     f'<TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="9">{wrapped}</FONT></TD></TR>')
    return "".join(cells)


def scene_values_missing(heat: Heatmap, emitter: Emitter) -> list[object]:
    """Drawn elements of the heatmap's kind that have no value (computed once per scene: every page asks)."""
    if heat is not emitter.scene.heatmap:
        return []
    if emitter.scene.missing is None:
        emitter.scene.missing = [n for n in emitter.model.nodes()
                                 if emitter.folding.is_drawn(n) and n.key not in heat.values]
    return emitter.scene.missing


def _span(i: int, ticks: int, cells: int) -> int:
    """Cells under tick ``i`` so the tick labels spread over the gradient row."""
    base = cells // ticks
    return base + (cells - base * ticks if i == ticks - 1 else 0)


def _tick_align(i: int, ticks: int) -> str:
    return "LEFT" if i == 0 else "RIGHT" if i == ticks - 1 else "CENTER"


def text_row(content: str, ink: str, size: int = 9) -> str:
    return f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT COLOR="{ink}" POINT-SIZE="{size}">{content}</FONT></TD></TR>'


def _type_text(node: Node) -> str:
    if node.domain and node.domain not in ("ai.onnx", "custom"):
        return f"{node.op_type} ({node.domain})"
    return node.op_type


def _attribute_lines(node: Node, limit: int, width: int = LABEL_CHARS) -> list[str]:
    """Non-default attributes as ``key=value`` packed into at most two lines of about ``width`` characters."""
    parts = [f"{k}={_value_text(v, compact=True)}" for k, v in node.attributes.items()
             if k not in node.defaults and not _is_subgraph(v)][:limit]
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(part) + 3 <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines[:2]


def _is_subgraph(value: object) -> bool:
    """Graph-valued attributes are drawn as clusters, not listed in the box."""
    if isinstance(value, list):
        return any(isinstance(v, SubgraphRef) for v in value)
    return isinstance(value, SubgraphRef)


def _stored_and_annotated(metadata: dict[str, str], entry: Entry | None) -> list[str]:
    """A tooltip's last lines: what the model file stores with the element, then, after a rule, its
    annotation values (those that only repeat the stored text left out)."""
    lines = [f"{escape.clean(key, 80)}: {escape.clean(text, 200)}" for key, text in metadata.items()]
    values = [(k, v) for k, v in entry.values.items() if not _stored_text(k, v, metadata)] if entry else []
    if values:
        lines.append("—")
        lines.extend(f"{escape.clean(k, 80)}: {escape.clean(_value_text(v), 200)}" for k, v in values)
    return lines


def _stored_text(key: str, value: object, stored: dict[str, str]) -> bool:
    """True for a value that is the model file's own non-numeric text for ``key`` (ONNX ``metadata_props``,
    read as annotations): exporter records, not measurements."""
    return stored.get(key) == value and metric_value(value) is None


def _value_text(value: object, compact: bool = False) -> str:
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000):
        return format_number(value)
    if isinstance(value, (list, tuple)):
        shown = ",".join(_value_text(v) for v in list(value)[:8])
        more = ",…" if len(value) > 8 else ""
        return f"{shown}{more}" if compact else f"[{shown}{more}]"
    if isinstance(value, str) and metric_value(value) is not None and value.strip().replace(".", "", 1).isdigit():
        return format_number(float(value))
    return str(value)


def _box_text(value: object) -> str:
    """A value as its box shows it: a reason ("n/a (shape of …)") is cut to "n/a", the tooltip keeps it whole."""
    if isinstance(value, str) and value.startswith("n/a ("):
        return "n/a"
    return _value_text(value)


def _short(name: str) -> str:
    return name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def unique_nodes(nodes: list[Node]) -> list[Node]:
    seen: set[int] = set()
    out = []
    for node in nodes:
        if id(node) not in seen:
            seen.add(id(node))
            out.append(node)
    return out


def origin_id(value: Value) -> str:
    """The element id of what gives ``value``: its producer's box, or the graph input's."""
    producer = value.producer
    return producer.element_id if producer is not None else f"io-{value.graph.index}-{value.index}"


def op_name(node: Node) -> str:
    return f"op_{node.graph.index}_{node.index}"


def io_name(value: Value, role: str = "input") -> str:
    return f"{'in' if role == 'input' else 'out'}_{value.graph.index}_{value.index}"


def _const_name(value: Value) -> str:
    return f"const_{value.graph.index}_{value.index}"
