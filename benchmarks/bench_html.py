"""The HTML report of a big model (issue 17): file size, DOM size, time to respond, first view, sort time.

    python benchmarks/bench_html.py [--runs 3] [--keep DIR]

Both models come from ``benchmarks/transformer_models.py`` and are coloured by a real onnxruntime profile of
themselves (``transformer_models.profile``: CPU, one thread, three runs on 16 tokens):

    transformer-3600-scoped   40 layers, 3,591 operators: an overview and a page per layer (1,373 rows in
                              the table: the constants and shape computations fold into the boxes reading them)
    transformer-400-shapes    4 layers, 387 operators: one picture (the baseline)
    transformer-3600-constants  the 40 layers with --show-constants: every operator drawn, 3,591 table rows

Each report is written by ``annograph render MODEL -a PROFILE -o MODEL.html`` and opened ``--runs`` times in a
fresh 1,600 × 1,000 page of headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright). Printed:

* file size, and elements in the DOM once the script has run;
* time to respond: from the navigation's start to the first frame after the report's script has run (the
  page's own ``performance.now()``), median over the runs, and the big report's as a ratio of the baseline's,
  measured in the same run;
* the first view: the share of the shown page's boxes whole on screen, the least box text size in px;
* sort: the slowest of a click on each column header of the operator table, rows laid out, in ms, and the big
  report's as a ratio of the baseline's.

Goals (issue 17): ≤ 8 MB, ≤ 60,000 elements, ≤ 4× the baseline's time, ≥ 60 % of the overview's boxes whole on
screen with text ≥ 8 px, sort < 200 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import transformer_models  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
WINDOW = {"width": 1600, "height": 1000}
CASES = (("transformer-3600-scoped", 40, ()), ("transformer-400-shapes", 4, ()),
         ("transformer-3600-constants", 40, ("--show-constants",)))
READY = "document.documentElement.classList.contains('js')"
FRAME = "new Promise(r => requestAnimationFrame(() => setTimeout(() => r(performance.now()))))"
# What the shown page offers (tests/e2e/test_html_report.py reads it too): its boxes (not the legend) whole on
# screen, the least text size among them in px, the page, its view, and the elements in the DOM.
ON_SCREEN = """() => {
  const v = document.getElementById('viewport').getBoundingClientRect();
  const boxes = [...document.querySelectorAll('section.current svg g.node')].filter(g => !/legend$/.test(g.id));
  const whole = boxes.filter(g => { const r = g.getBoundingClientRect();
    return r.width > 0 && r.left >= v.left - 0.5 && r.right <= v.right + 0.5 && r.top >= v.top - 0.5
      && r.bottom <= v.bottom + 0.5; });
  const sizes = whole.flatMap(g => [...g.querySelectorAll('text')].filter(t => t.textContent.trim())
    .map(t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a));
  return {page: document.querySelector('section.current').id, boxes: boxes.length, whole: whole.length,
          least: sizes.length ? Math.min(...sizes) : 0,
          view: document.querySelector('section.current svg').getAttribute('viewBox'),
          elements: document.getElementsByTagName('*').length,
          rows: JSON.parse(document.getElementById('report-data').textContent).ops.length};
}"""
SORT = """() => [...document.querySelectorAll('table.ops th')].map(th => {
  const t0 = performance.now();
  th.click();
  document.body.offsetHeight;
  return performance.now() - t0; })"""


def report(folder: Path, name: str, layers: int, options: tuple[str, ...]) -> Path:
    model = transformer_models.write(folder / f"{name}.onnx", layers)
    profile = transformer_models.profile(model, folder)
    out = folder / f"{name}.html"
    subprocess.run([sys.executable, "-m", "renderer", "render", str(model), "-a", str(profile), *options, "-q",
                    "-o", str(out)], check=True, cwd=ROOT)
    return out


def open_once(browser, path: Path, shot: Path | None = None) -> dict:  # type: ignore[no-untyped-def, type-arg]
    context = browser.new_context(viewport=WINDOW)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri(), wait_until="commit")
    while not page.evaluate(READY):  # polled: the report's policy forbids the eval wait_for_function uses
        pass
    figures = {"respond_ms": page.evaluate(FRAME), **page.evaluate(ON_SCREEN)}
    if shot:
        page.screenshot(path=str(shot))
    figures["sort_ms"] = max(page.evaluate(SORT))
    figures["errors"] = errors
    context.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the reports and first-view screenshots here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {name: report(folder, name, layers, options) for name, layers, options in CASES}
        results = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
            for name, path in paths.items():
                runs = [open_once(browser, path, folder / f"{name}.png" if args.keep and k == 0 else None)
                        for k in range(args.runs)]
                results[name] = {"bytes": path.stat().st_size, "runs": runs}
            browser.close()
    print(f"{'report':26} {'MB':>6} {'elements':>9} {'respond ms':>11} {'boxes whole':>12} {'least px':>9} "
          f"{'rows':>6} {'sort ms':>8}")
    for name, result in results.items():
        runs = result["runs"]
        first = runs[0]
        print(f"{name:26} {result['bytes'] / 1e6:6.2f} {first['elements']:9,} "
              f"{statistics.median(r['respond_ms'] for r in runs):11.0f} "
              f"{first['whole']:5}/{first['boxes']:<4} {first['whole'] / max(first['boxes'], 1):4.0%} "
              f"{first['least']:6.1f} {first['rows']:9,} {statistics.median(r['sort_ms'] for r in runs):8.0f}"
              + ("  page errors: " + "; ".join(first["errors"]) if first["errors"] else ""))
    big, small = (results[name]["runs"] for name, _, _ in CASES[:2])
    ratio = statistics.median(r["respond_ms"] for r in big) / statistics.median(r["respond_ms"] for r in small)
    print(f"time to respond, {CASES[0][0]} / {CASES[1][0]}: {ratio:.2f}× (goal ≤ 4×)")
    sort = statistics.median(r["sort_ms"] for r in big) / max(statistics.median(r["sort_ms"] for r in small), 0.1)
    print(f"sort, {CASES[0][0]} / {CASES[1][0]}: {sort:.2f}× (tests/e2e/test_html_report.py bounds a click only "
          "against a hang)")
    print("goals: ≤ 8 MB, ≤ 60,000 elements, ≥ 60 % of the overview's boxes whole at ≥ 8 px, sort < 200 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
