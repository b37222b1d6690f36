"""The HTML report's pages (renderer/reports/page_svg.py): a held-out model from a PyPI wheel rendered to SVG files
and to HTML in one call, and each page of the report compared with its SVG file, parsed: the same boxes, edges,
texts and shapes at the same places; no operator tooltip, and every line those tooltips said found in the
report's data; the pages carried in far fewer bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import SVG_NS, XLINK_NS, parse_svg, run_cli
from wheel_models import wheel_model


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    folder = tmp_path_factory.mktemp("pages")
    run = run_cli("render", wheel_model("ppocr4_rec"), "-q", "-o", folder / "rec.svg", "-o", folder / "rec.html")
    assert run.returncode == 0, run.stderr
    files = [folder / "rec.svg", *sorted((folder / "rec.svg.pages").glob("page-*.svg"))]
    return files, folder / "rec.html"


def _report(path: Path) -> tuple[list[str], dict]:  # type: ignore[type-arg]
    text = path.read_text(encoding="utf-8")
    pages = re.findall(r"<noscript>(.*?)</noscript>", text, re.S)
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)[1])
    strings = data["strings"]
    ops = {}
    for row in data["ops"]:
        op = dict(zip(data["fields"], row))
        said = [f"{strings[k]}: {strings[v]}" for k, v, *_ in op["values"]]
        for k, v in op["sig"]:  # an input (slot: tensor), an output (→ tensor), an attribute (key = value)
            said += [f"{strings[k]}: {strings[v]}", f"{strings[k]} {strings[v]}", f"{strings[k]} = {strings[v]}"]
        said += [strings[i] for i in op["more"]]
        ops[op["el"]] = (op, said)
    return pages, ops


def _drawn(root) -> dict[str, list]:  # type: ignore[no-untyped-def, type-arg]
    """What a page draws, by kind: every text (content, place, size, weight), every polygon's corners, every
    path, every element id but Graphviz's link wrappers, every tooltip but the operators'."""
    texts = [((t.text or ""), t.get("x"), t.get("y"), float(t.get("font-size") or 0), t.get("font-weight"),
              t.get("fill") or "#000000") for t in root.iter(f"{SVG_NS}text")]
    corners = []
    for polygon in root.iter(f"{SVG_NS}polygon"):
        points = polygon.get("points").split()
        corners.append((points[:-1] if points[0] == points[-1] else points, polygon.get("fill"),
                        (polygon.get("stroke") or "transparent")))
    paths = [(p.get("d"), p.get("stroke") or "transparent", p.get("fill")) for p in root.iter(f"{SVG_NS}path")]
    ids = [e.get("id") for e in root.iter() if e.get("id") and not e.get("id").startswith("a_op")]
    tips = [a.get(f"{XLINK_NS}title") for a in root.iter(f"{SVG_NS}a") if a.get(f"{XLINK_NS}title")
            and "(operator " not in a.get(f"{XLINK_NS}title")]
    links = [a.get(f"{XLINK_NS}href") for a in root.iter(f"{SVG_NS}a") if a.get(f"{XLINK_NS}href")]
    return {"texts": texts, "polygons": corners, "paths": paths, "ids": ids, "tips": tips, "links": links}


def _anchor(link: str) -> str:
    """A link between page files as the report writes it: to an anchor within the one file."""
    path, _, anchor = link.partition("#")
    return f"#{anchor}" if anchor else "#" + ("overview" if path.endswith("rec.svg") else Path(path).stem)


def test_each_page_draws_what_its_svg_file_draws(rendered: tuple[list[Path], Path]) -> None:
    files, report = rendered
    pages, _ = _report(report)
    assert len(pages) == len(files) > 1
    for file, page in zip(files, pages):
        expected, shown = _drawn(parse_svg(file)), _drawn(parse_svg(page))
        expected["links"] = [_anchor(link) for link in expected["links"]]
        for kind in expected:
            assert shown[kind] == expected[kind], (file.name, kind)
        assert not list(parse_svg(page).iter(f"{SVG_NS}title"))


def test_operator_tooltips_move_into_the_data(rendered: tuple[list[Path], Path]) -> None:
    """Each box's tooltip is out of the report's pages, and every one of its lines is in the report's data: its
    values, signature, or ``more`` (what was folded into it)."""
    files, report = rendered
    pages, ops = _report(report)
    assert not any("(operator " in page for page in pages)
    folded = 0
    for file in files:
        for a in parse_svg(file).iter(f"{SVG_NS}a"):
            tip = a.get(f"{XLINK_NS}title") or ""
            if "(operator " not in tip:
                continue
            element = re.search(r"\(operator \d+:\d+, ([^)]+)\)", tip)[1]
            op, said = ops[element]
            lines = [line.replace("\xa0", " ") for line in tip.split("\n")[1:]
                     if line not in ("—", f"name: {op['name']}")]
            missing = [line for line in lines if line not in said and not any(s.startswith(line.rstrip("…"))
                                                                              for s in said)]
            assert missing == [], (element, missing)
            folded += any(line.startswith("folded ") for line in lines)
    assert folded > 5  # the folded Constants' lines, which only the tooltips had


def test_the_pages_take_far_fewer_bytes_than_the_svg_files(rendered: tuple[list[Path], Path]) -> None:
    files, report = rendered
    pages, _ = _report(report)
    carried = sum(len(page.encode()) for page in pages)
    assert carried <= 0.7 * sum(f.stat().st_size for f in files), (carried, [f.stat().st_size for f in files])
