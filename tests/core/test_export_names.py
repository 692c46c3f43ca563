"""Export file names: page, view, shape, mask, language and a digest of the page state (issue 16)."""

from __future__ import annotations

import hashlib

from attn_core.views.base import export_stem, url_text


def test_the_stem_names_every_part_by_hand():
    values = {"n_heads": 8, "n_kv_heads": 2, "head_dim": 16, "mask": "causal", "seed": 0}
    state = {"n_heads": "8", "mask": "causal", "text": "the cat"}
    digest = hashlib.blake2b(b"mask=causal&n_heads=8&text=the cat", digest_size=3).hexdigest()
    assert export_stem("heatmaps", "grid", values, state, "zh") == f"heatmaps_grid_h8-kv2-dk16_causal_zh_{digest}"


def test_two_different_views_never_share_a_name():
    values = {"n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "mask": "none"}
    a = export_stem("heatmaps", "grid", values, {"text": "the cat sat"}, "en")
    b = export_stem("heatmaps", "grid", values, {"text": "the dog sat"}, "en")
    c = export_stem("heatmaps", "grid", {**values, "mask": "causal"}, {"text": "the cat sat", "mask": "causal"}, "en")
    assert len({a, b, c}) == 3 and a.rsplit("_", 1)[0] == b.rsplit("_", 1)[0]  # only the digest tells a from b


def test_parts_a_page_lacks_are_left_out_and_names_are_file_safe():
    assert export_stem("kv_cache", "kv_cache", {"model": "llama-3-8b"}, {}, "en").startswith(
        "kv_cache_kv_cache_llama-3-8b_en_"
    )
    stem = export_stem("models", "row2_dk128", {"model": "a/b c:d"}, {"x": "1"}, "en")
    assert stem.startswith("models_row2_dk128_a-b-c-d_en_") and all(ch.isalnum() or ch in "_.-" for ch in stem)
    assert url_text(True) == "true" and url_text(False) == "false" and url_text(2.0) == "2.0"
