"""The import graph of mpcdp/ is layered: no cycle between modules, and no import from a lower package to a
higher one (imports inside functions included)."""

import ast
import pathlib


import mpcdp

ROOT = pathlib.Path(mpcdp.__file__).parent

# Bottom to top. A module may import its own package, its own layer's packages and any lower layer.
LAYERS = (
    ("errors",),
    ("validation", "config", "randomness", "data", "plugins", "execution", "registry", "private_files", "providers",
     "refusals"),
    ("transport",),
    ("adapter",),
    ("mpc",),
    ("runtime",),
    ("noise",),
    ("accounting",),
    ("learning",),
    ("jobs",),
    ("cli", "__main__", "__init__", "api"),
)
LEVEL = {package: level for level, packages in enumerate(LAYERS) for package in packages}


def _module_name(path: pathlib.Path) -> str:
    parts = ("mpcdp", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the mpcdp modules it imports. ``from P import M`` with M a module counts as importing M
    (P is a package whose ``__init__`` the importer of its own submodule does not wait for)."""
    paths = {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("mpcdp"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in paths else node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name.startswith("mpcdp"))
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_package_has_a_layer():
    assert {_package(m) for m in _imports()} <= set(LEVEL), "a new package needs a place in LAYERS"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if LEVEL[_package(target)] > LEVEL[_package(module)])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target, path + [target])):
                return found
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return None


def test_no_import_runs_up_a_layer():
    upward = _upward(_imports())
    assert not upward, "imports from a lower package to a higher one:\n" + "\n".join(upward)


def test_no_import_cycle():
    cycle = _cycle(_imports())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_see_an_upward_import_and_a_cycle():
    """The checkers themselves, on a graph with one planted fault of each kind."""
    graph = _imports()
    planted = {**graph, "mpcdp.mpc.context": graph["mpcdp.mpc.context"] | {"mpcdp.jobs.train"}}
    assert _upward(planted) == ["mpcdp.mpc.context -> mpcdp.jobs.train"]
    looped = {**graph, "mpcdp.errors": {"mpcdp.validation"}}
    assert _cycle(looped) is not None and _cycle(looped)[0] == _cycle(looped)[-1]


def test_no_module_is_over_500_lines():
    long = sorted(f"{path.relative_to(ROOT)}: {n}" for path in ROOT.rglob("*.py")
                  if (n := len(path.read_text().splitlines())) > 500)
    assert not long, "modules over 500 lines (split them by job):\n" + "\n".join(long)
