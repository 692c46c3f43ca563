"""The stylesheets and scripts in ui/assets/: each parses, and each is one the app sends (the browser tests check
what they do)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ui.core import ASSETS, asset

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(ASSETS.glob("*.js"))
STYLES = sorted(ASSETS.glob("*.css"))
#: Scripts that are ES modules (Streamlit's components v2 imports them); the others run as classic scripts
#: inside a ``<script>`` element.
MODULES = {"live_plot.js", "room_watch.js"}
NODE = shutil.which("node") or ("/usr/bin/node" if Path("/usr/bin/node").exists() else None)


def test_the_assets_are_there():
    assert {p.name for p in SCRIPTS} == {"clicker.js", "link.js", "live_plot.js", "room_watch.js"}
    assert {p.name for p in STYLES} == {"link.css", "page.css", "present.css", "responsive.css", "rooms.css"}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_every_script_parses(path, tmp_path):
    if NODE is None:
        pytest.skip("node is not installed (Debian: apt-get install nodejs): the scripts' syntax is not checked")
    # node tells a module from a script by the file's extension
    copy = tmp_path / (path.stem + (".mjs" if path.name in MODULES else ".cjs"))
    copy.write_text(asset(path.name), encoding="utf-8")
    done = subprocess.run([NODE, "--check", str(copy)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"ui/assets/{path.name} does not parse:\n{done.stderr}"


def _without_comments_and_strings(css: str) -> str:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', '""', css)


@pytest.mark.parametrize("path", STYLES, ids=lambda p: p.name)
def test_every_stylesheet_is_sane(path):
    """Balanced braces and brackets, closed comments, and nothing left of a Python f-string or ``str.format``
    (``{{``, ``}}``, ``{name}``): the files are sent as they are."""
    text = asset(path.name)
    assert text.count("/*") == text.count("*/"), f"{path.name}: an unclosed comment"
    css = _without_comments_and_strings(text)
    assert "{{" not in css and "}}" not in css, f"{path.name}: a doubled brace left from an f-string"
    assert not re.search(r"\{[A-Za-z_][A-Za-z0-9_]*\}", css), f"{path.name}: a str.format field left in"
    assert "<style" not in css and "</style" not in css, f"{path.name}: the <style> element is added when sent"
    depth = 0
    for i, ch in enumerate(css):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, f"{path.name}: a '}}' without its '{{' near {css[max(0, i - 60) : i + 1]!r}"
    assert depth == 0, f"{path.name}: {depth} '{{' never closed"
    for o, c in ("()", "[]"):
        assert css.count(o) == css.count(c), f"{path.name}: unbalanced {o}{c}"


@pytest.mark.parametrize("name", [p.name for p in [*STYLES, *SCRIPTS] if p.name not in MODULES])
def test_what_st_html_sends_survives_its_sanitizer(name):
    """``st.html`` passes its text through DOMPurify in the browser, which drops a ``<style>`` or ``<script>``
    element whose text holds ``<`` followed by a letter, ``/`` or ``!``: the whole stylesheet or script would be
    gone (write ``a < b`` with spaces, and no tags in comments)."""
    hits = [m.group(0) for m in re.finditer(r".{0,30}<[/\w!].{0,10}", asset(name))]
    assert not hits, f"ui/assets/{name}: DOMPurify would drop it for {hits}"


def test_every_asset_is_sent_by_the_app():
    """Each file is named by the ui module that sends it (a file nothing reads is a stale copy)."""
    code = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "ui").glob("*.py")))
    for path in [*SCRIPTS, *STYLES]:
        assert f'"{path.name}"' in code, f"ui/assets/{path.name} is not read by any ui module"
