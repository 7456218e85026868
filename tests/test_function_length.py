"""No function or method in mpcdp/ is longer than :data:`MAX_LINES` lines, from its ``def`` line to its last line
(``ast``'s ``end_lineno - lineno + 1``: docstring, comments and blank lines inside it included, decorators not).

A function that must stay longer is listed in :data:`EXCEPTIONS` with the reason; a listed function that no
longer exists, or is no longer too long, fails the test too, so the list cannot go stale."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mpcdp"
MAX_LINES = 80

# "path:function" (path relative to the repository root; a method as Class.method) -> why it may be longer.
EXCEPTIONS: dict[str, str] = {}


def function_lengths() -> dict[str, int]:
    """Every function and method under mpcdp/, as "path:qualified.name" -> its length in lines. Nested
    functions count on their own and inside their enclosing function."""
    lengths: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        for name, node in _functions(tree, prefix=""):
            lengths[f"{relative}:{name}"] = node.end_lineno - node.lineno + 1
    return lengths


def _functions(node: ast.AST, *, prefix: str):
    """(qualified name, node) of every function defined in ``node``, at any depth."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield name, child
            yield from _functions(child, prefix=name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix=prefix + child.name + ".")
        else:
            yield from _functions(child, prefix=prefix)


def test_the_walk_finds_the_package_functions():
    lengths = function_lengths()
    assert "mpcdp/cli/__init__.py:build_parser" in lengths
    assert "mpcdp/transport/mesh.py:Mesh._move" in lengths
    assert len(lengths) > 500


def test_no_function_is_longer_than_the_limit():
    too_long = {key: n for key, n in function_lengths().items() if n > MAX_LINES and key not in EXCEPTIONS}
    report = "\n".join(f"  {key}: {n} lines" for key, n in sorted(too_long.items(), key=lambda item: -item[1]))
    assert not too_long, (f"{len(too_long)} function(s) longer than {MAX_LINES} lines (split them, or list one in "
                          f"EXCEPTIONS with the reason):\n{report}")


def test_every_exception_is_still_needed():
    lengths = function_lengths()
    stale = {key: ("no such function" if key not in lengths else f"{lengths[key]} lines, within the limit")
             for key in EXCEPTIONS if lengths.get(key, 0) <= MAX_LINES}
    report = "\n".join(f"  {key}: {why}" for key, why in sorted(stale.items()))
    assert not stale, f"EXCEPTIONS lists function(s) that need no exception (remove them):\n{report}"
