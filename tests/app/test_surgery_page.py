"""AppTest: the surgery page with the shipped models, on 128 tokens of the evaluation text.

What the page draws and says is checked against the engine run directly (the same edit evaluated by
:mod:`attn_core.pretrained.surgery`, the layer captured by ``model_attention``); bad input (a huge paste, a file
that is not a config, an impossible number of KV heads) gets a message and keeps what was shown.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attn_core.figures import Style
from attn_core.pretrained import surgery as sg
from attn_core.pretrained.models import model_attention
from attn_core.views import surgery as sv
from tests.conftest import no_exception
from tests.util import arr, chart_specs, grid_panel

PAGE = "app_pages/surgery.py"
SHORT = {"sg_tokens": "128"}
pytestmark = pytest.mark.usefixtures("smollm2")  # skip (or fail under CI) when the model packages are missing


@pytest.fixture(scope="module")
def smollm2():
    from tests.models.conftest import _shipped

    return _shipped("smollm2-135m")


@pytest.fixture(scope="module")
def short(smollm2):
    """SmolLM2's 128 ids of the English text, and the original's reading of them."""
    ids = sv.eval_input(smollm2, sv.Params(sg_tokens=128)).ids
    return ids, sg.reference_of(smollm2, ids)


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def titled(at, words: str) -> dict:
    return next(s for s in chart_specs(at) if words in s["layout"]["title"]["text"])


def test_pooling_kv_heads_shows_the_engines_numbers_and_the_maps_before_and_after(app_test, smollm2, short):
    ids, ref = short
    at = app_test(PAGE, query=SHORT)
    no_exception(at)
    orig = sg.evaluate(smollm2, ids, ref)
    pooled = sg.pool_kv_heads(smollm2, 1, "mean")
    want = sg.evaluate(pooled, ids, ref)
    body = texts(at)
    assert f"perplexity {sv.q_text(orig.perplexity, True)} → **{sv.q_text(want.perplexity, True)}**" in body
    assert "KV cache for 128 tokens 5.62 MiB → **1.88 MiB** (67% less)" in body  # 2·30·3·64·4 B a token, then 1 KV head
    assert "breaks the model" in body  # thousands of times the perplexity: the verdict follows the numbers
    bars = {t["name"]: arr(t["y"])[0] for t in titled(at, "KV heads pooled")["data"]}
    assert bars["mean"] == pytest.approx(want.perplexity, rel=1e-6)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == ["3 · GQA", "1 · MQA"] and list(table.iloc[:, 1]) == ["45.0 KiB", "15.0 KiB"]
    maps = titled(at, "Layer 17, head 3")  # SmolLM2's induction head, on the first 16 tokens of the text's prose
    panels = [t["text"] for t in maps["layout"]["annotations"] if t["text"].startswith("<b>")]
    assert panels == ["<b>original</b>", "<b>1 KV head (MQA), mean</b>"]
    prose = sv.map_ids(sv.Params(), sv.eval_input(smollm2, sv.Params(sg_tokens=128)), Style())[0]
    assert smollm2.tokenizer.decode(list(prose)).startswith("It is a truth universally acknowledged")
    for i, m in enumerate((smollm2, pooled)):
        att = model_attention(m, "", 17, with_weights=True, ids=list(prose))
        drawn, rows, cols = grid_panel(maps, i)
        assert len(rows) == len(cols) == 16 and rows[0].startswith("It")
        assert np.allclose(np.nan_to_num(drawn), att.weights[0, 3], atol=1e-5)


def test_the_score_scale_silenced_heads_and_eviction_match_the_engine(app_test, smollm2, short):
    ids, ref = short
    at = app_test(PAGE, query={**SHORT, "view": "scale", "sg_factor": "2"})
    no_exception(at)
    x2 = sg.evaluate(sg.scale_scores(smollm2, 2.0), ids, ref)
    curve = titled(at, "quality against the factor")["data"][0]
    assert arr(curve["y"])[3] == pytest.approx(x2.perplexity, rel=1e-6)  # ¼, ½, 1, 2, 4, none
    assert len(chart_specs(at)) == 3 and "Averaged over the 30 layers" in texts(at)

    at = app_test(PAGE, query={**SHORT, "view": "ablate", "sg_layer": "16", "sg_head": "0"})
    no_exception(at)
    kl = sg.evaluate(sg.ablate_heads(smollm2, 16, [0]), ids, ref).kl
    assert arr(titled(at, "layer 16: what silencing")["data"][0]["y"])[0] == pytest.approx(kl, rel=1e-5)
    body = texts(at)
    assert "previous-token heads of this layer" in body and "head 0 (score 0.89" in body  # the models page's roles
    assert "Layer 17 reads the change" in body

    at = app_test(PAGE, query={**SHORT, "view": "evict", "sg_window": "32"})
    no_exception(at)
    sinks = sg.evaluate(sg.evict_cache(smollm2, 32, 4), ids, ref)
    drawn = next(t for t in titled(at, "perplexity along the text")["data"] if t["name"] == "w = 32, k = 4")
    assert np.allclose(arr(drawn["y"]), sv.position_curve(sinks.token_losses, 32)[1], rtol=1e-6)
    assert "From position 36 on" in texts(at)


def test_bad_input_gets_a_message_and_keeps_what_is_shown(app_test):
    at = app_test(PAGE, query={**SHORT, "sg_kv": "2"})  # SmolLM2's 3 KV heads cannot become 2
    no_exception(at)
    assert any("sg_kv" in w.value for w in at.warning) and "**1 KV head (MQA), mean:**" in texts(at)

    at = app_test(PAGE, query={**SHORT, "sg_text": "own"})
    at.text_area(key="sg_own").set_value("The cat sat on the mat. " * 2000).run()  # 48,000 characters
    no_exception(at)
    assert any("48,000" in w.value and "20,000" in w.value for w in at.warning)  # cut, and said so
    assert re.search(r"The text has [\d,]+ tokens; the first 128 are read", texts(at)) and len(chart_specs(at)) == 2

    at = app_test(PAGE, query={"view": "card", "sg_card": "paste"})
    no_exception(at)
    assert len(chart_specs(at)) == 2 and "32 query heads share 8 KV heads" in texts(at)  # Llama-3-8B's config
    for bad, said in (
        ("{not json", "it cannot be read as JSON"),
        (json.dumps({"model_type": "t5", "d_model": 8}), "the architecture t5 is not known"),
        ('{"model_type": "llama", "hidden_size": 8}', "it has no `num_attention_heads`"),
        ("x" * 150_000, "it cannot be read as JSON"),
    ):
        at.text_area(key="sg_config").set_value(bad).run()
        no_exception(at)
        assert said in at.error[0].value
        assert "Still showing the last card read: config.json." in texts(at) and len(chart_specs(at)) == 2
    assert any("150,000" in w.value for w in at.warning)


def test_a_bad_config_is_refused_in_chinese(app_test):
    at = app_test(PAGE, query={"view": "card", "sg_card": "paste", "sg_config": "[1, 2]", "lang": "zh"})
    no_exception(at)
    assert at.error[0].value == "config.json 不是模型配置：它不是 JSON 对象（config.json 是一个 {…}，里面是各项设置）。"
    assert not chart_specs(at) and not at.info  # no card read yet, none to keep: the message alone


def test_the_cards_of_the_shipped_files_read_their_headers_alone_and_name_gemmas_terms(app_test):
    at = app_test(PAGE, query={"view": "card", "model": "gemma3-270m", "sg_card_len": "32768"})
    no_exception(at)
    body = texts(at)
    assert "Gemma Terms of Use (https://ai.google.dev/gemma/terms)" in body
    assert "**gemma-3-270m-q4_k_m.gguf** (gemma3, MQA): 4 query heads share 1 KV head" in body
    assert "15 of its 18 layers keep only the last 512 tokens" in body
    ms = int(re.search(r"Read in (\d+) ms", body).group(1))
    assert ms < 1000  # a GGUF header, never the 253 MB of weights
    (cache, diagram) = chart_specs(at)
    assert "1.03 GiB at 32K tokens" not in cache["layout"]["title"]["text"]  # windows counted: far less than global
    at = app_test(PAGE, query={"view": "card", "model": "minilm-l6"})
    no_exception(at)
    assert "(bert, MHA): 12 query heads share 12 KV heads" in texts(at)


def test_gemma_says_its_local_layers_already_slide(app_test):
    at = app_test(PAGE, query={"model": "gemma3-270m", "view": "evict", "sg_tokens": "128", "sg_window": "32"})
    no_exception(at)
    body = texts(at)
    assert "Gemma 3 270M's 15 local layers already keep only the last 512 tokens" in body
    assert "Gemma Terms of Use" in body and "From position 36 on" in body
    at = app_test(PAGE, query={"model": "gemma3-270m", "sg_tokens": "128"})  # MQA: nothing to pool
    no_exception(at)
    assert "already has one KV head (MQA)" in texts(at)
    assert "4 query heads, 1 KV head (MQA)" in chart_specs(at)[0]["layout"]["title"]["text"]
