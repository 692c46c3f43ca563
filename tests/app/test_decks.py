"""Lecture decks in the app (AppTest): open from a link, move across pages with the clicker buttons, every
slide's state applied, add the current view as a slide, reorder and delete, bad links said in the user's language."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from attn_core import decks
from tests.conftest import ROOT, no_exception
from tests.util import chart_specs


def fresh(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def bar_text(at) -> str:
    return next((m.value for m in at.markdown if m.value.startswith("**Slide ") or "第 " in m.value), "")


def click(at, key: str) -> AppTest:
    at.button(key=key).click().run()
    no_exception(at)
    return at


def test_a_shipped_deck_opens_from_its_link_and_the_clicker_walks_its_pages():
    deck = decks.shipped()["gqa_and_the_kv_cache"]
    at = fresh({"deck": "gqa_and_the_kv_cache"})
    no_exception(at)
    assert at.session_state["_page"] == "kv_sharing" and bar_text(at).startswith("**Slide 1 of 9 · Query heads share")
    assert at.button(key="deck_prev").disabled
    states = []
    for i, s in enumerate(deck.slides[1:], start=2):
        click(at, "deck_next")
        assert at.session_state["_page"] == s.page and bar_text(at).startswith(f"**Slide {i} of 9 · ")
        states.append((s.page, at.session_state["n_kv_heads"] if s.page == "kv_sharing" else None))
        if s.page == "kv_cache":
            assert at.session_state["model"] == dict(s.params).get("model", "llama-3-8b")  # the slide's, or default
            assert at.session_state.get("kv_token") == (3 if "kv_token" in dict(s.params) else None)  # 0-based
    assert states[:3] == [("kv_sharing", 8), ("kv_sharing", 1), ("kv_sharing", 2)]  # MHA, MQA, back to the default
    assert at.button(key="deck_next").disabled
    link = at.session_state["_link_params"]
    assert link["deck"] == "gqa_and_the_kv_cache" and link["deck_at"] == "9"  # the share link reopens this slide
    click(at, "deck_prev")
    assert at.session_state["_page"] == "kv_cache" and at.session_state["model"] == "llama-3-8b"


def test_a_link_opens_at_its_slide_in_chinese_and_a_damaged_one_is_said_in_chinese():
    at = fresh({"deck": "attention_from_scratch", "deck_at": "7", "lang": "zh"})
    no_exception(at)
    assert at.session_state["_page"] == "saturation" and "不缩放时" in bar_text(at)
    assert at.session_state["head_dim"] == 256 and at.session_state["scaling"] is False
    at = fresh({"deck": decks.encode(decks.shipped()["attention_from_scratch"])[:-9], "lang": "zh"})
    no_exception(at)
    assert any("链接中的幻灯片已损坏" in e.value for e in at.error) and at.get("plotly_chart")  # the page still draws


def test_add_this_view_as_slides_reorder_delete_and_download():
    at = fresh({"mask": "causal", "n_heads": "4", "n_kv_heads": "2"})
    at.text_input(key="deck_new_title").input("Causal")
    # a section open in the browser is in the share link (ui.section_box), not in a slide: slide mode shows one
    # section a slide
    at.session_state["_link_params"] = {**at.session_state["_link_params"], "x_kv_live": "true"}
    click(at, "deck_add")
    deck = at.session_state["_deck"]
    assert "x_kv_live" not in dict(deck.slides[0].params) and dict(deck.slides[0].params)["n_heads"] == "4"
    assert [(s.page, dict(s.params).get("mask"), s.words("title", "en")) for s in deck.slides] == [
        ("heatmaps", "causal", "Causal")
    ]
    at.segmented_control(key="mask").set_value("none").run()
    click(at, "deck_add")  # after the shown slide, with the page's own name as its title
    deck = at.session_state["_deck"]
    assert [dict(s.params).get("mask") for s in deck.slides] == ["causal", None]
    assert deck.slides[1].words("title", "en") == "Attention heatmaps" and at.session_state["_deck_at"] == 1
    click(at, "deck_up")
    assert [dict(s.params).get("mask") for s in at.session_state["_deck"].slides] == [None, "causal"]
    assert decks.from_json(decks.to_json(at.session_state["_deck"])) == at.session_state["_deck"]
    assert at.get("download_button")  # the deck as a file
    click(at, "deck_delete")
    assert len(at.session_state["_deck"].slides) == 1
    click(at, "deck_close")
    assert "_deck" not in at.session_state and "deck" not in at.query_params


def test_the_deck_panel_makes_the_decks_files_and_offers_them():
    """ "Download this deck": the files of the open deck in the chosen formats (here the HTML file alone, which
    needs no renderer), a download button for each; another language makes them again."""
    at = fresh({"deck": "gqa_and_the_kv_cache", "deck_at": "2"})
    no_exception(at)
    at.multiselect(key="deck_file_formats").set_value(["html"]).run()
    assert not [b for b in at.get("download_button") if b.proto.id.endswith("deck_file_html")]
    click(at, "deck_files_make")
    files = at.session_state["_deck_files"][1]
    assert list(files) == ["html"] and files["html"].startswith(b"<!DOCTYPE html>")
    assert b"Query heads share KV heads" in files["html"] and b"deck_at=9" in files["html"]
    buttons = [b for b in at.get("download_button") if "deck_file_html" in b.proto.id]
    assert len(buttons) == 1 and buttons[0].proto.label == "Download HTML"


def test_a_deck_slide_that_picks_a_section_is_its_only_navigator_with_the_pages_own_steps(app_test):
    """Slide 7 (the cache as tensors) stacked the page's section stepper ("Step 3 of 5") over the token stepper
    ("Step 4 of 64"): the deck picks the section, so its Previous and Next are the slide's navigator, and the
    deck's bar holds the title (no section heading under it); the token stepper the slide's sentence is about
    stays. Slide 8 (live decode) keeps its Run button. Without a deck the section stepper is there."""
    at = fresh({"deck": "gqa_and_the_kv_cache", "deck_at": "7", "present": "1"})
    no_exception(at)
    keys = [b.key for b in at.button]
    assert "slide__next" not in keys and "kv_token__next" in keys and "deck_next" in keys
    assert at.session_state["kv_token"] == 3 and "The cache as tensors" not in [h.value for h in at.subheader]
    assert [s["layout"]["uirevision"] for s in chart_specs(at)] == ["kv_tensors"]  # the buffers, at 256 tokens
    click(at, "deck_next")  # slide 8: the live decode, its Run button on the slide
    keys = [b.key for b in at.button]
    assert "slide__next" not in keys and "kv_run" in keys
    for at_slide in (5, 6, 8):  # the deck's other slides on the KV-cache page pick their sections too
        at = fresh({"deck": "gqa_and_the_kv_cache", "deck_at": str(at_slide), "present": "1"})
        assert "slide__next" not in [b.key for b in at.button], at_slide
    at = app_test("app_pages/kv_cache.py", query={"slide": "3"}, session={"present": True})
    assert {"slide__next", "kv_token__next"} <= {b.key for b in at.button}
