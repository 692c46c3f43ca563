"""Guard rails of the layers (ARCHITECTURE.md): who may import what, and how large a function may grow."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "attn_core"
FIGURES = ENGINE / "figures"
VIEWS = ENGINE / "views"
# attn_core modules that turn results into files or text catalogs rather than computing (they may use plotly)
OUTPUT = {"export.py", "render.py", "i18n.py", "__init__.py"}
MAX_LINES = 80
MAX_PARAMS = 8


def modules(folder: Path, pattern: str = "*.py") -> list[Path]:
    return sorted(folder.glob(pattern))


def engine_modules() -> list[Path]:
    return [p for p in modules(ENGINE) if p.name not in OUTPUT]


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports at run time (absolute names; imports under ``if TYPE_CHECKING`` left out)."""
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
        if not typing_only:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return found


def uses(found: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in found)


@pytest.mark.parametrize("path", modules(ENGINE, "**/*.py"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_engine_never_imports_streamlit(path):
    assert not uses(imports(path), "streamlit")


def pulls_in_torch(stem: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether engine module ``attn_core.<stem>`` imports torch, itself or through other engine modules."""
    found = imports(ENGINE / f"{stem}.py")
    if uses(found, "torch"):
        return True
    inner = {
        m.split(".")[1] for m in found if m.startswith("attn_core.") and (ENGINE / f"{m.split('.')[1]}.py").is_file()
    }
    return any(pulls_in_torch(m, seen | {stem}) for m in inner - seen - {stem})


@pytest.mark.parametrize("path", modules(FIGURES), ids=lambda p: p.name)
def test_figures_do_not_compute_with_torch(path):
    found = imports(path)
    assert not uses(found, "torch"), "figures take numpy and result dataclasses; they never import torch"
    torch_engine = [m.stem for m in engine_modules() if uses(found, f"attn_core.{m.stem}") and pulls_in_torch(m.stem)]
    assert not torch_engine, f"figures import torch-based engine modules only for types (TYPE_CHECKING): {torch_engine}"


@pytest.mark.parametrize("path", engine_modules(), ids=lambda p: p.name)
def test_engine_modules_return_numbers_not_figures(path):
    found = imports(path)
    assert not uses(found, "plotly") and not uses(found, "attn_core.figures") and not uses(found, "attn_core.views")


@pytest.mark.parametrize("path", modules(ROOT / "pages"), ids=lambda p: p.name)
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


@pytest.mark.parametrize("where", ["attn_core", "ui", "pages", "serve"])
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
    assert sorted(p.name for p in PAGES) == sorted(s.stem for s in modules(ROOT / "pages"))
