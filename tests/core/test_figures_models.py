"""The pretrained-models page's own figures: head roles as heads × layers, a slide's labels, a token's time."""

from __future__ import annotations

import numpy as np

from attn_core.figures import Style
from attn_core.figures import heatmaps as hfig
from attn_core.figures import models as modfig
from attn_core.figures.base import group_color
from attn_core.figures.margins import text_width


def spec_of(fig) -> dict:
    from attn_core.figures.base import figure_spec

    return figure_spec(fig)


def test_roles_are_heads_by_layers_with_every_layer_numbered_on_a_slide():
    rng = np.random.default_rng(0)
    mat = rng.uniform(0, 1, size=(30, 9)).astype(np.float32)  # SmolLM2: 30 layers × 9 query heads on 3 KV heads
    for style in (Style(), Style(present=True), Style(lang="zh"), Style(present=True, lang="zh")):
        spec = spec_of(modfig.roles_figure(mat, 3, "induction", "induction: every head", style))
        lay = spec["layout"]
        z = np.asarray(spec["data"][0]["z"], dtype=np.float32)
        np.testing.assert_array_equal(z, mat.T)  # one row per head, one column per layer
        x, y = lay["xaxis"], lay["yaxis"]
        assert x["tickvals"] == list(range(30)) and x["ticktext"] == [str(i) for i in range(30)]
        assert x["tickangle"] == 0 and x["tickfont"]["size"] == style.font  # numbers, level, at the slide's 20 px
        assert y["ticktext"] == [f"h{h} · KV{h // 3}" for h in range(9)] and y["autorange"] == "reversed"
        frames = lay["shapes"]
        assert [f["line"]["color"] for f in frames] == [group_color(g) for g in range(3)]
        assert [(f["y0"], f["y1"]) for f in frames] == [(-0.5, 2.5), (2.5, 5.5), (5.5, 8.5)]  # rows of a KV head
        assert all((f["x0"], f["x1"]) == (-0.5, 29.5) for f in frames)
        # the layers get the width: 30 numbers at 20 px need about 30 × 24 px on a 1024 px slide (936 px of chart)
        if style.present:
            plot = 936 - lay["margin"]["l"] - lay["margin"]["r"]
            assert plot / 30 >= 1.1 * text_width("29", 20), (plot, lay["margin"])
            assert lay["coloraxis"]["colorbar"]["tickvals"] == [0, 0.5, 1]


def test_roles_of_a_model_whose_layer_numbers_do_not_fit_are_thinned_and_said():
    spec = spec_of(modfig.roles_figure(np.zeros((100, 4)), 2, "x", "t", Style(present=True)))
    x = spec["layout"]["xaxis"]
    step = modfig.role_layer_step(100, Style(present=True))
    assert step > 1 and x["tickvals"] == list(range(0, 100, step))
    assert x["title"]["text"] == f"layer (numbered every {step})"


def test_roles_of_a_model_with_local_layers_mark_its_global_ones_and_say_so():
    """Gemma 3 270M: 18 layers, global 5, 11 and 17 marked under their number (G; 全 in Chinese), the axis title says
    what the mark means and the others' window; the chart grows by the second line; no mark without windows."""
    mat = np.zeros((18, 4), dtype=np.float32)
    for style, mark in ((Style(), "G"), (Style(present=True, lang="zh"), "全")):
        plain = spec_of(modfig.roles_figure(mat, 1, "x", "t", style))["layout"]
        lay = spec_of(modfig.roles_figure(mat, 1, "x", "t", style, ((5, 11, 17), 512)))["layout"]
        text = lay["xaxis"]["ticktext"]
        assert [i for i, tick in enumerate(text) if tick == f"<b>{i}</b><br><b>{mark}</b>"] == [5, 11, 17]
        assert [tick for i, tick in enumerate(text) if i not in (5, 11, 17)] == [
            str(i) for i in range(18) if i % 6 != 5
        ]
        assert plain["xaxis"]["ticktext"] == [str(i) for i in range(18)]
        assert f"{mark} = " in lay["xaxis"]["title"]["text"] and "512" in lay["xaxis"]["title"]["text"]
        assert (
            lay["height"] == plain["height"] + int(1.4 * style.font) and lay["xaxis"]["tickfont"]["size"] == style.font
        )
        assert lay["margin"]["b"] > plain["margin"]["b"]  # the second line's room, reserved


def test_a_slide_thins_a_maps_labels_to_the_room_it_gives_them():
    tokens = [f"tok{i} ({i})" for i in range(23)]
    fig = hfig.matrix_figure(hfig.MatrixSpec(np.eye(23), tokens, tokens, "t"), Style(present=True))
    before = spec_of(fig)["layout"]
    assert len(before["yaxis"]["tickvals"]) == 23  # planned for the figure's own height
    lay = spec_of(modfig.slide_labels(fig, (700, 250), Style(present=True)))["layout"]
    k = int(np.ceil(1.2 * 20 / (250 / 23)))  # each label 1.2 × its 20 px font apart
    assert k == 3 and lay["yaxis"]["tickvals"] == before["yaxis"]["tickvals"][::3]
    assert lay["yaxis"]["tickfont"]["size"] == 20 and lay["xaxis"]["tickfont"]["size"] == 20
    assert lay["yaxis"]["title"]["text"] == "query (1 label in 3)"
    assert lay["xaxis"]["tickvals"] == before["xaxis"]["tickvals"]  # 700 / 23 px a key: every key label fits
    zh = spec_of(modfig.slide_labels(fig, (700, 250), Style(present=True, lang="zh")))["layout"]
    assert zh["yaxis"]["title"]["text"] == "query（每 3 个标 1 个）"


def test_a_slide_keeps_an_axis_the_builder_thinned_and_leaves_room_above_for_the_first_label():
    """47 tokens that the builder already labels every 6th on the query axis (its title says so): the slide keeps
    them (250 px hold 8 labels at 20 px) and the plain axis title; the top margin holds a two-line title centred in
    it and the first row's label half a font above the plot."""
    from attn_core.views import heatmaps as hm

    p = hm.Params(source="synthetic", seq_len=47)
    fig = hm.step_views(hm.step_window(p.layer(), 0, 0, 0), Style(present=True, lang="zh"), 1)[4].figure  # scaled
    before = spec_of(fig)["layout"]
    rows = list(spec_of(fig)["data"][0]["y"])
    gap = rows.index(before["yaxis"]["tickvals"][1]) - rows.index(before["yaxis"]["tickvals"][0])
    assert gap > 1 and f"每 {gap} 个标签显示 1 个" in before["title"]["text"]  # the builder's thinning, said
    lay = spec_of(modfig.slide_labels(fig, (700, 250), Style(present=True, lang="zh")))["layout"]
    assert lay["yaxis"]["tickvals"] == before["yaxis"]["tickvals"]
    assert lay["yaxis"]["title"]["text"] == before["yaxis"]["title"]["text"]  # no second note, beside the plot
    lines, size = lay["title"]["text"].count("<br>") + 1, lay["title"]["font"]["size"]
    assert lines == 2 and lay["margin"]["t"] >= lines * 1.35 * size + 20 + 4


def test_the_time_of_a_token_on_log_axes_spans_the_planned_lengths():
    spec = spec_of(modfig.speed_figure([16, 32], [60.0, 90.0], [50.0, 51.0], [16, 32, 64, 128], Style()))
    lay = spec["layout"]
    assert lay["xaxis"]["type"] == "log" and lay["yaxis"]["type"] == "log"
    assert lay["xaxis"]["tickvals"] == [16, 32, 64, 128]
    lo, hi = lay["xaxis"]["range"]
    assert 10**lo < 16 and 10**hi > 128  # the chart does not move while the run adds lengths
    assert [t["name"] for t in spec["data"]] == ["no cache: all tokens again", "KV cache: one new token"]
    y = lay["yaxis"]
    assert y["tickvals"] == [50, 100] and y["ticktext"] == ["50", "100"]  # 1, 2, 5 × 10^k within the times
    assert 10 ** y["range"][0] <= 50 and 10 ** y["range"][1] >= 90
    wide = spec_of(modfig.speed_figure([16, 4096], [50.0, 90_000.0], [40.0, 60.0], [16, 4096], Style()))
    assert wide["layout"]["yaxis"]["tickvals"] == [100, 1000, 10_000, 100_000]  # beyond 8 ticks: the powers of ten
