"""Every page in Chinese: no English prose left on screen (labels, text, chart titles and axes)."""

from __future__ import annotations

import re

import pytest

from attn_core.views import PAGES as REGISTRY
from attn_core.views.base import controls
from tests.conftest import no_exception
from tests.util import chart_specs

PAGES = [p.script for p in REGISTRY]
# Words that stay English in Chinese technical writing: names, acronyms, code, units.
KEEP = {
    "softmax",
    "repeat_kv",
    "repeat_interleave",
    "repeat",
    "flashattention",
    "float16",
    "float32",
    "bfloat16",
    "query",
    "key",
    "value",
    "head",
    "heads",
    "the",
    "cat",
    "sat",
    "mat",
    "because",
    "was",
    "tired",
    "on",
    "it",
    "le",
    "chat",
    "était",
    "fatigué",
    "llama",
    "mistral",
    "qwen",
    "gemma",
    "falcon",
    "deepseek",
    "gpt",
    "ainslie",
    "torch",
    "pytorch",
    "cuda",
    "cpu",
    "gpu",
    "mps",
    "mha",
    "gqa",
    "mqa",
    "mla",
    "kib",
    "mib",
    "gib",
    "tib",
    "rope",
    "lora",
    "huggingface",
    "config",
    "json",
    "arxiv",
    "et",
    "al",
    "lite",
    "small",
    "png",
    "svg",
    "pdf",
    "csv",
    "html",
    "normal",
    "nan",
    "inf",
    "max",
    "exp",
    "sum",
    "log",
    "var",
    "std",
    "english",
    "language",
    "fp16",
    "bf16",
    "fp8",
    "int8",
    "int4",
    "fp32",
    "instruct",
    "base",
}
PROSE = re.compile(r"(?:\b[A-Za-z][a-z]{2,}\b[ ,]+){3,}")


def english_runs(text: str) -> list[str]:
    text = re.sub(r"《[^》]*》", "", text)  # cited titles stay in their original language
    runs = []
    for m in PROSE.finditer(text):
        words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z_]+", m.group(0))]
        if sum(w not in KEEP for w in words) >= 3:
            runs.append(m.group(0).strip())
    return runs


def screen_texts(at) -> list[str]:
    texts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success"):
        texts += [e.value for e in getattr(at, kind)]
    for kind in (
        "slider",
        "select_slider",
        "toggle",
        "text_area",
        "segmented_control",
        "number_input",
        "selectbox",
        "radio",
        "expander",
        "button",
    ):
        for w in getattr(at, kind):
            texts.append(getattr(w, "label", "") or "")
            texts.append(getattr(w, "help", "") or "")
    for spec in chart_specs(at):
        lay = spec.get("layout", {})
        texts.append(str(lay.get("title", {}).get("text", "")))
        for k, v in lay.items():
            if k.startswith(("xaxis", "yaxis")) and isinstance(v, dict):
                texts.append(str(v.get("title", {}).get("text", "")))
        texts += [str(a.get("text", "")) for a in lay.get("annotations", [])]
        texts += [str(tr.get("name", "")) for tr in spec.get("data", [])]
    return texts


def views_of(page: str) -> list[dict[str, str]]:
    """Every view of a page (the options of its view field in the registry), or the page as it opens."""
    spec = next(p for p in REGISTRY if p.script == page)
    if spec.view_field is None:
        return [{}]
    return [{spec.view_field: v} for v in controls(spec.params)[spec.view_field].options]


@pytest.mark.parametrize("page", PAGES)
def test_page_in_chinese_has_no_english_prose(app_test, page):
    for extra in views_of(page):
        at = app_test(page, query={"lang": "zh", **extra})
        no_exception(at)
        found = [r for text in screen_texts(at) for r in english_runs(text)]
        assert found == [], f"{page} {extra}: {found[:8]}"
