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


# a real model's page: each new text is a forward pass, so fewer sets (its extremes are listed below);
N_SETS_OF = {
    "app_pages/models.py": 25,
    "app_pages/mla.py": 30,  # MLA: few free-form fields; its extremes are listed
    "app_pages/complexity.py": 25,  # counts are arithmetic; the sweep waits for its Start
    "app_pages/conv_attention.py": 25,
    "app_pages/lab.py": 25,  # its extremes are listed
}


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


# saturation: a move to 8192 keys or 16,384 samples re-measures the whole sweep (seconds); its extremes are
# covered view by view in test_every_view_at_the_extremes
WIDGET_STEPS_OF = {
    "app_pages/saturation.py": 8,  # each of its runs measures up to 16384 rows of 8192 keys
    "app_pages/heatmaps.py": 25,  # its moves reach 8192 tokens and 64 heads
}


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
# controls: one head, MQA and MHA at the most heads, d_k 1 and the largest, the shortest and longest sequence,
# cross-attention. A slider built from the data (head, window start, row, pad_len) collapses to one value at
# these extremes, which is where pages used to crash.
VIEWS = {p.script: {p.view_field: list(controls(p.params)[p.view_field].options)} for p in REGISTRY if p.view_field}
# sub-choices shown inside one view, each of their values tried in that view
SUB_CHOICES = {
    ("app_pages/heatmaps.py", "grid"): {"cscale": ["fixed", "fit"], "pool": ["max", "mean"]},
    ("app_pages/heatmaps.py", "zoom"): {"cscale": ["fixed", "fit"]},
    ("app_pages/kv_sharing.py", "mapping"): {"built_with": ["contiguous", "interleaved"]},
    ("app_pages/kv_sharing.py", "convert"): {"conv_source": ["correlated", "random"]},
}
SHAPES = [  # one head, d_k 1 and one token are each covered by the smallest shape (all three at once)
    {},
    {"n_heads": "1", "n_kv_heads": "1", "head_dim": "1", "source": "synthetic", "seq_len": "1"},
    {"n_heads": "64", "n_kv_heads": "1"},
    {"n_heads": "64", "n_kv_heads": "64"},
    {"head_dim": "256"},
    {"source": "synthetic", "seq_len": "8192"},
    {"mask": "causal", "source": "synthetic", "seq_len": "2"},
    {"mask": "padding", "source": "synthetic", "seq_len": "1"},
    {"n_heads": "64", "n_kv_heads": "64", "head_dim": "256", "source": "synthetic", "seq_len": "64"},
]
CROSS_SHAPES = [
    {"cross": "true"},
    {"cross": "true", "n_heads": "1", "n_kv_heads": "1", "cross_text": "x", "mask": "padding"},
    {"cross": "true", "source": "synthetic", "seq_len": "8192", "cross_text": "x"},
]
# the heatmaps page on a pretrained model's layer (issue 15): every view, and its extremes
MODEL_SHAPES = [
    {"attn_from": "smollm2-135m", "model_layer": "29", "source": "synthetic", "seq_len": "1"},
    {"attn_from": "smollm2-135m", "model_layer": "99", "head": "63", "n_heads": "64", "mask": "padding"},
    {"attn_from": "minilm-l6", "source": "synthetic", "seq_len": "8192"},
    {"attn_from": "minilm-l6", "text": "小猫坐在垫子上。", "cross": "true"},
]
KV_SHARING_SHAPES = [{"d_model": "8"}, {"d_model": "4096", "n_heads": "64", "n_kv_heads": "8"}]
SATURATION_CASES = [
    {"head_dim": "1"},
    {"head_dim": "1024", "scaling": "false"},
    {"seq_len": "2", "samples": "16"},
    {"seq_len": "8192", "samples": "16384", "head_dim": "1024"},
    {"seq_len": "8192", "row": "8191", "temperature": "0.1"},
    {"dist": "projected", "head_dim": "1", "temperature": "5"},
    {"dist": "projected", "seq_len": "2", "row": "1"},
]
KV_CACHE_CASES = [
    {"model": "custom", "n_heads": "1", "n_kv_heads": "1", "head_dim": "1", "n_layers": "1", "seq_len": "1"},
    {
        "model": "custom",
        "n_heads": "128",
        "n_kv_heads": "128",
        "head_dim": "256",
        "n_layers": "128",
        "batch": "256",
        "seq_len": "1048576",
        "dtype": "fp32",
    },
    {"model": "custom", "n_heads": "128", "n_kv_heads": "1", "dtype": "int4", "y_scale": "linear"},
    {"model": "deepseek-v3", "batch": "256", "seq_len": "1048576", "stack_weights": "true"},
    {"model": "deepseek-v2-lite", "dec_wrong": "true", "dec_steps": "2", "dec_prompt": "1"},
    {"model": "falcon-7b", "dec_wrong": "true", "dtype": "fp8", "weights_dtype": "int4", "stack_weights": "true"},
    {"model": "gpt2", "seq_len": "1", "device_gib": "1", "stack_weights": "true"},
    # the shipped pretrained models (issue 15): the real decoder's own decode at its extremes, the encoder
    {"model": "smollm2-135m", "dec_real": "true", "dec_steps": "2", "dec_prompt": "1", "dec_layers": "8"},
    {"model": "smollm2-135m", "dec_real": "true", "dec_wrong": "true", "dec_batch": "16", "seq_len": "1048576"},
    {"model": "minilm-l6", "dec_real": "true", "stack_weights": "true", "dtype": "int4"},
    # the cache as tensors: no GQA divisor (6 has 2 and 3: GQA-2 chosen; 2 has none), a slide past the last token
    {"model": "custom", "n_heads": "6", "n_kv_heads": "6", "seq_len": "2", "present": "true", "slide": "99"},
    {"model": "custom", "n_heads": "2", "n_kv_heads": "2", "seq_len": "64", "slide": "abc", "present": "true"},
]


MODEL_SHAPES = [
    {},
    {"model": "minilm-l6"},
    {"example": "repeated", "repeat_len": "2"},
    {"example": "own", "text": "x"},
    {"example": "chinese", "layer": "29", "head": "8"},
    {"model": "minilm-l6", "example": "repeated", "repeat_len": "255", "layer": "5", "head": "11"},
    {"model": "local", "model_path": "/nonexistent"},
]
# the MLA page: every view at the smallest custom layer, the largest preset and the longest inputs
MLA_SHAPES = [
    {},
    {
        "preset": "custom",
        "d_model": "8",
        "n_heads": "1",
        "kv_lora_rank": "2",
        "qk_nope": "2",
        "qk_rope": "2",
        "v_dim": "1",
        "q_lora_rank": "0",
        "n_layers": "1",
        "seq_len": "2",
        "dec_steps": "1",
        "dec_prompt": "1",
    },
    {"preset": "deepseek-v3", "seq_len": "64", "head": "127", "cache_len": "1048576", "n_kv_heads": "1"},
    {"preset": "custom", "qk_nope": "3", "mode": "rope_on_latent", "n_heads": "32", "n_kv_heads": "5"},
]
# the training lab: every experiment at the smallest and the largest custom model, and one over the time budget
LAB_SHAPES = [
    {},
    {
        "experiment": "custom",
        "lab_task": "recall",
        "lab_vocab": "8",
        "lab_length": "32",
        "lab_layers": "1",
        "lab_d_model": "16",
        "lab_heads": "1",
        "lab_head_dim": "2",
        "lab_steps": "5",
        "lab_seeds": "5",
    },
    {
        "experiment": "custom",
        "lab_layers": "4",
        "lab_d_model": "256",
        "lab_heads": "8",
        "lab_kv_heads": "1",
        "lab_head_dim": "256",
        "lab_batch": "128",
        "lab_steps": "1000",
        "lab_position": "learned",
        "lab_scale": "mup",
    },
]
# the cost page: every view at the smallest layer and the largest (whose sweep the memory budget refuses)
COMPLEXITY_SHAPES = [
    {},
    {"seq_len": "64", "d_model": "16", "n_heads": "1", "n_kv_heads": "1", "head_dim": "4"},
    {"seq_len": "8192", "d_model": "4096", "n_heads": "64", "n_kv_heads": "1", "head_dim": "256", "causal": "true"},
]
# attention as convolution: the largest layer (64×64, 7×7 = 49 heads), the smallest (K = 1), a typed kernel
CONV_SHAPES = [
    {},
    {"image_size": "64", "k": "7", "alpha": "0.05", "q_row": "63", "q_col": "0", "pattern": "gradient"},
    {"image_size": "8", "k": "1", "alpha": "10", "seq_len": "5", "query": "4", "shift": "-3", "padding": "existing"},
    {"kernel": "custom", "kernel_text": "1 2; 3 4"},
]
OWN_SHAPES = {
    "app_pages/mla.py": MLA_SHAPES,
    "app_pages/complexity.py": COMPLEXITY_SHAPES,
    "app_pages/conv_attention.py": CONV_SHAPES,
}
MODEL_CASES = [
    {"view": "layer", "example": "repeated", "repeat_len": "1024", "cscale": "fixed", "pool": "mean"},
    {"view": "head", "example": "repeated", "repeat_len": "100", "q_start": "199", "k_start": "0"},
    {"view": "generate", "model": "minilm-l6", "gen_tokens": "256"},
]


def view_cases():
    for page, choices in VIEWS.items():
        if page == "app_pages/models.py":  # a real model's shape is fixed: its inputs and models are the extremes
            for value in choices["view"]:
                for shape in MODEL_SHAPES:
                    yield page, {**shape, "view": value}
            for query in MODEL_CASES:
                yield page, query
            continue
        if page in OWN_SHAPES:  # their own shapes (a preset, an image, a layer's widths), not heads over tokens
            for value in choices["view"]:
                for shape in OWN_SHAPES[page]:
                    yield page, {**shape, "view": value}
            continue
        if page == "app_pages/lab.py":  # its own shapes: experiments and a small model, not heads over tokens
            for value in choices["experiment"]:
                for shape in LAB_SHAPES:
                    yield page, {**shape, "experiment": value}
            continue
        shapes = SHAPES + (CROSS_SHAPES if page == "app_pages/heatmaps.py" else KV_SHARING_SHAPES)
        for key, values in choices.items():
            for value in values:
                for shape in shapes:
                    yield page, {**shape, key: value}
                # a view's own sub-choices at the default, the smallest and the longest shapes
                for sub, sub_values in SUB_CHOICES.get((page, value), {}).items():
                    for sub_value in sub_values:
                        for shape in (SHAPES[0], SHAPES[1], SHAPES[5]):  # default, smallest, 8192 tokens
                            yield page, {**shape, key: value, sub: sub_value}
    for model in ("smollm2-135m", "minilm-l6"):
        for view in VIEWS["app_pages/heatmaps.py"]["view"]:
            yield "app_pages/heatmaps.py", {"attn_from": model, "view": view}
    for query in MODEL_SHAPES:
        yield "app_pages/heatmaps.py", query
    for query in SATURATION_CASES:
        yield "app_pages/saturation.py", query
    for model in ("custom", "gpt2", "llama-2-7b", "llama-3-8b", "falcon-7b", "deepseek-v3"):
        yield "app_pages/kv_cache.py", {"model": model}
    for query in KV_CACHE_CASES:
        yield "app_pages/kv_cache.py", query


def case_id(case) -> str:
    page, query = case
    return page.split("/")[1][:-3] + ":" + ",".join(f"{k}={v}" for k, v in query.items())


@pytest.mark.parametrize("case", list(view_cases()), ids=case_id)
def test_every_view_at_the_extremes(app_test, case):
    """No exception in any view at any extreme; each shows a chart, a table or a message saying what to change."""
    page, query = case
    at = app_test(page, query=query)
    check(at, query)
    shown = at.get("plotly_chart") or at.dataframe or at.error
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
    assert len(at.segmented_control(key=key).options) == len(VIEWS[page][key])
