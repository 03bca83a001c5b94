"""The package's layers: imports run only downward, and no module imports itself back.

core <- inputs <- build <- tune | gate <- gpu <- output <- cli. Every import counts, also
one inside a function or under TYPE_CHECKING: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "occupancy"
# rank of each layer; a module may import its own folder and any lower rank. tune and gate
# share a rank and may not import each other.
LAYERS = {"core": 0, "inputs": 1, "build": 2, "tune": 3, "gate": 3, "gpu": 4, "output": 5}
TOP = 6  # occupancy/cli/ (the commands), __main__.py, __init__.py


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    deps: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                deps.add(full if full in modules else base)
        elif isinstance(node, ast.Import):
            deps.update(alias.name for alias in node.names)
    return {d for d in deps if d in modules and d != name}


def _rank(name: str) -> tuple[int, str]:
    parts = name.split(".")
    if len(parts) > 2 and parts[1] in LAYERS:
        return LAYERS[parts[1]], parts[1]
    return TOP, ""


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_lives_in_a_layer() -> None:
    loose = [n for n in _modules() if n.count(".") == 1
             and n.split(".")[1] not in (*LAYERS, "cli", "__main__")]
    assert loose == [], f"modules outside the layer folders: {loose}"


def test_imports_only_run_downward() -> None:
    upward = []
    for name, deps in _graph().items():
        rank, layer = _rank(name)
        for dep in deps:
            dep_rank, dep_layer = _rank(dep)
            if dep == "occupancy" and rank < TOP:
                upward.append(f"{name} -> {dep} (the package root is the public face, above every layer)")
            elif dep_rank > rank or (dep_rank == rank and dep_layer != layer):
                upward.append(f"{name} -> {dep}")
    assert upward == [], "imports that run up or across a layer:\n" + "\n".join(sorted(upward))


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rule itself: a core module importing output is reported."""
    assert _rank("occupancy.core.solver") < _rank("occupancy.output.rows")
    assert _rank("occupancy.cli")[0] == TOP
