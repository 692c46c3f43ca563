"""The surgery page's view model: settings swept in order, and every sentence chosen from the measured numbers, in
both languages (made-up measurements of a model's shape; the real models are measured in tests/app and tests/models).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from attn_core import figures
from attn_core.pretrained import card as cards
from attn_core.pretrained.surgery import Evaluation
from attn_core.views import surgery as sv
from tests.core.test_card import GEMMA3_270M  # the config as Google ships it

EN, ZH = figures.Style(lang="en"), figures.Style(lang="zh")


@dataclass(frozen=True)
class Shape:
    """What the view model reads of a loaded model: its name and shape."""

    name: str = "smollm2-135m"
    title: str = "SmolLM2-135M-Instruct"
    n_layers: int = 30
    n_heads: int = 9
    n_kv_heads: int = 3
    head_dim: int = 64
    causal: bool = True
    max_positions: int = 8192
    layer_windows: tuple = field(default=())

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads

    def kv_head(self, head: int) -> int:
        return head // self.n_rep

    @property
    def local_layers(self) -> tuple[int, ...]:
        return tuple(i for i, w in enumerate(self.layer_windows) if w is not None)


SMOL = Shape()
MINILM = Shape("minilm-l6", "all-MiniLM-L6-v2", 6, 12, 12, 32, False, 512)
GEMMA = Shape("gemma3-270m", "Gemma 3 270M", 18, 4, 1, 256, True, 32768, ((512,) * 5 + (None,)) * 3)


def ev(q: float, n: int = 1024, kl: float | None = 0.0, kv: int = 4096, losses=()) -> Evaluation:
    """An evaluation with quality ``q`` (a perplexity, or for an encoder a cosine when ``kl`` is None)."""
    dec = kl is not None
    return Evaluation(
        model="m",
        edits=(),
        n_tokens=n,
        loss=math.log(q) if dec else None,
        perplexity=q if dec else None,
        kl=kl,
        top1=0.5 if dec else None,
        cosine=None if dec else q,
        embedding_cosine=None,
        kv_bytes_per_token=kv,
        kv_bytes=kv * n,
        seconds=0.1,
        token_losses=tuple(losses),
    )


def measured(*pairs) -> dict:
    return sv.by_setting([sv.Measured(s, e) for s, e in pairs])


# ---------------------------------------------------------------- settings
def test_a_sweep_measures_the_original_first_then_the_chosen_change():
    p = sv.Params(sg_kv="1", sg_method="first")
    s = sv.sweep(p, SMOL)
    assert s[0] == sv.ORIGINAL and s[1] == sv.pool_setting(1, "first", 0) and len(s) == 4  # 3 methods, no dupes
    assert sv.kv_choices(SMOL) == ["1"] and sv.kv_choices(MINILM) == ["1", "2", "3", "4", "6"]
    assert sv.kv_choices(GEMMA) == [] and sv.sweep(p, GEMMA) == (sv.ORIGINAL,)
    assert len(sv.sweep(sv.Params(sg_kv="6"), MINILM)) == 1 + 5 * 3
    assert sv.pool_setting(1, "random", 7) != sv.pool_setting(1, "random", 8)  # the seed matters to random heads only
    assert sv.pool_setting(1, "mean", 7) == sv.pool_setting(1, "mean", 8)
    ab = sv.sweep(sv.Params(view="ablate", sg_head=4, sg_group=True), SMOL)
    assert ab[1] == sv.Setting("ablate", (17, (3, 4, 5))) and ab[-1].kind == "roles"  # the group of head 4
    assert len([x for x in ab if x.kind == "ablate"]) == 1 + 9
    assert sv.sweep(sv.Params(view="evict"), MINILM) == ()  # an encoder keeps no cache
    ev_ = sv.sweep(sv.Params(view="evict", sg_window=64, sg_sinks="0"), SMOL)
    assert ev_ == (sv.ORIGINAL, sv.Setting("evict", (64, 0)), sv.Setting("evict", (64, 4)))
    sc = sv.sweep(sv.Params(view="scale", sg_factor="2"), SMOL)
    assert sc[0] == sv.Setting("original", ("layers",)) and sc[1] == sv.Setting("scale", (2.0,)) and len(sc) == 6


def test_the_layer_and_head_default_to_the_models_induction_heads():
    assert (sv.default_layer(SMOL), sv.default_head(SMOL)) == (17, 3)
    assert (sv.default_layer(MINILM), sv.default_head(MINILM)) == (3, 0)
    assert sv.Params(sg_layer=99, sg_head=99).layer_of(SMOL) == 29 and sv.Params(sg_head=99).head_of(GEMMA) == 3
    assert (
        sv.maps_layer(sv.Params(view="ablate"), SMOL) == 18
        and sv.maps_layer(sv.Params(view="ablate", sg_layer=29), SMOL) == 29
    )


# ---------------------------------------------------------------- KV heads
@pytest.mark.parametrize(("after", "verdict"), [(10.3, "keeps"), (15.0, "costs"), (9000.0, "breaks")])
def test_pooling_sentences_follow_the_perplexity(after, verdict):
    got = measured(
        (sv.ORIGINAL, ev(10.0)),
        (sv.pool_setting(1, "mean", 0), ev(after, kl=1.0)),
        (sv.pool_setting(1, "first", 0), ev(after * 3, kl=2.0)),
        (sv.pool_setting(1, "random", 0), ev(after * 2, kl=3.0)),
    )
    p = sv.Params()
    lines = sv.kv_lines(got, p, SMOL, EN)
    assert lines[0] == EN.t(
        f"surgery.kv_{verdict}",
        title=SMOL.title,
        n0=3,
        n="1 KV head",
        kind="MQA",
        method="mean",
        what="perplexity",
        a="10.00",
        b=sv.q_text(after, True),
        saved="67%",
    )
    mean, first, rand = (sv.q_text(x, True) for x in (after, after * 3, after * 2))
    assert f"mean {mean} < new random heads {rand} < first head {first}" in lines[1]  # ordered by the numbers
    zh = sv.kv_lines(got, p, SMOL, ZH)
    assert "取平均" in zh[0] and sv.q_text(after, True) in zh[0] and "取第一个头" in zh[1]
    table = sv.kv_table(got, SMOL, 0, EN)
    assert list(table.iloc[:, 0]) == ["3 · GQA", "1 · MQA"] and list(table.iloc[:, 2]) == ["0%", "67%"]
    assert table.iloc[0, 1] == "45.0 KiB"  # 2 · 30 layers · 3 KV heads · 64 · 4 bytes


def test_an_encoder_is_scored_by_cosine_and_mqa_has_nothing_to_pool():
    got = measured((sv.ORIGINAL, ev(1.0, kl=None)), (sv.pool_setting(6, "mean", 0), ev(0.95, kl=None)))
    line = sv.kv_lines(got, sv.Params(sg_kv="6"), MINILM, EN)[0]
    assert "at some cost: cosine to the original 1.0000 → **0.9500**" in line
    assert "masked-token loss" in sv.view_notes(sv.Params(), MINILM, EN)[0]
    assert sv.view_notes(sv.Params(), GEMMA, EN) == [EN.t("surgery.kv_mqa", title="Gemma 3 270M", h=4)]
    assert (
        "MQA" in sv.view_notes(sv.Params(), GEMMA, ZH)[0]
        and "只有一个 KV 头" in sv.view_notes(sv.Params(), GEMMA, ZH)[0]
    )


# ---------------------------------------------------------------- the score scale
def test_scale_sentences_name_the_best_factor_measured(monkeypatch):
    monkeypatch.setattr(sv, "own_scale", lambda model: 0.125)
    assert [x for _, x in sv.scale_points(SMOL)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]  # no scale sits at ×√64
    layers = pd.DataFrame({"layer": [0, 1], "max_weight": [0.4, 0.6], "entropy": [0.5, 0.3], "saturated": [0.0, 0.1]})
    sharp = layers.assign(max_weight=[0.9, 0.95], entropy=[0.05, 0.02], saturated=[0.5, 0.7])
    got = sv.by_setting(
        [sv.Measured(sv.Setting("original", ("layers",)), ev(10.0), layers)]
        + [
            sv.Measured(sv.Setting("scale", (f,)), ev(q), sharp)
            for f, q in ((0.25, 50), (0.5, 12), (2.0, 9.5), (4.0, 30))
        ]
        + [sv.Measured(sv.Setting("scale", (None,)), ev(400.0), sharp)]
    )
    lines = sv.scale_lines(got, sv.Params(view="scale"), SMOL, EN)
    assert lines[0] == "Dropping every layer's 1/√64 breaks the model: perplexity 10.00 → **400**."
    assert lines[1] == "Of the factors tried, ×2 reads the text best (9.50, against 10.00 at the model's own scale)."
    assert (
        "from 0.50 to 0.93, its entropy from 0.40 to 0.04, and the rows with a weight above 0.99 from 5% to 60%"
        in lines[2]
    )
    zh = sv.scale_lines(got, sv.Params(view="scale", sg_factor="2"), SMOL, ZH)
    assert zh[0] == "把每层的 1/√64 乘以 ×2，质量不变：困惑度 10.00 → **9.50**。"
    views = sv.scale_views(got, sv.Params(view="scale"), SMOL, EN)
    assert [v.name for v in views] == ["surgery_scale_smollm2-135m", "surgery_scale_layers_smollm2-135m"]
    assert list(views[0].data.quality) == [50, 12, 10.0, 9.5, 30, 400.0]


# ---------------------------------------------------------------- silencing heads
def roles_df(layer: int, prev: dict, ind: dict, n_heads: int = 9) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": layer,
            "head": range(n_heads),
            "kv_head": [h // 3 for h in range(n_heads)],
            "previous_token": [prev.get(h, 0.05) for h in range(n_heads)],
            "induction": [ind.get(h, 0.01) for h in range(n_heads)],
            "duplicate_token": 0.0,
            "first_token": 0.3,
            "entropy": 0.5,
        }
    )


def ablated(layer: int, kls: list[float], df: pd.DataFrame) -> dict:
    pairs = [(sv.ORIGINAL, ev(10.0))] + [
        (sv.Setting("ablate", (layer, (h,))), ev(10.0 * math.exp(k), kl=k)) for h, k in enumerate(kls)
    ]
    return sv.by_setting(
        [sv.Measured(s, e) for s, e in pairs] + [sv.Measured(sv.Setting("roles", (0,)), None, roles=df)]
    )


def test_role_heads_stand_out_or_not_as_the_numbers_say():
    df = roles_df(17, {}, {3: 0.77, 4: 0.72, 5: 0.61})
    p = sv.Params(view="ablate")
    out = sv.ablation_lines(ablated(17, [0.01, 0.02, 0.01, 0.5, 0.3, 0.02, 0.01, 0.02, 0.01], df), p, SMOL, EN)
    assert out[0].startswith("Silencing head 3 of layer 17 (KV group 1) changes the perplexity from 10.00 to")
    assert out[1] == (
        "Silenced one at a time, the heads of layer 17 that hurt most: head 3 (0.5), head 4 (0.3), head 1 (0.02); "
        "the median head: 0.02."
    )
    assert out[2].startswith("Only some of the induction heads of this layer stand out")  # head 5: 0.02, the median
    assert "head 3 (score 0.77, rank 1 of 9), head 4 (score 0.72, rank 2 of 9), head 5 (score 0.61" in out[2]
    flat = sv.ablation_lines(ablated(17, [0.02] * 9, df), p, SMOL, ZH)
    assert flat[2].startswith("本层的归纳头静音后并不突出")
    strong = sv.ablation_lines(ablated(17, [0.01, 0.01, 0.01, 0.5, 0.4, 0.3, 0.01, 0.01, 0.01], df), p, SMOL, EN)
    assert strong[2].startswith("The induction heads of this layer stand out when silenced")
    none = sv.ablation_lines(ablated(17, [0.02] * 9, roles_df(17, {}, {})), p, SMOL, EN)
    assert none[2].startswith("No head of layer 17 scores 0.5 or more") and "layer 17, head 0" in none[2]
    view = sv.ablation_view(ablated(17, [0.02] * 9, df), p, SMOL, EN)
    assert list(view.data.role) == ["", "", "", "induction", "induction", "induction", "", "", ""]
    assert list(view.data.kv_head) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


# ---------------------------------------------------------------- cache eviction
def test_eviction_sentences_compare_the_sinks_past_the_window():
    n, w = 1024, 256
    full = [math.log(18.0)] * (n - 1)
    no_sinks = [math.log(18.0)] * (w + 4) + [math.log(37.0)] * (n - 1 - w - 4)
    sinks = [math.log(18.0)] * (w + 4) + [math.log(19.8)] * (n - 1 - w - 4)
    got = measured(
        (sv.ORIGINAL, ev(18.0, n, losses=full, kv=100)),
        (sv.Setting("evict", (w, 0)), ev(30.0, n, losses=no_sinks, kv=100)),
        (sv.Setting("evict", (w, 4)), ev(19.0, n, losses=sinks, kv=100)),
    )
    got[sv.Setting("evict", (w, 4))] = sv.Measured(
        sv.Setting("evict", (w, 4)),
        Evaluation(**{**got[sv.Setting("evict", (w, 4))].evaluation.__dict__, "kv_bytes": 100 * 260}),
    )
    p = sv.Params(view="evict", sg_window=w)
    lines = sv.eviction_lines(got, p, SMOL, EN)
    assert (
        "From position 260 on" in lines[0] and "**37.00** without sinks" in lines[0] and "**19.80** keeping" in lines[0]
    )
    assert lines[0].endswith("against 18.00 with the full cache: the attention sinks matter.")
    assert (
        lines[1]
        == "With k = 4, each layer caches 260 of the text's 1024 positions: 25.4 KiB instead of 100 KiB (75% less, float32)."
    )
    same = measured(
        (sv.ORIGINAL, ev(18.0, n, losses=full)),
        (sv.Setting("evict", (w, 0)), ev(18.0, n, losses=full)),
        (sv.Setting("evict", (w, 4)), ev(18.0, n, losses=full)),
    )
    assert sv.eviction_lines(same, p, SMOL, ZH)[0].endswith("这里注意力汇点几乎没有影响。")
    long_w = measured(
        *[
            (sv.Setting("evict", (2048, k)) if k is not None else sv.ORIGINAL, ev(18.0, n, losses=full))
            for k in (None, 0, 4)
        ]
    )
    short = sv.eviction_lines(long_w, sv.Params(view="evict", sg_window=2048), SMOL, EN)
    assert short == [
        "The text has 1024 tokens, no more than w + k = 2048 + 4: nothing is evicted. Read more tokens or lower w."
    ]
    xs, ys = sv.position_curve(no_sinks, 16)
    assert xs[0] == 9 and ys[0] == pytest.approx(18.0) and ys[-1] == pytest.approx(37.0)
    view = sv.eviction_view(got, p, SMOL, EN)
    assert set(view.data.setting) == {"full cache", "w = 256, k = 0", "w = 256, k = 4"}


def test_gemma_says_which_layers_already_slide():
    assert sv.window_note(GEMMA, 256, EN) == (
        "Gemma 3 270M's 15 local layers already keep only the last 512 tokens; a window of w = 256 narrows them "
        "too, and its 3 global layers (5, 11, 17) most."
    )
    assert "只改变它的 3 个全局层（5, 11, 17）" in sv.window_note(GEMMA, 1024, ZH)
    assert sv.window_note(SMOL, 256, EN) is None
    assert (
        "Gemma Terms of Use" in sv.model_notes("gemma3-270m", EN)[0]
        and "使用条款" in sv.model_notes("gemma3-270m", ZH)[0]
    )
    assert sv.model_notes("smollm2-135m", EN) == []


# ---------------------------------------------------------------- the model card
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "num_key_value_heads": 16,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "first_k_dense_replace": 1,
    "max_position_embeddings": 163840,
    "vocab_size": 102400,
}


def card_of(config: dict, style=EN) -> sv.CardResult:
    res, err = sv.read_card(sv.Params(sg_card="paste", sg_config=json.dumps(config)), None, style)
    assert err == "" and res is not None
    return res


def test_a_pasted_config_gives_the_architecture_and_the_cache_in_words():
    res = card_of(GEMMA3_270M)
    assert res.card == cards.card_from_config(GEMMA3_270M, "config.json")
    lines = sv.card_lines(res, 8192, EN)
    assert lines[0].startswith(
        "**config.json** (gemma3_text, MQA): 4 query heads share 1 KV head (4 each), head dimension 256, 18 layers;"
    )
    want = res.card.kv_bytes(8192, "fp16")
    full = sv.no_windows(res.card).kv_bytes(8192, "fp16")
    assert want == 2 * 2 * 256 * (15 * 512 + 3 * 8192) and full == 2 * 2 * 256 * 18 * 8192
    assert (
        lines[1]
        == f"At 8,192 tokens its KV cache takes **{sv.format_bytes(want)}** in float16: 15 of its 18 layers keep only the last 512 tokens; with every layer global it would take {sv.format_bytes(full)}."
    )  # noqa: E501
    table = dict(zip(*sv.card_table(res.card, 8192, EN).T.values, strict=True))
    assert table["Sliding window"] == "512 tokens on 15 local layers (0–4, 6–10, 12–16)"
    assert table["Attention"] == "MQA: 4 query heads, 1 KV head"
    assert "亿" in sv.card_lines(card_of(GEMMA3_270M, ZH), 8192, ZH)[0]
    mla = card_of(DEEPSEEK_V2_LITE)
    assert "caches, per token, a latent of rank 512 and a RoPE key of 64" in sv.card_lines(mla, 4096, EN)[0]
    assert dict(zip(*sv.card_table(mla.card, 4096, EN).T.values, strict=True))["Multi-head latent attention (MLA)"] == (
        "KV latent of rank 512, query rank –, RoPE key 64"
    )
    views = sv.card_views(res, 8192, EN)
    assert [v.name for v in views] == ["surgery_card_cache", "surgery_card_heads"]
    assert list(views[1].data.kv_head) == [0, 0, 0, 0]
    assert views[0].data.kv_bytes_fp16.iloc[13] == res.card.kv_bytes(8192, "fp16")


@pytest.mark.parametrize(
    ("text", "reason"),
    [("{not json", "not_json"), ("[1, 2]", "not_object"), ('{"bos_token": "<s>"}', "no_model_type")],
)
def test_a_paste_that_is_not_a_config_says_why_in_either_language(text, reason):
    p = sv.Params(sg_card="paste", sg_config=text)
    for style in (EN, ZH):
        res, err = sv.read_card(p, None, style)
        assert res is None and err == style.t(f"surgery.card_why_{reason}", what="config.json")
    _, zh = sv.read_card(sv.Params(sg_card="paste", sg_config='{"model_type": "t5"}'), None, ZH)
    assert zh.startswith("config.json：不认识架构 t5")
    _, err = sv.read_card(sv.Params(sg_card="upload"), ("model.gguf", b"GGUF\x03\x00\x00\x00" + b"\x00" * 5), ZH)
    assert err == "model.gguf 不完整：文件在文件头里就结束了"
    assert sv.read_card(sv.Params(sg_card="upload"), None, EN) == (None, "")  # nothing uploaded yet: no message


def test_numbers_are_written_as_each_language_says_them():
    assert [sv.q_text(x, True) for x in (12.345, 123.4, 12429.2)] == ["12.35", "123", "12,429"]
    assert sv.q_text(0.99876, False) == "0.9988" and sv.q_text(float("nan"), True) == "–"
    assert sv.params_text(8_030_261_248, EN) == "8.03 B" and sv.params_text(8_030_261_248, ZH) == "80.3 亿"
    assert sv.params_text(22_713_216, ZH) == "2271 万" and sv.params_text(134_515_008, EN) == "135 M"
    assert sv.setting_label(sv.pool_setting(1, "mean", 0), SMOL, ZH) == "1 个 KV 头（MQA），取平均"
    assert sv.setting_label(sv.Setting("ablate", (17, (3, 4, 5))), SMOL, EN) == "heads 3–5 of layer 17 silenced"
    assert sv.setting_label(sv.Setting("scale", (None,)), SMOL, EN) == "no scale"
    frac, text = sv.progress(sv.sweep(sv.Params(), SMOL), 1, SMOL, EN)
    assert frac == 0.25 and text == "Measuring 2 of 4: 1 KV head (MQA), mean…"
    assert np.isclose(sv.past([0.0, math.log(2.0), math.log(8.0)], 1), 4.0)


def test_a_character_split_over_byte_tokens_is_labelled_by_its_pieces():
    hexed = ["子", "<E6 9B>", "<B0>", "：", "<E5 AD>", "<A6>", "时", "<FF>", "<E4 B9>"]
    assert sv.piece_labels(hexed) == ["子", "曰₁", "曰₂", "：", "学₁", "学₂", "时", "<FF>", "<E4 B9>"]
    assert sv.piece_labels(["It", " is", "<E4 B9>"]) == ["It", " is", "<E4 B9>"]  # an unfinished character: as it was
