"""The guide's layout table (mpcdp/README.md, "## Layout") matches the tree: every file or folder it names exists,
and every module and subpackage of mpcdp/ is named in some row.

A row names paths in backticks: a token ending in ``/`` or in a file suffix (``.py``, ``.sh``, ``.md``,
``.toml``), without spaces. A token starting with a top-level folder of the repository is read from the root;
any other is relative to the row's folder (its first path's folder: row ``mpcdp/transport/`` naming ``mesh.py``
means mpcdp/transport/mesh.py). Other backticked words (``Shared``, ``dealer``) are not paths. A package's
``__init__.py`` and ``__main__.py`` are its folder's: naming the folder names them; every other module is named
by its own file."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = ROOT / "mpcdp" / "README.md"
SUFFIXES = (".py", ".sh", ".md", ".toml")
PACKAGE_FILES = ("__init__.py", "__main__.py")


def layout_rows(text: str) -> list[tuple[str, str]]:
    """The (path cell, what cell) of every row of the Layout section's ``| path | what |`` table."""
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows and rows[0].replace(" ", "") == "|path|what|", "the Layout section has no | path | what | table"
    cells = [re.split(r"\s*\|\s*", row.strip())[1:-1] for row in rows[1:] if not re.fullmatch(r"[|\s:-]+", row)]
    assert all(len(c) == 2 for c in cells), [c for c in cells if len(c) != 2]
    return [(c[0], c[1]) for c in cells]


def named_paths(row: tuple[str, str], root: pathlib.Path = ROOT) -> list[tuple[str, pathlib.Path]]:
    """(token, the path it names) for every path token of ``row``."""
    tokens = [t for cell in row for t in re.findall(r"`([^`\s]+)`", cell)
              if t.endswith("/") or t.endswith(SUFFIXES)]
    first = tokens[0] if tokens and row[0].lstrip().startswith(f"`{tokens[0]}`") else None
    assert first, f"row {row[0]!r}: its path cell starts with no path"
    folder = root / first if first.endswith("/") else (root / first).parent
    tops = {p.name for p in root.iterdir() if p.is_dir()}
    return [(t, (root / t) if t.split("/", 1)[0] in tops and "/" in t else folder / t) for t in tokens]


def test_every_path_the_layout_table_names_exists():
    missing = [f"row {row[0][:40]!r}: `{token}` ({path.relative_to(ROOT).as_posix()})"
               for row in layout_rows(GUIDE.read_text()) for token, path in named_paths(row)
               if not (path.is_dir() if token.endswith("/") else path.is_file())]
    assert not missing, "the guide's Layout table names what is not in the tree:\n" + "\n".join(missing)


def test_every_module_and_subpackage_of_mpcdp_is_in_the_layout_table():
    named = {path.resolve() for row in layout_rows(GUIDE.read_text()) for _, path in named_paths(row)}
    package = ROOT / "mpcdp"
    wanted = [p for p in package.rglob("*") if "__pycache__" not in p.parts and
              ((p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.name not in PACKAGE_FILES))]
    unnamed = sorted(p.relative_to(ROOT).as_posix() + ("/" if p.is_dir() else "") for p in wanted
                     if p.resolve() not in named)
    assert not unnamed, "the guide's Layout table does not name:\n" + "\n".join(unnamed)


def test_the_layout_check_reads_tokens_relative_to_their_row(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    row = ("`pkg/sub/`", "the link (`link.py`), `Shared` values, the suite (`tests/x.py`), `inner/`")
    assert [(t, p.relative_to(tmp_path).as_posix()) for t, p in named_paths(row, tmp_path)] == [
        ("pkg/sub/", "pkg/sub"), ("link.py", "pkg/sub/link.py"), ("tests/x.py", "tests/x.py"),
        ("inner/", "pkg/sub/inner")]
    row = ("`pkg/a.py`, `b.py`", "what")
    assert [p.relative_to(tmp_path).as_posix() for _, p in named_paths(row, tmp_path)] == ["pkg/a.py", "pkg/b.py"]
