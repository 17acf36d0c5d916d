"""The package's import architecture: the import-linter contracts of pyproject.toml ([tool.importlinter]: the
layers, the library apart from the pipeline, no circles within a subpackage) hold, every module has its place in
them, and no two modules of src/asynctm import each other, directly or in a circle, at module level or inside a
function: the contracts check the layers and the modules within each subpackage, this check every module pair."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO

SRC = REPO / "src"
PACKAGE = "asynctm"

# The circles that remain, each a set of modules, with why it is there. A circle not listed fails the test, and so
# does an entry whose circle is gone (remove it then).
KNOWN_CYCLES = {
    # make_backend and cuda_available load the CPU and the CUDA build lazily, and both builds take the shared
    # definitions (KernelConfig, the 1/s pool) from the package. Moving those into a sibling module would change
    # the code digests of the backends, which key the GPU campaign's benchmark records.
    frozenset({"asynctm.backends", "asynctm.backends.cpu", "asynctm.backends.cuda"}):
        "the backends' factory and its two builds",
}


def _lint_imports() -> Path:
    exe = Path(sys.executable).parent / ("lint-imports.exe" if os.name == "nt" else "lint-imports")
    if not exe.is_file():
        pytest.fail(f"{exe} not found: install the test extra (pip install -e '.[test]'), which has import-linter")
    return exe


def _importlinter() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def _contract(contract_id: str) -> dict:
    return next(c for c in _importlinter()["contracts"] if c["id"] == contract_id)


def test_the_import_contracts_hold():
    # This checkout's source, not an installed copy; --no-cache: nothing written into the checkout.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([str(_lint_imports()), "--no-cache", "--no-logo"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"lint-imports: a contract of pyproject.toml is broken\n{proc.stdout}{proc.stderr}"
    assert "0 broken" in proc.stdout and f"{len(_importlinter()['contracts'])} kept" in proc.stdout, proc.stdout


# -- the module graph from the source ----------------------------------------------------------------------------

def _modules(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """``{module: (file, is_package)}`` of every .py file of ``package`` under ``src``."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_graph(src: Path, package: str) -> dict[str, dict[str, list[int]]]:
    """``{module: {imported module of the package: [line, ...]}}``: every ``import`` and ``from ... import`` of
    the package's modules, at module level or inside a function, relative ones resolved; ``from pkg import name``
    counts as an import of the submodule ``pkg.name`` where there is one, else of ``pkg``."""
    modules = _modules(src, package)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, list[int]]] = {}
    for module, (path, is_package) in modules.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = module if is_package else module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        parent = parent.rpartition(".")[0]
                    base = ".".join(filter(None, [parent, node.module]))
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                if target == package or target.startswith(package + "."):
                    imported = owner(target)
                    if imported and imported != module and node.lineno not in edges.get(imported, []):
                        edges.setdefault(imported, []).append(node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, list[int]]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _describe(component: frozenset[str], graph) -> str:
    return "; ".join(f"{a} -> {b} (line {', '.join(map(str, graph[a][b]))})"
                     for a in sorted(component) for b in sorted(graph[a]) if b in component)


def test_no_import_cycles_between_the_modules():
    graph = import_graph(SRC, PACKAGE)
    # the graph is read: the peers build the baselines, which implement the interface below them
    assert "asynctm.baselines.pytm" in graph["asynctm.peers"] and "asynctm.baselines.base" in graph["asynctm.peers"]
    found = set(cycles(graph))
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert not new, "import cycles: " + " | ".join(_describe(c, graph) for c in new)
    gone = [f"{KNOWN_CYCLES[c]} {sorted(c)}" for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"these cycles are gone: remove them from KNOWN_CYCLES in {Path(__file__).name}: {gone}"


def test_the_cycle_finder_sees_relative_and_function_level_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from pkg import c\n")  # into the circle, not part of it
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub.b"] == {"pkg.c": [2]}
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})]
    (pkg / "c.py").write_text("")
    assert cycles(import_graph(tmp_path, "pkg")) == []


# -- every module has its place in the contracts ------------------------------------------------------------------

def _covered(module: str, names) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


def test_every_module_is_in_a_layer_and_on_one_side_of_the_library_line():
    layers = [name.strip() for layer in _contract("layers")["layers"]
              for name in layer.replace("|", ":").split(":")]
    library = _contract("library")
    modules = [m for m in _modules(SRC, PACKAGE) if m != PACKAGE and m != "asynctm.experiments"]
    unplaced = [m for m in modules if not _covered(m, layers)]
    assert not unplaced, f"pyproject.toml [tool.importlinter] layers: place these modules in a layer: {unplaced}"
    sides = [m for m in modules if _covered(m, library["source_modules"]) == _covered(m, library["forbidden_modules"])]
    assert not sides, ("pyproject.toml [tool.importlinter] contract 'library': list these modules in source_modules "
                       f"(the library) or in forbidden_modules (the pipeline), once: {sides}")
