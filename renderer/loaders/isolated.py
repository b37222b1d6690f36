"""Run a runtime (LiteRT, onnxruntime) on a model in a child Python process.

A model that passed our loader can still crash a runtime's native code, or take all the memory: that must cost a
note, not the whole command. The child is ``python -m MODULE`` for a module that calls ``serve``: it reads one JSON
request on stdin and prints one JSON answer as the last line of its stdout, ``{"error": reason}`` on failure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def run(module: str, request: dict[str, Any], runtime: str, doing: str, timeout: float) -> tuple[dict[str, Any], str]:
    """Run ``python -m module`` on ``request``: (its answer, "") or ({}, why not).

    Args:
        module: the child's module name (``__name__`` of a module that calls ``serve``).
        request: JSON-serializable request.
        runtime: the runtime's name for messages (``LiteRT``).
        doing: what it does, for the timeout message (``to prepare the model``).
        timeout: seconds the child may run.
    """
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)  # the child imports this package from where this process found it
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, "-m", module], input=json.dumps(request), capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {}, f"{runtime} took over {timeout:g} s {doing}"
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}, f"{runtime} failed on the model (exit status {done.returncode})"
    if not isinstance(answer, dict):
        return {}, f"{runtime} failed on the model (no answer)"
    if "error" in answer:
        return {}, str(answer["error"])
    return answer, ""


def serve(handler: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """The child's side: one request from stdin, one answer line to stdout."""
    import json
    import sys

    request = json.loads(sys.stdin.read())
    print(json.dumps(handler(request)))
