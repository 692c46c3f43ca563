"""The KV-cache page's tensor view (the cache as tensors) in AppTest: at the page's extremes, in both languages,
and stepped one frame at a time with Previous / Next in presentation mode."""

import json

from attn_core.figures import Style
from attn_core.runtime.units import format_bytes
from attn_core.views import kv_cache as kc
from tests.conftest import no_exception
from tests.util import chart_specs

PAGE = "app_pages/kv_cache.py"


def tensors(at) -> dict:
    return next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_tensors")


def engine_fill(query: dict):
    p = kc.Params(**{k: (int(v) if v.isdigit() else v) for k, v in query.items()})
    return kc.tensor_fill(p, kc.calculator(p))


def test_the_largest_cache_in_chinese_plays_every_frame_with_the_engine_s_bytes(app_test):
    query = {
        "model": "custom",
        "n_heads": "128",
        "n_kv_heads": "128",
        "head_dim": "256",
        "n_layers": "128",
        "seq_len": "1048576",
        "batch": "256",
        "dtype": "fp32",
    }
    at = app_test(PAGE, query=query, session={"lang": "zh"})
    no_exception(at)
    assert not at.error
    fill = engine_fill(query)
    spec = tensors(at)
    assert len(json.dumps(spec)) < 1_000_000  # what the browser receives, all 64 frames included
    assert [f["name"] for f in spec["frames"]] == [str(t) for t in fill.tokens]
    assert [f["data"][-1]["x"] for f in spec["frames"]] == [list(b) for b in fill.bytes]
    assert spec["frames"][-1]["data"][-1]["text"][0] == f"{format_bytes(fill.bytes[-1][0])} ({fill.bytes[-1][0]:,} B)"
    assert spec["layout"]["updatemenus"][0]["buttons"][0]["label"] == "▶ 播放"
    assert "张量视角下的缓存" in spec["layout"]["title"]["text"]
    assert kc.tensor_caption(fill, Style(lang="zh")) in [c.value for c in at.caption]


def test_one_head_and_one_token_in_english(app_test):
    query = {"model": "custom", "n_heads": "1", "n_kv_heads": "1", "head_dim": "1", "n_layers": "1", "seq_len": "1"}
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert not at.error
    spec = tensors(at)
    assert len(spec["frames"]) == 1 and spec["frames"][0]["data"][-1]["x"] == [2 * 2]  # K and V, 1 element, fp16
    assert any("only MHA is drawn" in c.value for c in at.caption)


def test_presentation_mode_steps_one_frame_with_next(app_test):
    query = {"model": "custom", "n_heads": "4", "n_kv_heads": "2", "seq_len": "8", "slide": "3", "kv_token": "3"}
    at = app_test(PAGE, query=query, session={"present": True})  # slide 3: the tensors; token 3
    no_exception(at)
    fill = engine_fill({k: v for k, v in query.items() if k not in ("slide", "kv_token")})
    spec = tensors(at)
    assert "frames" not in spec and "3 of 8 tokens" in spec["layout"]["title"]["text"]
    assert next(t for t in spec["data"] if t["type"] == "bar")["x"] == list(fill.bytes[2])
    at.button(key="kv_token__next").click().run()
    spec = tensors(at)
    assert "4 of 8 tokens" in spec["layout"]["title"]["text"]
    assert next(t for t in spec["data"] if t["type"] == "bar")["x"] == list(fill.bytes[3])
