"""A lecture deck as files (attn_core.export.deck_files): PDF, PowerPoint and one offline HTML file.

A three-slide deck (two kv_sharing charts, a step of the heatmaps, the KV-cache calculator's table) is drawn and
written once for the module, on the process's one warm renderer; a Chinese deck of two slides and a deck of bad
slides once each. The files are read back: pypdf for the PDF, python-pptx for the PowerPoint file, the HTML as text.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import shutil
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest

from attn_core import decks
from attn_core.export import deck as D
from attn_core.export.deck_files import deck_files, file_stem, formats_of, main, write
from attn_core.export.deck_html import FIGURES_ID
from attn_core.export.deck_layout import Renders, chart_cells
from attn_core.i18n import catalog
from attn_core.render import find_chromium
from attn_core.runtime.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(find_chromium() is None, reason="the PDF and PowerPoint files need Chromium")
SLOW = pytest.mark.slow  # the tests that render (a warm renderer: about a second a chart) or start a process

SHIPPED = decks.shipped()
GQA, SCRATCH = SHIPPED["gqa_and_the_kv_cache"], SHIPPED["attention_from_scratch"]
SMALL = decks.Deck(GQA.title, (GQA.slides[2], SCRATCH.slides[2], GQA.slides[4]))  # 2, 1 and 1 charts
CHINESE = decks.Deck(GQA.title, (SCRATCH.slides[1], GQA.slides[5]))


def flat(text: str) -> str:
    """Text compared without its line breaks and spaces; CJK compatibility forms (a PDF's ⼒ for 力) as NFKC."""
    return "".join(unicodedata.normalize("NFKC", text).split())


@pytest.fixture(scope="module")
def english():
    made = D.draw(SMALL, D.Options(), "gqa_and_the_kv_cache")
    renders = Renders(made.opts.style)
    seen: list[float] = []
    files = deck_files(made, D.FORMATS, lambda f, _: seen.append(f), renders)
    return made, files, renders, seen


@pytest.fixture(scope="module")
def chinese():
    made = D.draw(CHINESE, D.Options(lang="zh"))
    return made, deck_files(made, ["pdf", "pptx"])


BAD = decks.Deck(
    (("en", "Bad slides"),),
    (
        decks.slide("heatmaps", {"view": "steps", "slide": "1"}, "Fine", "This one exports."),
        decks.Slide("nope", (), (("en", "No such page"),)),
        decks.Slide("kv_sharing", (("no_such", "1"),), (("en", "No such control"),)),
        decks.Slide("heatmaps", (("n_heads", "eight"),), (("en", "Not a number"),)),
        decks.slide("kv_sharing", {"kv_view": "maps"}, "Too large", "Its charts pass the budget."),
    ),
)


@pytest.fixture(scope="module")
def bad():
    made = D.draw(BAD, D.Options(budget=D.Budget(slide_bytes=60_000)))
    return made, deck_files(made, D.FORMATS)


# ---------------------------------------------------------------- PDF
def pdf(data: bytes):
    from pypdf import PdfReader

    return PdfReader(io.BytesIO(data))


@SLOW
def test_the_pdf_has_a_16_9_page_per_slide_with_its_title_sentence_number_and_link(english):
    made, files, _, _ = english
    reader = pdf(files["pdf"])
    assert len(reader.pages) == len(SMALL.slides) == len(made.slides)
    for page, sf, s in zip(reader.pages, made.slides, SMALL.slides, strict=True):
        assert (float(page.mediabox.width), float(page.mediabox.height)) == (1440, 810)  # 16:9
        text = flat(page.extract_text())
        assert flat(s.words("title", "en")) in text
        assert flat(s.words("note", "en")) in text
        assert flat(f"{sf.number} / {len(SMALL.slides)}") in text
        links = [a.get_object()["/A"]["/URI"] for a in page.get("/Annots", [])]
        assert links == [sf.link]
        assert sf.link.startswith("http://localhost:8501/") and f"deck_at={sf.number}" in sf.link


def images_in(resources) -> int:
    found = 0
    for x in (resources.get("/XObject") or {}).values():
        x = x.get_object()
        found += x.get("/Subtype") == "/Image"
        if "/Resources" in x:
            found += images_in(x["/Resources"])
    return found


@SLOW
def test_the_pdf_draws_charts_as_vector_graphics(english):
    """The kv_sharing diagram and repeat_kv charts (shapes, lines, text) come in as vector drawing: no picture."""
    made, files, _, _ = english
    page = pdf(files["pdf"]).pages[0]
    assert len(made.slides[0].views) == 2
    assert images_in(page["/Resources"]) == 0
    assert "query heads" in page.extract_text()  # the chart's own labels are text


@SLOW
@pytest.mark.parametrize("per", [2, 4])
def test_a_handout_holds_two_or_four_slides_a_page(english, per):
    made, _, renders, _ = english
    handout = dataclasses.replace(made, opts=dataclasses.replace(made.opts, handout=per))
    reader = pdf(deck_files(handout, ["pdf"], renders=renders)["pdf"])
    assert len(reader.pages) == math.ceil(len(made.slides) / per)
    text = flat("".join(p.extract_text() for p in reader.pages))
    for sf in made.slides:
        assert flat(sf.title) in text
    uris = [a.get_object()["/A"]["/URI"] for p in reader.pages for a in p.get("/Annots", [])]
    assert uris == [sf.link for sf in made.slides]


@SLOW
def test_progress_rises_to_one(english):
    seen = english[3]
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > len(SMALL.slides)


# ---------------------------------------------------------------- PowerPoint
def pptx(data: bytes):
    from pptx import Presentation

    return Presentation(io.BytesIO(data))


@SLOW
def test_the_pptx_has_a_slide_per_deck_slide_with_title_picture_text_and_notes(english):
    from PIL import Image
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    made, files, _, _ = english
    prs = pptx(files["pptx"])
    assert prs.slide_width * 9 == prs.slide_height * 16
    assert len(prs.slides) == len(made.slides)
    for slide, sf, s in zip(prs.slides, made.slides, SMALL.slides, strict=True):
        assert slide.shapes.title.text == s.words("title", "en")
        texts = [sh.text_frame.text for sh in slide.shapes if sh.has_text_frame]
        assert any(flat(s.words("note", "en")) in flat(t) for t in texts)
        pictures = [sh for sh in slide.shapes if sh.shape_type == MSO_SHAPE_TYPE.PICTURE]
        assert len(pictures) == len(sf.views) > 0
        for pic in pictures:
            assert abs(pic.width * 9 - pic.height * 16) <= 16 * 9 * 2  # 16:9 on the slide, to the EMU's rounding
            with Image.open(io.BytesIO(pic.image.blob)) as im:
                assert im.size == (1920, 1080)
        notes = slide.notes_slide.notes_text_frame.text
        assert s.words("note", "en") in notes and sf.link in notes
        assert all(n in notes for n in sf.numbers) and len(sf.settings) == len(s.params)
        assert sf.said and sf.said[0] in notes  # the page's own sentence for the slide's settings


@SLOW
@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_opens_the_pptx_without_repair(english, tmp_path):
    path = tmp_path / "deck.pptx"
    path.write_bytes(english[1]["pptx"])
    profile = f"-env:UserInstallation=file://{tmp_path}/lo"  # its own profile: no lock shared with another run
    command = ["soffice", "--headless", profile, "--convert-to", "pdf", "--outdir", str(tmp_path), str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "Error" not in done.stderr
    assert len(pdf((tmp_path / "deck.pdf").read_bytes()).pages) == len(SMALL.slides)


# ---------------------------------------------------------------- HTML
class Addresses(HTMLParser):
    """Every address in the markup (not in the scripts' text): ``(tag, attribute, value)``."""

    ATTRIBUTES = ("src", "href", "srcset", "action", "poster", "data", "formaction", "background")

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.found += [(tag, k, v or "") for k, v in attrs if k in self.ATTRIBUTES]


@SLOW
def test_the_html_file_is_one_offline_file(english):
    """plotly.js once; no address in the markup but the slides' own links (anchors into the app, which a click
    opens), no stylesheet or font from elsewhere; under 10 MB."""
    made, files, _, _ = english
    html = files["html"].decode("utf-8")
    assert len(files["html"]) < 10_000_000
    from plotly.offline import get_plotlyjs

    assert html.count(get_plotlyjs()[:200]) == 1
    parser = Addresses()
    parser.feed(html)
    assert parser.found == [("a", "href", sf.link) for sf in made.slides]
    style = re.search(r"<style>(.*?)</style>", html, re.DOTALL).group(1)
    assert "url(" not in style and "@import" not in style
    assert "<link" not in re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.DOTALL)


@SLOW
def test_the_html_file_holds_every_chart_and_text(english):
    made, files, _, _ = english
    html = files["html"].decode("utf-8")
    blob = re.search(rf'<script type="application/json" id="{FIGURES_ID}">(.*?)</script>', html, re.DOTALL)
    figures = json.loads(blob.group(1))
    assert len(figures) == sum(len(sf.views) for sf in made.slides)
    assert html.count('<section class="slide"') == len(SMALL.slides)
    for sf in made.slides:
        assert sf.title.replace("'", "&#x27;") in html


@SLOW
def test_the_shipped_decks_make_html_files_under_10_mb():
    for i, (name, deck) in enumerate(SHIPPED.items()):  # the same charts in either language
        lang = ("en", "zh")[i % 2]
        made = D.draw(deck, D.Options(lang=lang), name)
        assert not made.left_out, [s.left_out for s in made.left_out]
        assert len(deck_files(made, ["html"])["html"]) < 10_000_000


# ---------------------------------------------------------------- Chinese
def fonts_in(resources) -> set[str]:
    names = set()
    for f in (resources.get("/Font") or {}).values():
        f = f.get_object()
        desc = f.get("/FontDescriptor")
        if desc is None and "/DescendantFonts" in f:
            desc = f["/DescendantFonts"][0].get_object().get("/FontDescriptor")
        names.add(str(f.get("/BaseFont") or (desc.get_object().get("/FontName") if desc else "")))
    for x in (resources.get("/XObject") or {}).values():
        x = x.get_object()
        if "/Resources" in x:
            names |= fonts_in(x["/Resources"])
    return names


@SLOW
def test_a_chinese_deck_embeds_a_cjk_font_and_its_text_reads_back(chinese):
    made, files = chinese
    reader = pdf(files["pdf"])
    for page, s in zip(reader.pages, CHINESE.slides, strict=True):
        assert any("CJK" in name for name in fonts_in(page["/Resources"])), fonts_in(page["/Resources"])
        text = flat(page.extract_text())
        assert flat(s.words("title", "zh")) in text and flat(s.words("note", "zh")) in text
        assert re.search(r"[\u4e00-\u9fff]", text)
    prs = pptx(files["pptx"])
    assert [sl.shapes.title.text for sl in prs.slides] == [s.words("title", "zh") for s in CHINESE.slides]
    assert "lang=zh" in made.slides[0].link


# ---------------------------------------------------------------- bad input
@SLOW
def test_bad_slides_are_left_out_with_a_message_naming_them_and_the_rest_exports(bad):
    made, files = bad
    assert [sf.left_out is None for sf in made.slides] == [True, False, False, False, False]
    why = [sf.left_out for sf in made.slides[1:]]
    assert all(w.startswith(f"Slide {i} was left out") for i, w in enumerate(why, start=2))
    assert "nope" in why[0] and "no_such" in why[1] and "eight" in why[2] and "budget" in why[3]
    reader = pdf(files["pdf"])
    assert len(reader.pages) == len(BAD.slides)
    for page, sf in zip(reader.pages, made.slides, strict=True):
        assert flat(sf.title) in flat(page.extract_text())
        if sf.left_out:
            assert flat(sf.left_out) in flat(page.extract_text())
    prs = pptx(files["pptx"])
    assert len(prs.slides) == len(BAD.slides)
    said = ["\n".join(sh.text_frame.text for sh in sl.shapes if sh.has_text_frame) for sl in prs.slides]
    assert all(sf.left_out in text for sf, text in zip(made.slides[1:], said[1:], strict=True))
    html = files["html"].decode("utf-8")
    assert html.count('class="left-out"') == 4


def test_a_bad_slide_says_why_in_chinese_too():
    made = D.draw(decks.Deck((), (decks.Slide("nope"),)), D.Options(lang="zh"))
    assert made.slides[0].left_out.startswith("第 1 张幻灯片未导出")
    assert "nope" in made.slides[0].left_out


@pytest.mark.parametrize(
    "source,key",
    [
        ("no_such_deck", "deckfile_unknown"),
        ("missing/deck.json", "deckfile_no_file"),
        (f"http://localhost:8501/?deck={decks.encode(SMALL)[:60]}", "deck_damaged"),
        ("http://localhost:8501/?deck_at=2", "deck_damaged"),
    ],
)
def test_an_unknown_deck_or_a_damaged_link_is_a_config_error_in_both_languages(source, key):
    with pytest.raises(ConfigError) as err:
        D.load(source)
    assert err.value.key == key
    assert f"err.{key}" in catalog("en") and f"err.{key}" in catalog("zh")
    assert D.error_text(err.value, "zh") != D.error_text(err.value, "en")


def test_a_corrupt_deck_file_is_a_config_error(tmp_path):
    path = tmp_path / "deck.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        D.load(str(path))
    assert err.value.key == "deck_not_json"


def test_every_new_message_is_in_both_catalogs():
    keys = ["deckfile.left_out", "deckfile.download", "deckfile.make", "deckfile.get", "err.link_value"]
    keys += ["err.link_param", "err.deckfile_charts", "err.deckfile_budget", "err.deckfile_unknown"]
    for key in keys:
        assert key in catalog("en") and key in catalog("zh"), key


# ---------------------------------------------------------------- finding a deck; the command line
def test_a_deck_is_found_by_name_file_or_link(tmp_path):
    assert D.load("gqa_and_the_kv_cache") == (GQA, "gqa_and_the_kv_cache")
    assert D.load("http://host:8501/kv_cache?deck=gqa_and_the_kv_cache&deck_at=3") == (GQA, "gqa_and_the_kv_cache")
    code = decks.encode(SMALL)
    assert D.load(f"http://host:8501/?deck={code}&deck_at=2&lang=zh") == (SMALL, None)
    assert D.load(code) == (SMALL, None)
    path = tmp_path / "mine.json"
    path.write_text(decks.to_json(SMALL), encoding="utf-8")
    assert D.load(str(path)) == (SMALL, None)
    assert file_stem(SMALL, None, "zh") == "gqa_and_the_kv_cache_zh"
    assert formats_of("html, PDF") == ["pdf", "html"]
    with pytest.raises(ConfigError):
        formats_of("pdf,docx")


def test_the_command_line_writes_the_files_and_says_which_slide_was_left_out(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(decks.to_json(decks.Deck(BAD.title, BAD.slides[:2])), encoding="utf-8")
    assert main(["--deck", str(path), "--format", "html", "--out", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "Slide 2 was left out" in err and "nope" in err
    assert (tmp_path / "out" / "bad_slides_en.html").is_file() and out.strip().endswith("bad_slides_en.html")
    assert main(["--deck", "no_such_deck", "--out", str(tmp_path)]) == 2
    assert "no_such_deck" in capsys.readouterr().err


@SLOW
def test_python_m_attn_core_export_takes_a_deck(tmp_path):
    args = ["--deck", "gqa_and_the_kv_cache", "--format", "html", "--lang", "zh", "--out", str(tmp_path)]
    args += ["--base-url", "https://lecture.example.org"]
    done = subprocess.run(
        [sys.executable, "-m", "attn_core.export", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "gqa_and_the_kv_cache_zh.html").read_text(encoding="utf-8")
    assert 'lang="zh"' in html and "https://lecture.example.org/kv_sharing?lang=zh" in html


@SLOW
def test_write_puts_every_format_in_the_folder(english, tmp_path, monkeypatch):
    made, files, _, _ = english
    monkeypatch.setattr("attn_core.export.deck_files.draw", lambda *a, **k: made)
    monkeypatch.setattr("attn_core.export.deck_files.deck_files", lambda m, f, p=None: {k: files[k] for k in f})
    paths, _ = write("gqa_and_the_kv_cache", D.FORMATS, D.Options(), tmp_path)
    assert [p.name for p in paths] == [f"gqa_and_the_kv_cache_en.{f}" for f in D.FORMATS]


@SLOW
def test_a_chart_the_renderer_fails_on_leaves_its_slide_out_and_the_rest_exports(english, monkeypatch):
    from attn_core.export import deck_layout
    from attn_core.render import RenderError

    made = english[0]
    real, calls = deck_layout.render_image, []

    def first_fails(fig, fmt, *args):
        calls.append(fmt)
        if len(calls) == 1:
            raise RenderError("rendering the PNG failed: test")
        return real(fig, fmt, *args)

    monkeypatch.setattr(deck_layout, "render_image", first_fails)
    prs = pptx(deck_files(made, ["pptx"])["pptx"])
    said = ["\n".join(sh.text_frame.text for sh in sl.shapes if sh.has_text_frame) for sl in prs.slides]
    assert "Slide 1 was left out: rendering the PNG failed: test" in said[0]
    assert [len([sh for sh in sl.shapes if sh.shape_type == 13]) for sl in prs.slides] == [0, 1, 1]  # pictures


def test_charts_share_the_box_at_16_9():
    for n in range(1, 9):
        cells = chart_cells(n)
        assert len(cells) == n
        assert all(abs(c.w * 9 - c.h * 16) < 1e-6 for c in cells)


def test_a_chart_drawn_with_webgl_goes_into_the_pdf_as_a_1920_px_picture(monkeypatch):
    import plotly.graph_objects as go
    from PIL import Image

    from attn_core.export import deck_layout

    monkeypatch.setattr(deck_layout, "render_image", lambda *a: pytest.fail("no vector render for a WebGL chart"))
    buf = io.BytesIO()
    Image.new("RGB", (1920, 1080), "white").save(buf, "PNG")
    fig = go.Figure(go.Scattergl(x=[0, 1], y=[1, 0]))
    page = pdf(deck_layout._vector_or_picture(fig, buf.getvalue)).pages[0]  # noqa: SLF001
    assert (float(page.mediabox.width), float(page.mediabox.height)) == (1440, 810)
    assert images_in(page["/Resources"]) == 1
