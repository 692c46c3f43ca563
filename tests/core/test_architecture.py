"""Guard rails of the layers (docs/architecture.md): who may import what, and how large a function may grow."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "attn_core"
FIGURES = ENGINE / "figures"
VIEWS = ENGINE / "views"
MAX_LINES = 80
MAX_PARAMS = 8


def modules(folder: Path, pattern: str = "*.py") -> list[Path]:
    return sorted(folder.glob(pattern))


#: The layers, lowest first: a module imports only modules of its own layer or of a lower one, and modules of one
#: layer never import each other in a circle (topics may use each other: lab uses kv.convert and mla).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("attn_core.runtime",),
    ("attn_core.attention",),
    (
        "attn_core.kv",
        "attn_core.saturation",
        "attn_core.mla",
        "attn_core.conv",
        "attn_core.complexity",
        "attn_core.pretrained",
        "attn_core.lab",
        "attn_core.decks",
    ),
    ("attn_core.i18n", "attn_core.figures"),
    ("attn_core.views",),
    ("attn_core.render", "attn_core.export"),
    ("rooms",),  # live lecture rooms: the store and what lecturers and students may do (no Streamlit)
    ("ui",),
    ("app_pages", "app", "server"),
)
#: engine modules: computations only (no plotly, figures, views, text catalogs, streamlit)
ENGINE_LAYERS = 3


def layer_of(module: str) -> int | None:
    """The rank of ``module`` in :data:`LAYERS` (None for modules outside them: bench, tests, serve, stdlib)."""
    if module == "attn_core":
        return 0  # the package's face: the OpenMP setting and four engine names
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def engine_modules() -> list[Path]:
    return [p for p in modules(ENGINE, "**/*.py") if (layer_of(module_name(p)) or 0) < ENGINE_LAYERS]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, with_typing: bool = False) -> set[str]:
    """Every module ``path`` imports at run time (absolute names; imports under ``if TYPE_CHECKING`` left out
    unless ``with_typing``), at any depth (imports inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if with_typing or not typing_only:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found.update(f"{base}.{a.name}" for a in node.names)  # a module, or a name of module ``base``
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return found


def uses(found: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in found)


def project_files() -> list[Path]:
    """Every module of the app: the engine, the rooms, ui, the pages and the entry points."""
    return [
        *modules(ENGINE, "**/*.py"),
        *modules(ROOT / "rooms"),
        *modules(ROOT / "ui"),
        *modules(ROOT / "app_pages"),
        ROOT / "app.py",
        ROOT / "server.py",
    ]


def resolve(name: str, known: set[str]) -> str | None:
    """The project module an imported name lands in: the longest known prefix (``attn_core.figures.phone`` is the
    module; ``attn_core.figures.Style`` is the package's face), or None outside the project."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


def import_graph(with_typing: bool = True) -> dict[str, set[str]]:
    """module -> the project modules it imports (``TYPE_CHECKING`` imports and imports inside functions counted)."""
    files = {module_name(p): p for p in project_files()}
    known = set(files)
    graph = {}
    for name, path in files.items():
        targets = {resolve(m, known) for m in imports(path, with_typing)}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_no_module_imports_another_in_a_circle():
    """Not even under ``TYPE_CHECKING`` or inside a function: a circle means two modules are one idea split in two."""
    found = circles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_a_higher_layer():
    """The engine never reaches up to figures, views or ui; figures never to views; views never to ui."""
    upward = []
    for module, targets in import_graph().items():
        mine = layer_of(module)
        for target in targets:
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports of a higher layer: " + ", ".join(sorted(upward))


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    "path", [*modules(ENGINE, "**/*.py"), *modules(ROOT / "rooms")], ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_engine_and_the_rooms_never_import_streamlit(path):
    """The rooms' store and rules run in the HTTP endpoint and the benchmark too, without a Streamlit session."""
    assert not uses(imports(path), "streamlit")


def pulls_in_torch(module: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether engine module ``module`` imports torch, itself or through other engine modules."""
    files = {module_name(p): p for p in engine_modules()}
    found = imports(files[module])
    if uses(found, "torch"):
        return True
    inner = {resolve(m, set(files)) for m in found} - {None, module} - seen
    return any(pulls_in_torch(m, seen | {module}) for m in inner)


@pytest.mark.parametrize("path", modules(FIGURES), ids=lambda p: p.name)
def test_figures_do_not_compute_with_torch(path):
    found = imports(path)
    assert not uses(found, "torch"), "figures take numpy and result dataclasses; they never import torch"
    engine = {module_name(p) for p in engine_modules()} - {"attn_core"}  # the face: any attn_core import passes it
    used = {resolve(m, engine) for m in found} - {None}
    torch_engine = sorted(m for m in used if pulls_in_torch(m))
    assert not torch_engine, f"figures import torch-based engine modules only for types (TYPE_CHECKING): {torch_engine}"


@pytest.mark.parametrize("path", engine_modules(), ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_modules_return_numbers_not_figures(path):
    found = imports(path)
    for shown in ("plotly", "attn_core.figures", "attn_core.views", "attn_core.i18n", "streamlit"):
        assert not uses(found, shown), f"the engine computes; {shown} is for showing"


@pytest.mark.parametrize("path", modules(ROOT / "app_pages"), ids=lambda p: p.name)
def test_pages_use_only_ui_and_their_view_model(path):
    """A page is layout: streamlit, ui and its own view model (no engine module, no figure module)."""
    own = f"attn_core.views.{path.stem}"
    for name in imports(path):
        if name.startswith("attn_core"):
            assert name in ("attn_core.views", own) or name.startswith(own + "."), f"{path.name} imports {name}"
    text = path.read_text(encoding="utf-8")
    assert "st.cache_data" not in text and "st.cache_resource" not in text, "pages compute through ui.compute"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) <= 150, f"{path.name} has {len(lines)} non-blank lines: move its flow into its view model"


def functions(folder_or_file: Path):
    paths = [folder_or_file] if folder_or_file.is_file() else sorted(folder_or_file.rglob("*.py"))
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                if a.args and a.args[0].arg in ("self", "cls"):
                    n -= 1
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", n, node.end_lineno - node.lineno + 1


@pytest.mark.parametrize("where", ["attn_core", "rooms", "ui", "app_pages", "serve"])
def test_functions_are_short_and_take_few_parameters(where):
    """At most 80 lines and 8 parameters: a longer list is a spec dataclass waiting to be written."""
    too_long = [f"{name} ({n} lines)" for name, _, n in functions(ROOT / where) if n > MAX_LINES]
    too_many = [f"{name} ({n} parameters)" for name, n, _ in functions(ROOT / where) if n > MAX_PARAMS]
    assert not too_long and not too_many, "\n".join(too_long + too_many)


def test_the_benchmark_imports_nothing_from_the_tests():
    for path in modules(ROOT / "bench"):
        assert not uses(imports(path), "tests"), path.name


def test_the_serving_supervisor_needs_only_the_standard_library():
    """serve/ starts and watches the workers: it loads neither the app (torch, streamlit) nor the tests."""
    for path in modules(ROOT / "serve"):
        foreign = {m for m in imports(path) if m.split(".")[0] not in {*sys.stdlib_module_names, "serve"}}
        assert not foreign, f"{path.name} imports {sorted(foreign)}"


def test_every_registered_page_has_its_script_and_view_model():
    from attn_core.views import PAGES
    from attn_core.views.base import controls

    assert sum(p.default for p in PAGES) == 1
    for p in PAGES:
        assert (ROOT / p.script).is_file(), p.script
        assert controls(p.params), f"{p.name}: Params has no controls"
        assert callable(p.module.views)
    assert sorted(p.name for p in PAGES) == sorted(s.stem for s in modules(ROOT / "app_pages"))
