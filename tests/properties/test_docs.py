"""README.md and the manual (docs/) stay true to the code as it moves: every repository path (renderer/, tests/,
benchmarks/, samples/) and dotted name they cite exists, the README's links lead to files, and the README stays a
front page (at most 250 lines). The site itself is built by scripts/test (sphinx -W, before pytest), not here."""

from __future__ import annotations

import importlib
import re

from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH = re.compile(r"`((?:renderer|tests|benchmarks|samples)/[\w/.-]+)`")
DOTTED = re.compile(r"(?<![\w/-])(renderer(?:\.[A-Za-z_]\w*)+)")
LINK = re.compile(r"\]\(((?:docs/)[^)#\s]*)[^)]*\)|src=\"(docs/[^\"]+)\"")


def _cited(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for name in pattern.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(page.name)
    return found


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_every_module_path_the_docs_cite_exists() -> None:
    cited = _cited(PATH)
    assert len(cited) >= 10  # the pages do cite the code (the pattern matches)
    missing = {path: pages for path, pages in cited.items() if not (ROOT / path.rstrip("/")).exists()}
    assert not missing, missing


def test_every_dotted_name_the_docs_cite_imports() -> None:
    cited = _cited(DOTTED)
    assert "renderer.integrations.sphinx" in cited
    broken = {name: pages for name, pages in cited.items() if not _resolves(name)}
    assert not broken, broken


def test_the_readme_is_a_front_page_whose_links_lead_to_files() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = {a or b for a, b in LINK.findall(readme)}
    assert {"docs/ci.md", "docs/getting-started.md", "docs/architecture.md",
            "docs/_static/tiny_cnn_latency.png"} <= links
    assert not [link for link in links if not (ROOT / link).exists()]
    for command in ("bash scripts/demo", "bash scripts/test"):  # the two set-up commands, as they are run
        assert f"\n{command}    #" in readme and (ROOT / command.split()[1]).is_file()
