"""The output plan: every rule about the files one run writes, made once from the output names.

A command (or the API's ``render``) builds one ``OutputPlan`` from its ``-o`` names (or a folder output and
``--format``): each output's format (``--format``/``fmt``, else its extension: ``OUTPUT_FORMATS``), the pages
folder a book's pages go to (``NAME.EXT.pages/page-NNN.EXT`` for ``FOLDER_FORMATS``), the relative links between
those files (``Links``), the pictures a Markdown summary links to, and the files of this run's inputs that no
output may be (refused when the plan is made, again when more inputs are found, and by the atomic writer).
Rendering, the book writer, the page emitter, the atomic writer, the summaries and the Sphinx directive read
these rules here; nothing else spells them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.core.errors import RenderError, UsageError
from renderer.core.progress import stage, waiting
from renderer.files import atomic
from renderer.files.formats import chosen_format
from renderer.files.page_names import Links, page_file, pages_path

if TYPE_CHECKING:
    pass

OUTPUT_FORMATS: dict[str, str] = {
    ".svg": "svg", ".pdf": "pdf", ".png": "png", ".dot": "dot", ".gv": "dot", ".html": "html", ".htm": "html",
    ".md": "md",
}
"""File extension → output format. The injection and determinism tests iterate over the formats."""
FOLDER_FORMATS = frozenset({"svg", "png", "dot"})
"""Formats whose book is the overview in the output file and a file per page in its pages folder (a PDF or
HTML output holds every page in one file; a Markdown summary, the overview's)."""
PICTURE_FORMATS = frozenset({"svg", "png", "pdf", "html"})
"""Outputs a Markdown summary of the same run links to (DOT is a source, another summary is not a picture)."""
MAX_PICTURES = 20

Written = list[tuple[str | Path, bytes | dict[str, bytes]]]
"""Files to write: (path, bytes), or (folder path, {file name: bytes}) for a pages folder."""


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """The picture format of ``path``: ``fmt`` when given, else its extension's (see ``OUTPUT_FORMATS``)."""
    return chosen_format(path, fmt, OUTPUT_FORMATS, "output", RenderError)


def folder_names(folder: str | Path, stem: str, formats: Iterable[str]) -> list[str]:
    """A folder output's files for one model: ``FOLDER/STEM.FMT`` for each of ``formats`` (``--format``'s list)."""
    known = sorted(set(OUTPUT_FORMATS.values()))
    names = []
    for fmt in formats:
        if fmt not in known:
            raise UsageError(f"--format {fmt!r}: use some of {', '.join(known)}")
        names.append(str(Path(folder) / f"{stem}.{fmt}"))
    return names


@dataclass(frozen=True, slots=True)
class Output:
    """One output file and its format."""

    path: str
    format: str

    @property
    def pages(self) -> Path:
        """Where a book's pages go: the folder beside the file (used for ``FOLDER_FORMATS``)."""
        return pages_path(self.path)

    @property
    def paged(self) -> bool:
        """Whether a book's pages go to the pages folder (else they are all in the file, or not written)."""
        return self.format in FOLDER_FORMATS

    def book_files(self, pages: Sequence[bytes]) -> Written:
        """A book's files in this format: the overview (``pages[0]``) here, the others in the pages folder."""
        written: Written = [(Path(self.path), pages[0])]
        if len(pages) > 1:
            written.append((self.pages, {page_file(i, self.format): data for i, data in enumerate(pages) if i}))
        return written


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """The outputs of one run, the files it read (no output may be one), and the files the command writes
    itself beside the pictures in the same write (``also``: diff's ``--summary``)."""

    outputs: tuple[Output, ...]
    inputs: tuple[str, ...] = ()
    also: tuple[str, ...] = field(default=())

    @classmethod
    def build(cls, names: Iterable[str | Path], fmt: str | None = None, inputs: Iterable[str | Path] = (),
              also: Iterable[str | Path] = ()) -> OutputPlan:
        """The plan for ``names`` (format ``fmt``, else each name's extension); RenderError when an output (or
        an ``also`` file) is one of ``inputs`` (said first: the name may well be no picture's), or a format is
        unknown."""
        names, also, inputs = [str(n) for n in names], tuple(map(str, also)), list(dict.fromkeys(map(str, inputs)))
        atomic.refuse_inputs([*names, *also], inputs)
        written = [*names, *also]
        for k, name in enumerate(names):  # refused before anything is loaded or drawn, not at the write
            atomic.refuse_inside(pages_path(name), [Path(other) for j, other in enumerate(written) if j != k])
        return cls(tuple(Output(name, output_format(name, fmt)) for name in names), tuple(inputs), also)

    def with_inputs(self, inputs: Iterable[str | Path]) -> OutputPlan:
        """This plan with more files read by the run (found as it goes: sidecars); refused when an output is one."""
        more = [str(path) for path in inputs if str(path) not in self.inputs]
        atomic.refuse_inputs(self.names, more)
        return OutputPlan(self.outputs, (*self.inputs, *more), self.also)

    @property
    def names(self) -> list[str]:
        """Every file the run writes (the pages folders aside), in order: the outputs, then ``also``."""
        return [output.path for output in self.outputs] + list(self.also)

    @property
    def formats(self) -> list[str]:
        return [output.format for output in self.outputs]

    @property
    def links(self) -> Links:
        """A book's links, named after the SVG output when there is one (the format that keeps them), else
        the first output."""
        named = next((o.path for o in self.outputs if o.format == "svg"),
                     self.outputs[0].path if self.outputs else "model.svg")
        stem = Path(named).name if Path(named).suffix.lower() == ".svg" else Path(named).stem + ".svg"
        return Links(stem)

    def pictures_for(self, summary: str | Path) -> list[str]:
        """The pictures among the outputs, as paths relative to the folder of the summary ``summary``."""
        folder = os.path.dirname(os.path.abspath(summary))
        return [os.path.relpath(os.path.abspath(o.path), folder).replace(os.sep, "/")
                for o in self.outputs if o.format in PICTURE_FORMATS][:MAX_PICTURES]

    def write(self, written: Written) -> None:
        """Write every file of the run at once, all or nothing (``atomic.write_all``), never over an input."""
        with stage("write") as facts, waiting("writing"):
            atomic.write_all(written, self.inputs)
            facts.extend(str(path) for path, _ in written)


def bytes_plan(fmt: str) -> OutputPlan:
    """The plan of a picture made only as bytes (``render_bytes``, the notebook): one output ``model.FMT``."""
    return OutputPlan((Output(f"model.{fmt}", output_format("model", fmt)),))


__all__ = ["FOLDER_FORMATS", "OUTPUT_FORMATS", "Output", "OutputPlan", "Written", "bytes_plan", "folder_names",
           "output_format"]
