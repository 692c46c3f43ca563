"""The English and Chinese catalogs agree, and every key the code uses exists."""

import ast
import json
import re
import string
from pathlib import Path

import pytest

from attn_core.i18n import CATALOG_DIR, translate

ROOT = Path(__file__).resolve().parents[2]
EN = json.loads((CATALOG_DIR / "en.json").read_text(encoding="utf-8"))
ZH = json.loads((CATALOG_DIR / "zh.json").read_text(encoding="utf-8"))
CODE = [
    ROOT / "app.py",
    *sorted((ROOT / "ui").glob("*.py")),
    *sorted((ROOT / "app_pages").glob("*.py")),
    *sorted((ROOT / "attn_core").rglob("*.py")),
]
CJK = re.compile(r"[\u4e00-\u9fff]")


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_same_keys_in_both_languages():
    assert sorted(set(EN) - set(ZH)) == [], "missing in zh.json"
    assert sorted(set(ZH) - set(EN)) == [], "missing in en.json"


@pytest.mark.parametrize("key", sorted(EN))
def test_entry_is_translated_with_same_placeholders(key):
    en, zh = EN[key], ZH[key]
    assert en.strip() and zh.strip()
    assert fields(en) == fields(zh), key
    if len(re.findall(r"[A-Za-z]{3,}", en)) >= 3 and not key.startswith(("opt.", "ui.fix_this")):
        # sentences are really translated (not copied): the Chinese text has Chinese characters
        assert CJK.search(zh), f"{key}: zh looks untranslated: {zh!r}"


def literal_keys() -> set[str]:
    """Every string literal passed as the first argument of t(), ui.t(), translate() or style.t()."""
    keys = set()
    for path in CODE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                arg = node.args[0]
                if (
                    name in ("t", "translate", "help_expander")
                    and isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                ):
                    keys.add(arg.value if name != "help_expander" else arg.value + ".title")
                    if name == "help_expander":
                        keys.add(arg.value + ".body")
                unit = node.args[1] if len(node.args) > 1 else None
                if name == "count" and isinstance(unit, ast.Constant) and isinstance(unit.value, str):
                    keys |= {f"count.{unit.value}.one", f"count.{unit.value}.other"}  # count(n, "kv_head")
    return keys


def test_every_literal_key_exists():
    missing = sorted(k for k in literal_keys() if k not in EN)
    assert missing == []


DISPLAY_CALLS = {
    "title",
    "header",
    "subheader",
    "markdown",
    "caption",
    "write",
    "text",
    "info",
    "warning",
    "error",
    "success",
    "button",
    "expander",
    "tabs",
    "metric",
    "toast",
    "popover",
    "download_button",
    "radio",
    "selectbox",
    "slider",
    "toggle",
    "checkbox",
    "number_input",
    "text_input",
    "text_area",
    "select_slider",
    "segmented_control",
    "progress",
}


def hard_coded(path: Path) -> list[str]:
    """Prose string literals given straight to a Streamlit display call (not through t())."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DISPLAY_CALLS:
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "ui":
                continue  # ui's helpers take a widget key and translate the label themselves
            for arg in node.args[:1]:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and re.search(r"[A-Za-z]{3,}", arg.value)
                ):
                    found.append(f"{path.name}:{node.lineno}: {arg.value[:50]!r}")
                if isinstance(arg, ast.JoinedStr):
                    text = "".join(v.value for v in arg.values if isinstance(v, ast.Constant))
                    if re.search(r"[A-Za-z]{4,}\s+[A-Za-z]{3,}", text):
                        found.append(f"{path.name}:{node.lineno}: f-string {text[:50]!r}")
    return found


@pytest.mark.parametrize(
    "path",
    [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_hard_coded_display_strings(path):
    allowed = {"frame.py": ["Language / 语言"]}  # the language switch names both languages on purpose
    found = [f for f in hard_coded(path) if not any(a in f for a in allowed.get(path.name, []))]
    assert found == []


def test_count_is_singular_for_one_in_english():
    from attn_core.i18n import count

    assert count(1, "kv_head") == "1 KV head" and count(4, "kv_head") == "4 KV heads"
    assert count(1, "query_head") == "1 query head" and count(0, "query") == "0 queries"
    assert count(1, "kv_head", "zh") == "1 个 KV 头" and count(4, "kv_head", "zh") == "4 个 KV 头"
    units = {k.rsplit(".", 1)[0] for k in EN if k.startswith("count.")}
    for unit in units:  # every unit has both forms, and the English forms differ
        assert EN[f"{unit}.one"] != EN[f"{unit}.other"], unit


def test_translate_falls_back_and_formats():
    assert translate("fig.key", "zh") == "键"
    assert translate("fig.key", "fr") == "key"
    assert translate("ui.expect_int", "en", lo=1, hi=4) == "a whole number from 1 to 4"


def config_error_calls() -> list[tuple[str, ast.Call]]:
    """Every ``ConfigError(...)`` constructed in the engine, with its file and line."""
    calls = []
    for path in sorted((ROOT / "attn_core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ConfigError":
                calls.append((f"{path.relative_to(ROOT)}:{node.lineno}", node))
    return calls


def test_every_engine_error_names_a_catalog_entry_with_its_values():
    """A ConfigError reaches the user: it must say which ``err.<key>`` renders it in either language,
    and pass every value that entry's template needs (else the Chinese UI would show English)."""
    calls = config_error_calls()
    assert len(calls) > 50
    problems = []
    for where, call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        key = call.args[2] if len(call.args) >= 3 else kw.get("key")
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            problems.append(f"{where}: no literal catalog key")
            continue
        entry = f"err.{key.value}"
        if entry not in EN or entry not in ZH:
            problems.append(f"{where}: {entry} is missing from a catalog")
            continue
        if None in kw:  # **params: the values are checked where that dict is built
            continue
        given = set(kw) - {"key"}
        missing = fields(EN[entry]) - given
        if missing:
            problems.append(f"{where}: {entry} needs {sorted(missing)}")
    assert not problems, "\n".join(problems)
