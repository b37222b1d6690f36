"""The ``annograph`` command. Sub-commands live in ``renderer/commands/<name>.py``.

Only argparse and our own light modules are imported here, so ``annograph --help`` is instant; each command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from renderer.core.errors import AnnographError

# Each module exposes HELP (one line), add_arguments(parser) and run(args) -> int; -q / -v are added to every
# command here (renderer.core.progress holds what they mean).
COMMANDS: tuple[str, ...] = ("info", "render", "batch", "metrics", "compare", "diff", "embed", "export")

USAGE = """annograph [-h] [--version] COMMAND ...
       annograph MODEL [render options]      (the same as: annograph render MODEL ...)"""

EPILOG = """`annograph MODEL` renders MODEL as `annograph render MODEL` does (MODEL_STEM.svg in the current folder
without -o); a model file named like a command is given with its folder: `annograph ./diff` or
`annograph render ./diff`.

ids: an operator is named by its node name, the name of one of its output tensors, N (operator N of
graph 0) or S:N (operator N of graph S); a tensor by its name, N or S:N. `annograph info MODEL` lists them all."""


YOUNG_GC = 200_000
"""Allocations between two collections of the garbage collector's youngest generation while a command runs: a
re-render of a model of some hundred operators makes none (light_resnet50 made one at 50,000, ~10 ms of walking
every object the run had made); the int8 TTS's re-render spends the same in its ten instead of fourteen."""
EXIT_USAGE = 2
"""Exit status of a usage error (argparse's and ours, ``errors.UsageError``); 1 is any other error, 3 the diff
gate."""


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error (argparse would print the whole usage first), and
    exit with status 2, as argparse's own do."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from renderer.core.escape import clean

        self.exit(EXIT_USAGE, f"annograph: error: {clean(message, 2000)} (see {self.prog} --help)\n")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        # argparse before Python 3.13 drops a "--" given as an option's own value (--show=--), handing the
        # command an empty list where it expects text: keep the value as written.
        if arg_strings == ["--"] and action.option_strings and action.nargs is None:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of ``annograph``, with the sub-commands ``commands`` (``main`` builds only the one it runs:
    the others' modules need not be imported)."""
    from renderer.commands.common import add_verbosity_arguments, require_output_names
    from renderer.version import __version__

    parser = _Parser(
        prog="annograph",
        usage=USAGE,
        description="Render ONNX and TFLite models as static, annotated Graphviz graphs.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"annograph {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, prog="annograph")
    for name in commands:
        module = importlib.import_module(f".{name}", __package__)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command)
        require_output_names(command)
        add_verbosity_arguments(command)
        command.set_defaults(run=module.run)
    return parser


_TOP_OPTIONS = ("-h", "--help", "--version")


def with_command(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``render`` put first when it names no command (``annograph MODEL -o x.png``); a command's
    name always wins, and the top level's own options (``--help``, ``--version``, or a prefix of them) stay.

    >>> with_command(["model.onnx", "-o", "m.png"])
    ['render', 'model.onnx', '-o', 'm.png']
    >>> with_command(["diff", "a.onnx", "b.onnx"]), with_command(["--vers"]), with_command([])
    (['diff', 'a.onnx', 'b.onnx'], ['--vers'], [])
    """
    argv = list(argv)
    if not argv or argv[0] in COMMANDS:
        return argv
    first = argv[0]
    if first in _TOP_OPTIONS or (first.startswith("--") and len(first) > 2
                                 and any(option.startswith(first) for option in _TOP_OPTIONS)):
        return argv
    return ["render", *argv]


def _check_implied_model(argv: list[str], given: Sequence[str]) -> None:
    """``annograph inf m.onnx`` (a mistyped command) says so, instead of "inf: no such file"."""
    from renderer.core.errors import UsageError

    first = given[0] if given else ""
    if argv[:1] != ["render"] or given[:1] == ["render"] or first.startswith("-") or os.path.exists(first):
        return
    if "." not in first and "/" not in first and os.sep not in first:
        import difflib

        near = difflib.get_close_matches(first, COMMANDS, n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        raise UsageError(f"{first!r} is neither a command ({', '.join(COMMANDS)}) nor a file; {hint}"
                         f"a model file of that name is given as ./{first}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names; its exit status. The garbage collector's youngest generation is collected
    every ``YOUNG_GC`` allocations instead of every 700 while it runs: each collection walks every young object
    still alive (a re-render of the TTS: 620 collections, 0.45 s CPU -> 44, 0.17 s; light_resnet50's imports
    alone made 39). What reference counting frees, nearly everything, is freed as before."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_GC), *before[1:])
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*before)


def console() -> None:
    """The ``annograph`` program and ``python -m renderer``: ``main``, then the process ends as soon as its
    outputs are out, without freeing every object of the interpreter one by one (0.04 s of a 0.5 s re-render):
    the exit handlers run (temporary folders' finalizers, logging), stdout and stderr are flushed, then
    ``os._exit``. With a thread other than a daemon still running, or a stream that cannot be flushed, it exits
    as Python does. ``main`` itself, called in-process (the tests, an embedding program), returns as ever.
    The collector's threshold (``YOUNG_GC``) is set here for the rest of the process, not only within ``main``:
    put back to 700 when ``main`` returns, the next allocation would collect every object the run left young
    (~10 ms on a small re-render) just before the process ends."""
    import threading

    gc.set_threshold(max(gc.get_threshold()[0], YOUNG_GC), *gc.get_threshold()[1:])
    status = main()
    if any(not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread()):
        sys.exit(status)
    import atexit

    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)  # (Python says so, and exits with its own status)
    os._exit(status)


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    argv = with_command(given)
    parser = build_parser(argv[:1] if argv[:1] and argv[0] in COMMANDS else COMMANDS)
    try:
        _check_implied_model(argv, given)
    except AnnographError as e:
        parser.error(str(e))
    args = parser.parse_args(argv)
    from renderer.commands.common import verbosity_of
    from renderer.core.progress import verbosity

    try:
        with verbosity(verbosity_of(args)):
            return int(args.run(args) or 0)
    except AnnographError as e:
        from renderer.core.errors import UsageError
        from renderer.core.escape import clean

        # one line whatever the message carries (a file name with a newline, control characters)
        print(f"annograph: error: {clean(str(e), 2000)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, UsageError) else 1
    except KeyboardInterrupt:
        print("annograph: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        from renderer.core.escape import clean
        from renderer.files import inputs

        file = inputs.read_when_out_of_memory()
        print(f"annograph: error: {clean(file, 500)}: out of memory reading it" if file else
              "annograph: error: out of memory", file=sys.stderr)
        return 1
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as e:  # a bug of ours: still one line, with a pointer to the traceback
        if os.environ.get("ANNOGRAPH_DEBUG"):
            raise
        print(f"annograph: internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
              "(set ANNOGRAPH_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        return 1
    finally:
        from renderer.files import inputs

        inputs.forget()


if __name__ == "__main__":
    console()
