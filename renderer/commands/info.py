"""``annograph info``: every graph, operator and tensor with the id to use for it."""

from __future__ import annotations

import argparse
import json
import sys

from renderer.commands.common import MODEL_FILES, add_options

HELP = "list every graph, operator and tensor of a model with its id, type and shapes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help=MODEL_FILES)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_options(parser, ("dim", "etrecord"))


def run(args: argparse.Namespace) -> int:
    from renderer.commands.common import etrecords, load_noted
    from renderer.core.escape import clean
    from renderer.loaders.free_dims import described

    model = load_noted(args.model, args.dim, keep_free=args.keep_free_dims,
                       etrecord=etrecords(args, [args.model]).get(args.model))
    if args.json:
        json.dump(_as_json(model), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"{clean(model.path, 400)}: {model.format} · {clean(model.version, 200)}")
    out.write(f" · {clean(model.producer, 100)}\n" if model.producer else "\n")
    for key, value in model.metadata.items():
        out.write(f"  metadata {clean(key, 80)}: {clean(value, 200)}\n")
    if model.assumed_dims:
        out.write(f"  dims: {described(model.assumed_dims)}\n")
        for dim in model.assumed_dims:
            out.write(f"    {clean(dim.name, 80)}={dim.value}: {dim.role}, {clean(dim.source, 120)}\n")
    for name, sig in model.signatures.items():
        out.write(f"  signature {clean(name, 80)}: graph {sig.get('subgraph', 0)}\n")
    for graph in model.graphs:
        owner = f" (in {graph.parent.op_type} {graph.parent.graph.index}:{graph.parent.index})" if graph.parent else ""
        out.write(f"\ngraph {graph.index}: {clean(graph.name, 120) or '(unnamed)'}{owner}: "
                  f"{len(graph.nodes)} operators, {len(graph.values)} tensors\n")
        out.write("  operators (id  type  name  inputs -> outputs)\n")
        for node in graph.nodes:
            ins = ", ".join(f"{v.graph.index}:{v.index}" if v else "-" for v in node.inputs)
            outs = ", ".join(f"{v.graph.index}:{v.index}" for v in node.outputs)
            subs = f"  runs graph {', '.join(str(s.index) for s in node.subgraphs)}" if node.subgraphs else ""
            out.write(f"  {graph.index}:{node.index}  {clean(node.op_type, 60)}  {clean(node.name, 120) or '-'}  "
                      f"[{ins}] -> [{outs}]{subs}\n")
        out.write("  tensors (id  name  type  role)\n")
        for value in graph.values:
            role = ("input" if value.is_input else "output" if value.is_output
                    else "constant" if value.is_constant else "")
            quant = f"  {clean(value.quantization, 120)}" if value.quantization is not None else ""
            out.write(f"  {graph.index}:{value.index}  {clean(value.name, 120) or '-'}  "
                      f"{clean(value.type or '?', 120)}  {role}{quant}\n")
    return 0


def _as_json(model) -> dict:  # type: ignore[no-untyped-def]
    return {
        "path": model.path, "format": model.format, "version": model.version, "producer": model.producer,
        "metadata": model.metadata,
        "assumed_dims": [{"name": d.name, "value": d.value, "role": d.role, "source": d.source}
                         for d in model.assumed_dims],
        "graphs": [
            {
                "index": g.index, "name": g.name,
                "parent": f"{g.parent.graph.index}:{g.parent.index}" if g.parent else None,
                "operators": [
                    {"id": f"{g.index}:{n.index}", "element_id": n.element_id, "type": n.op_type, "domain": n.domain,
                     "name": n.name, "category": n.category,
                     "inputs": [f"{v.graph.index}:{v.index}" if v else None for v in n.inputs],
                     "outputs": [f"{v.graph.index}:{v.index}" for v in n.outputs],
                     "subgraphs": [s.index for s in n.subgraphs]}
                    for n in g.nodes
                ],
                "tensors": [
                    {"id": f"{g.index}:{v.index}", "element_id": v.element_id, "name": v.name,
                     "dtype": v.type.dtype if v.type else None,
                     "shape": list(v.type.shape) if v.type and v.type.shape is not None else None,
                     "constant": v.is_constant, "input": v.is_input, "output": v.is_output}
                    for v in g.values
                ],
            }
            for g in model.graphs
        ],
    }
