"""Fuzz every page through URL query parameters and widget values (issue: reliability).

For each page, a seeded generator builds 120 parameter sets (fewer for the model pages) from the page's own
widget keys and a pool of hostile values (non-divisible heads, 0, negatives,
10^9, NaN, non-numeric strings, unicode, empty text, HTML). Each set must run
with no uncaught exception, and whenever the page did not take a value as
given it must say so in a visible warning, info or error that names the key.
"""

from __future__ import annotations

import random

import pytest

from attn_core.views import PAGES as REGISTRY
from attn_core.views.base import controls
from tests.conftest import no_exception

N_SETS = 30  # per page: seeded, so a failure reproduces; the regressions below are kept apart (CI time: 9 pages)
HOSTILE = [
    "",
    " ",
    "0",
    "-1",
    "-7",
    "1e9",
    "1000000000",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "abc",
    "３",
    "二",
    "😀",
    "<script>alert(1)</script>",
    "1.5",
    "2.7",
    "true",
    "false",
    "TRUE",
    "12",
    "5",
    "3",
    " 4 ",
    "0x10",
    "1,2",
    "%00",
    "null",
    "None",
    "[]",
    "{}",
    "'; DROP TABLE",
    "\u202eevil",
    "2 · GQA",
    "8 · MHA",
    "a" * 3000,
]

# page -> widget keys fuzzed through the URL: every control of the page's Params in the registry (the one
# source of the page's widgets), but the global seed (the sidebar's) and command-line-only switches
PAGES = {
    p.script: [name for name, c in controls(p.params).items() if c.kind != "seed" and not c.cli_only] for p in REGISTRY
}

# examples that once failed, kept as regression tests
REGRESSIONS = [
    ("app_pages/heatmaps.py", {"n_heads": "12", "n_kv_heads": "5"}),
    ("app_pages/heatmaps.py", {"mask": "padding", "pad_len": "0"}),
    ("app_pages/heatmaps.py", {"cross": "true", "mask": "causal"}),
    ("app_pages/heatmaps.py", {"source": "synthetic", "seq_len": "1", "mask": "padding"}),
    ("app_pages/heatmaps.py", {"text": "   ", "view": "steps"}),
    ("app_pages/heatmaps.py", {"view": "steps", "head": "63", "n_heads": "4"}),
    # found by the fuzz: a fractional n_kv_heads was replaced silently; a bool on a non-default page was
    # swallowed when that page was reached after another page
    ("app_pages/heatmaps.py", {"scaling": "12", "n_kv_heads": "1.5"}),
    ("app_pages/saturation.py", {"scaling": "1.5", "row": "<script>alert(1)</script>", "dist": "5"}),
    ("app_pages/kv_sharing.py", {"n_heads": "12", "n_kv_heads": "5", "kv_view": "maps"}),
    ("app_pages/kv_cache.py", {"model": "custom", "n_heads": "7", "n_kv_heads": "2", "seq_len": "1000000"}),
]


def adopted(raw: str, value) -> bool:
    if isinstance(value, bool):
        return raw.strip().lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(raw.strip().split(" ")[0]) == float(value)
        except ValueError:
            return False
    return raw == str(value)


def widget_value(at, key):
    for kind in (
        "slider",
        "select_slider",
        "segmented_control",
        "toggle",
        "text_area",
        "number_input",
        "selectbox",
        "radio",
        "checkbox",
        "text_input",
    ):
        try:
            return getattr(at, kind)(key=key).value
        except KeyError:
            continue
    return None  # not shown with these settings (e.g. pad_len without a padding mask)


def notices(at) -> str:
    return "\n".join(e.value for e in [*at.warning, *at.info, *at.error])


def check(at, query: dict[str, str]) -> None:
    no_exception(at)
    text = notices(at)
    for key, raw in query.items():
        value = widget_value(at, key)
        if value is None or adopted(raw, value):
            continue
        shown = raw if len(raw) <= 40 else raw[:37]
        assert key in text or shown in text, f"{key}={raw!r} became {value!r} without a notice; notices: {text!r}"


# fewer sets on the pages whose runs are slow (a real model's forward pass): PageChecks.fuzz_sets
N_SETS_OF = {p.script: p.checks.fuzz_sets for p in REGISTRY}


def param_sets(page: str, keys: list[str]):
    rng = random.Random(f"fuzz:{page}")
    for _ in range(N_SETS_OF.get(page, N_SETS)):
        chosen = rng.sample(keys, rng.randint(1, min(4, len(keys))))
        yield {k: rng.choice(HOSTILE + [str(rng.randint(-3, 70))]) for k in chosen}


@pytest.mark.parametrize("page", list(PAGES))
def test_fuzz_url_parameters(app_test, page):
    for query in param_sets(page, PAGES[page]):
        at = app_test(page, query=query)
        try:
            check(at, query)
        except AssertionError as err:
            raise AssertionError(f"query {query!r}: {err}") from None


@pytest.mark.parametrize("page,query", REGRESSIONS)
def test_regressions(app_test, page, query):
    check(app_test(page, query=query), query)


TEXTS = [
    "",
    " \n\t ",
    "<b>bold</b><script>alert('x')</script>",
    "**markdown** _x_ [a](javascript:alert(1))",
    "مرحبا بالعالم",
    "注意力机制。" * 50,
    "😀" * 300,
    "a\u0000b",
    "x" * 1999,
    "\u202e" + "abc",
]


def test_fuzz_text_widget_values(app_test):
    at = app_test("app_pages/heatmaps.py")
    for text in TEXTS:
        at.text_area(key="text").set_value(text).run()
        no_exception(at)
        if not text.strip() or "\u0000" in text and len(text) < 4:
            continue
        assert at.get("plotly_chart") or at.error, text[:20]


# fewer moves where each run is slow (saturation re-measures its sweep): PageChecks.widget_steps
WIDGET_STEPS_OF = {p.script: p.checks.widget_steps for p in REGISTRY}


@pytest.mark.parametrize("page", list(PAGES))
def test_fuzz_widget_values(app_test, page):
    """Random but allowed slider and toggle moves in sequence, as a restless student would make them."""
    rng = random.Random(f"widgets:{page}")
    at = app_test(page)
    for step in range(WIDGET_STEPS_OF.get(page, 40)):
        widgets = [w for w in [*at.slider, *at.toggle] if w.key and not w.disabled]
        w = rng.choice(widgets)
        if hasattr(w, "min") and w.min is not None:
            lo, hi, st = float(w.min), float(w.max), float(w.step or 1)
            value = lo + st * rng.randint(0, int(round((hi - lo) / st)))
            value = int(value) if float(w.step or 1).is_integer() and lo.is_integer() else round(value, 6)
        else:
            value = not w.value
        w.set_value(value).run()
        assert not at.exception, f"step {step}: {w.key}={value!r}: {[e.value for e in at.exception]}"


# ---------------------------------------------------------------- every view of every page at the extremes
# Each page's view choices (every value of every view or tab control) crossed with the extremes of its shape
# controls (each page's PageChecks.extremes): one head, MQA and MHA at the most heads, d_k 1 and the largest, the shortest and longest sequence,
# cross-attention. A slider built from the data (head, window start, row, pad_len) collapses to one value at
# these extremes, which is where pages used to crash.
VIEWS = {p.script: {p.view_field: list(controls(p.params)[p.view_field].options)} for p in REGISTRY if p.view_field}


def sub_shapes(extremes: tuple[dict[str, str], ...]) -> list[dict[str, str]]:
    """Where a view's sub-choices are tried: the default, the smallest and the longest of a page's extremes."""
    longest = [e for e in extremes if e.get("seq_len") == "8192" and len(e) == 2]
    return [*extremes[:2], *longest[:1]]


def view_cases():
    """Every value of each page's view control crossed with the page's extremes (PageChecks.extremes), its views'
    sub-choices at a few of them, and the page's own cases as they are."""
    for spec in REGISTRY:
        page, checks = spec.script, spec.checks
        for key, values in VIEWS.get(page, {}).items():
            for value in values:
                for shape in checks.extremes:
                    yield page, {**shape, key: value}
                for sub, sub_values in checks.sub_choices.get(value, {}).items():
                    for sub_value in sub_values:
                        for shape in sub_shapes(checks.extremes):
                            yield page, {**shape, key: value, sub: sub_value}
        for query in checks.cases:
            yield page, query


def case_id(case) -> str:
    page, query = case
    return page.split("/")[1][:-3] + ":" + ",".join(f"{k}={v}" for k, v in query.items())


@pytest.mark.parametrize("case", list(view_cases()), ids=case_id)
def test_every_view_at_the_extremes(app_test, case):
    """No exception in any view at any extreme; each shows a chart, a table or a message saying what to change."""
    page, query = case
    at = app_test(page, query=query)
    check(at, query)
    shown = (
        at.get("plotly_chart") or at.dataframe or at.table or at.error or at.warning or at.info
    )  # a chart, or a message
    live = {"generate": "gen_run", "decode": "mla_run", "measured": "cx_run"}.get(
        query.get("view")
    )  # a live run waits for its Start
    live = "lab_run" if page == "app_pages/lab.py" else live
    ready = live is not None and (live in [b.key for b in at.button] or at.info)
    assert shown or ready, f"{query}: nothing drawn, no message and nothing to start"


@pytest.mark.parametrize("page,key", [(p, k) for p, c in VIEWS.items() for k in c])
def test_view_lists_are_complete(app_test, page, key):
    """The lists above hold every option a page offers, so a new view is fuzzed as soon as it exists."""
    at = app_test(page)
    widget = next(w for w in (*at.segmented_control, *at.selectbox) if w.key == key)  # a button row or a list
    assert len(widget.options) == len(VIEWS[page][key])
