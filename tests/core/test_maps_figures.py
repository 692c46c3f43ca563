"""The heatmap pipeline (attn_core.attention.maps) and the figure builders."""

import json
import re

import numpy as np
import pytest
import torch

from attn_core import figures
from attn_core.attention.maps import build_mask, compute_attention_maps, normalized_entropy, shape_walk
from attn_core.attention.tokens import tokenize
from attn_core.figures.margins import text_width
from attn_core.runtime.config import AttentionConfig, ConfigError
from tests.util import arr, grid_panel, seeded

TOKS = tokenize("the cat sat on the mat")


def maps(**kw):
    cfg_kw = {k: kw.pop(k) for k in list(kw) if k in ("n_heads", "n_kv_heads", "head_dim", "use_scaling", "seed")}
    cfg = AttentionConfig(**{"n_heads": 4, "n_kv_heads": 2, "head_dim": 8, **cfg_kw})
    return compute_attention_maps(cfg, kw.pop("tokens_q", TOKS), **kw)


def test_maps_shapes_dtypes_and_rows_sum_to_one():
    m = maps()
    assert m.weights.shape == (4, 6, 6) and m.q.shape == (4, 6, 8) and m.k.shape == (2, 6, 8)
    assert m.output.shape == (6, 32) and m.entropy.shape == (4, 6)
    for a in (m.q, m.k, m.v, m.weights, m.output, m.raw_scores):
        assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_allclose(m.weights.sum(-1), 1.0, atol=1e-5)


def test_maps_internal_consistency_with_torch_softmax():
    m = maps(mask_kind="causal")
    q, k = torch.from_numpy(m.q), torch.from_numpy(m.k)
    raw = q @ torch.repeat_interleave(k, 2, dim=0).transpose(-2, -1)
    np.testing.assert_allclose(m.raw_scores, raw.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m.scaled_scores, m.raw_scores / np.sqrt(8), rtol=1e-5, atol=1e-6)
    scores = torch.from_numpy(m.scaled_scores).masked_fill(~torch.from_numpy(m.mask), float("-inf"))
    np.testing.assert_allclose(m.weights, torch.softmax(scores, -1).numpy(), atol=1e-6)
    assert np.all(np.triu(m.weights[0], 1) == 0)
    # head outputs are the weights times the group's values
    np.testing.assert_allclose(m.head_outputs[3], m.weights[3] @ m.v[1], atol=1e-5)


def test_maps_deterministic_and_seeded():
    a, b = maps(seed=3), maps(seed=3)
    assert np.array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, maps(seed=4).weights)


def test_temperature_and_scaling():
    m1, m2 = maps(temperature=1.0), maps(temperature=0.5)
    np.testing.assert_allclose(m2.scaled_scores, 2 * m1.scaled_scores, rtol=1e-5, atol=1e-6)
    assert maps(use_scaling=False).scale == 1.0
    assert maps().scale == pytest.approx(1 / np.sqrt(8))


def test_cross_attention_and_padding():
    m = maps(tokens_k=tokenize("le chat"), mask_kind="padding", pad_len=1)
    assert m.weights.shape == (4, 6, 2)
    assert np.all(m.weights[..., 1] == 0) and np.allclose(m.weights[..., 0], 1)
    with pytest.raises(ConfigError, match="causal"):
        maps(tokens_k=["x"], mask_kind="causal")


def test_bad_inputs_raise_config_errors():
    with pytest.raises(ConfigError, match="no tokens"):
        maps(tokens_q=[])
    with pytest.raises(ConfigError, match="temperature"):
        maps(temperature=0.0)
    with pytest.raises(ConfigError, match="mask"):
        build_mask("diagonal", 3, 3)
    with pytest.raises(ConfigError, match="pad_len"):
        build_mask("padding", 3, 3, pad_len=5)


def test_normalized_entropy_by_hand():
    w = torch.tensor([[0.25, 0.25, 0.25, 0.25], [1.0, 0, 0, 0], [0.5, 0.5, 0, 0]])
    mask = torch.tensor([[True] * 4, [True] * 4, [True, True, False, False]])
    ent = normalized_entropy(w, mask)
    torch.testing.assert_close(ent, torch.tensor([1.0, 0.0, 1.0]))


def test_shape_walk_substitutes_numbers():
    rows = shape_walk(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16), 12)
    shapes = {r.step: r.formula for r in rows}
    assert shapes["input"] == "[B, T, d_model] = [1, 12, 128]"
    assert shapes["kv_proj"] == "[B, H_kv, T, d_k] = [1, 2, 12, 16]"
    assert shapes["scores"] == "[B, H, T, T] = [1, 8, 12, 12]"
    assert shapes["merge"] == "[B, T, H·d_k] = [1, 12, 128]"
    assert [r.step for r in rows if r.pair] == ["kv_proj"]  # K and V: two tensors of that shape


def test_shape_walk_cross_attention_has_two_lengths_and_codes_only():
    """Cross-attention: T_q for the queries, T_k for the context's keys and values, and a context input row.

    The engine returns codes (translated by the page), never English operation text.
    """
    cfg = AttentionConfig(n_heads=12, n_kv_heads=4, head_dim=64)
    rows = shape_walk(cfg, 11, 5)
    shapes = {r.step: r.formula for r in rows}
    assert [r.step for r in rows][:2] == ["input", "context"]
    assert shapes["input"] == "[B, T_q, d_model] = [1, 11, 768]"
    assert shapes["context"] == "[B, T_k, d_model] = [1, 5, 768]"
    assert shapes["kv_proj"] == "[B, H_kv, T_k, d_k] = [1, 4, 5, 64]"
    assert shapes["repeat_kv"] == "[B, H, T_k, d_k] = [1, 12, 5, 64]"
    assert shapes["scores"] == shapes["softmax"] == "[B, H, T_q, T_k] = [1, 12, 11, 5]"
    assert shapes["weighted_sum"] == "[B, H, T_q, d_k] = [1, 12, 11, 64]"
    assert shapes["o_proj"] == "[B, T_q, d_model] = [1, 11, 768]"
    # the same lengths in cross-attention still name both
    assert {r.step: r.formula for r in shape_walk(cfg, 5, 5)}["scores"] == "[B, H, T_q, T_k] = [1, 12, 5, 5]"
    ops = [r.op for r in rows]
    assert ops[3] == "kv_proj_context" and ops[4] == "repeat_kv"
    assert all(re.fullmatch(r"[a-z_]+", code) for r in rows for code in (r.step, r.op))
    mha = shape_walk(AttentionConfig(n_heads=4, n_kv_heads=4, head_dim=8), 3)
    assert [r.op for r in mha if r.step == "repeat_kv"] == ["repeat_none"]


def test_pool_max():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    p, f = figures.pool_max(x, 2)
    assert f == 2 and p.tolist() == [[[5, 7], [13, 15]]]
    same, f1 = figures.pool_max(x, 8)
    assert f1 == 1 and same is x
    y = np.full((1, 3, 3), np.nan, dtype=np.float32)
    y[0, 0, 0] = 0.5
    p2, _ = figures.pool_max(y, 2)
    assert p2[0, 0, 0] == 0.5 and np.isnan(p2[0, 1, 1])


@pytest.mark.parametrize("h,kv,cols", [(8, 2, 4), (8, 4, 4), (8, 8, 4), (6, 2, 3), (64, 1, 8), (64, 8, 8), (1, 1, 1)])
def test_grid_columns_keep_groups_together(h, kv, cols):
    assert figures.grid_columns(h, kv) == cols


def grid(m, style=figures.Style()):
    from attn_core.attention.longmaps import pooled_attention
    from attn_core.views import heatmaps as views

    pm = seeded(pooled_attention, 4, 2, 8, list(m.tokens_q), mask_kind="causal" if not m.mask.all() else "none")
    return views.grid_view(pm, style).figure


def test_heatmap_grid_tiles_heads_by_group_and_masks():
    m = maps(mask_kind="causal")
    spec = json.loads(grid(m).to_json())
    heat, *clicks = spec["data"]
    assert heat["type"] == "heatmap" and {t["type"] for t in clicks} == {"scatter"}  # one heatmap, then clicks
    inside = np.zeros(arr(heat["z"]).shape, bool)
    for h in range(4):  # the panels in the order of the heads, each inside its frame
        z, labels_q, labels_k = grid_panel(spec, h)
        np.testing.assert_allclose(z, np.where(m.mask, m.weights[h], np.nan), atol=1e-6)
        assert labels_k == [f"{t} ({i})" for i, t in enumerate(m.tokens_k)] and labels_q == labels_k
        f = [s for s in spec["layout"]["shapes"] if s["layer"] == "above"][h]
        inside[int(f["y0"] + 0.5) : int(f["y1"] + 0.5), int(f["x0"] + 0.5) : int(f["x1"] + 0.5)] = True
    assert np.isnan(arr(heat["z"])[~inside]).all()  # between the panels: nothing drawn
    assert len(set(heat["x"])) == len(heat["x"]) and len(set(heat["y"])) == len(heat["y"])  # categories unique
    assert "text" not in heat and "customdata" not in heat
    hover = clicks[0]["hovertemplate"]  # the click layer names the head and its KV group
    assert "<b>head %{customdata[0]}</b> · KV %{customdata[2]}" in hover
    assert spec["layout"]["coloraxis"]["cmin"] == 0 and spec["layout"]["coloraxis"]["cmax"] == 1
    assert spec["layout"]["yaxis"]["range"] == [len(heat["y"]) - 0.5, -0.5]  # first query at the top
    assert not [k for k in spec["layout"] if k in ("xaxis2", "yaxis2")]  # one pair of axes for every panel
    frames = [s["line"]["color"] for s in spec["layout"]["shapes"] if s["layer"] == "above"]
    assert frames[0] == frames[1] == figures.group_color(0) and frames[2] == frames[3] == figures.group_color(1)
    greys = [s for s in spec["layout"]["shapes"] if s["layer"] == "below"]
    assert len(greys) == 4 and all(s["fillcolor"] == figures.MASK_GREY for s in greys)
    # unmasked: no grey rectangles at all
    assert not [s for s in json.loads(grid(maps()).to_json())["layout"]["shapes"] if s["layer"] == "below"]


@pytest.mark.parametrize("n_tokens,present", [(2, False), (3, True), (11, False), (40, True), (16, False)])
def test_panels_are_apart_by_a_gap_not_a_token(n_tokens, present):
    """Few tokens make cells larger than the gap between panels: each cell is then several of the heatmap's,
    so the gap stays about 20 px across and a title high, whatever the cell size."""
    style = figures.Style(present=present)
    spec, _ = grid_spec(8, 2, [f"t{i}" for i in range(n_tokens)], style)
    g = spec["layout"]["meta"]["head_grid"]
    heat = spec["data"][0]
    unit_x = plot_px(spec, present) / len(heat["x"])  # px of one heatmap column at the planned width
    assert 10 <= g["gx"] * unit_x <= 40 if g["ncols"] > 1 else g["gx"] == 0, g
    lay = spec["layout"]
    unit_y = (lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]) / len(heat["y"])
    title_px = 40 if present else 24
    if len(g["heads"]) > g["ncols"]:  # rows of panels: apart by a title's height
        assert title_px <= g["gy"] * unit_y <= 2.2 * title_px, g
    else:
        assert g["gy"] == 0, g


def plot_px(spec: dict, present: bool) -> float:
    """px across a grid's panels where it is drawn narrowest (CHART_PX less its margins)."""
    m = spec["layout"]["margin"]
    return figures.CHART_PX[present] - m["l"] - m["r"]


@pytest.mark.parametrize("n", [1, 2, 3, 8, 16, 32, 64])
def test_grid_side_keeps_every_grid_light(n):
    side = figures.grid_side(n)
    assert 8 <= side <= figures.GRID_MAX_SIDE and n * side * side <= figures.GRID_MAX_CELLS
    if n <= 3:
        assert side == 256


def test_grid_of_64_pooled_heads_serializes_under_2_mb():
    from attn_core.attention.longmaps import PooledMaps
    from attn_core.views import heatmaps as views

    side = figures.grid_side(64)
    w = np.random.default_rng(0).random((64, side, side)).astype(np.float32)
    toks = tuple(f"t{i}" for i in range(8192))
    f = -(-8192 // side)
    pm = PooledMaps(
        w,
        np.ones((side, side), bool),
        None,
        f,
        "max",
        tuple(range(64)),
        64,
        8,
        toks,
        toks,
        (0, 8192),
        (0, 8192),
        0.25,
        "cpu",
    )
    fig = views.grid_view(pm, figures.Style(present=True)).figure
    figures.apply_fonts(fig, figures.Style(present=True))
    assert len(fig.to_json()) < 2_000_000
    assert f"{f}×{f}" in fig.layout.title.text and "largest" in fig.layout.title.text


def test_block_labels():
    toks = ["a", "b", "c", "d", "e"]
    assert figures.block_labels(toks, 1, 4, 1) == ["b (1)", "c (2)", "d (3)"]
    assert figures.block_labels(toks, 0, 5, 2) == ["0–1", "2–3", "4–4"]


def test_matrix_figure_scales():
    m = maps()
    fw = figures.matrix_figure(
        figures.MatrixSpec(m.weights[0], figures.block_labels(m.tokens_q, 0, 6, 1), list(m.tokens_k), "w")
    )
    assert fw.layout.coloraxis.cmin == 0 and fw.layout.coloraxis.cmax == 1
    fs = figures.matrix_figure(
        figures.MatrixSpec(m.raw_scores[0], list(m.tokens_q), list(m.tokens_k), "s", kind="scores")
    )
    lim = float(np.abs(m.raw_scores[0]).max())
    assert fs.layout.coloraxis.cmin == pytest.approx(-lim) and fs.layout.coloraxis.cmax == pytest.approx(lim)


def test_figures_translate():
    m = maps()
    fig = grid(m, figures.Style(lang="zh"))
    assert fig.layout.xaxis.title.text == "键" and fig.layout.yaxis.title.text == "查询"
    big = grid(m, figures.Style(present=True))
    assert big.layout.font.size >= 20


STREAMLIT_PLACEHOLDERS = {f"#0000{i:02d}" for i in range(1, 21)}


def test_no_colour_is_a_streamlit_theme_placeholder():
    """Streamlit repaints #000001-#000020 with theme colours in the browser (Inferno's #000004 turned pink)."""
    for scale in (figures.Style().weight_scale, figures.Style(present=True).weight_scale, figures.DIVERGING_SCALE):
        colours = {c.lower() for _, c in scale}
        assert not colours & STREAMLIT_PLACEHOLDERS, (scale, colours & STREAMLIT_PLACEHOLDERS)
    assert not {c.lower() for c in figures.GROUP_COLORS} & STREAMLIT_PLACEHOLDERS


# ---- token labels (issue 12, section 8): every token labelled up to 64 a side, in every mode

SENTENCE = tokenize("The cat sat on the mat because it was tired .")


def grid_spec(n_heads, n_kv_heads, tokens, style, **kw):
    from attn_core.attention.longmaps import pooled_attention
    from attn_core.views import heatmaps as views

    pm = seeded(pooled_attention, n_heads, n_kv_heads, 8, tokens, max_side=figures.grid_side(n_heads), **kw)
    fig = views.grid_view(pm, style).figure
    figures.apply_fonts(fig, style)
    return json.loads(fig.to_json()), pm


def check_every_label_fits(spec: dict, n_rows: int, n_cols: int, min_font: int, present: bool = False) -> None:
    """Both axes list every label of each panel beside them, at a font its cells have room for where the chart is
    drawn narrowest (ROW_PITCH px per font px across the baselines of neighbours: rows, and key labels turned
    as the chart turns them): the query labels left of every row of panels, the key labels under the last row.
    A slide's chart is stretched to the slide's box: its rows are checked at that height."""
    layout, heat = spec["layout"], spec["data"][0]
    g = layout["meta"]["head_grid"]
    _, labels_q, labels_k = grid_panel(spec, 0)
    assert (len(labels_q), len(labels_k)) == (n_rows, n_cols)
    area_h = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    if present:
        assert layout["height"] <= figures.SLIDE_CHART_H + figures.SLIDE_STEPPER_PX
    n_panels = len(g["heads"])
    rows, last = -(-n_panels // g["ncols"]), n_panels - (-(-n_panels // g["ncols"]) - 1) * g["ncols"]
    for name, labels, repeats in (("yaxis", labels_q, rows), ("xaxis", labels_k, last)):
        ax = layout[name]
        assert ax["tickmode"] == "array" and [v.replace("\u200b", "") for v in ax["tickvals"]] == labels * repeats
        assert ax["ticktext"] == [figures.short_label(v) for v in labels] * repeats
        font = ax["tickfont"]["size"]
        assert font >= min_font, (name, font)
        if name == "yaxis":  # a token's rows of cells in px
            assert area_h * g["sy"] / len(heat["y"]) >= figures.ROW_PITCH * font - 0.5, (name, font)
        else:  # a token's columns at the planned plot width, apart across their baselines as turned
            pitch = plot_px(spec, present) * g["sx"] / len(heat["x"])
            angle = abs(ax["tickangle"])
            widest = max(text_width(t, font) for t in ax["ticktext"])
            if angle == 0:
                assert pitch >= widest + 0.5 * font - 1.0, (name, font, pitch)
            else:
                assert pitch * np.sin(np.radians(angle)) >= figures.ROW_PITCH * font - 1.0, (name, font, angle)
    assert "1 label in" not in layout["title"]["text"]


@pytest.mark.parametrize("n_heads,n_kv_heads", [(8, 2), (32, 8), (1, 1), (64, 8)])
def test_grid_labels_every_token_of_a_sentence(n_heads, n_kv_heads):
    """11 tokens: every query and key label is drawn (plotly thinned them to every 2nd or 3rd before)."""
    style = figures.Style()
    spec, _ = grid_spec(n_heads, n_kv_heads, SENTENCE, style)
    check_every_label_fits(spec, 11, 11, figures.READABLE_TICK_FONT[False])


def slide_spec(n_heads, n_kv_heads, tokens, page=0, **kw):
    """One slide of a grid in slide mode: its page ``page`` of heads (views.grid_pages)."""
    from attn_core.attention.longmaps import pooled_attention
    from attn_core.views import heatmaps as views

    style = figures.Style(present=True)
    pm = seeded(pooled_attention, n_heads, n_kv_heads, 8, tokens, max_side=figures.grid_side(n_heads), **kw)
    pages = views.grid_pages(pm, style)
    return json.loads(views.grid_view(pm, style, heads=pages[page]).figure.to_json()), pages


@pytest.mark.parametrize(
    "n_heads,n_kv_heads,pages",
    [
        (8, 2, [(0, 1), (2, 3), (4, 5), (6, 7)]),  # two a slide: a KV group of 4 in two parts
        (9, 3, [(0, 1), (2,), (3, 4), (5,), (6, 7), (8,)]),  # SmolLM2: a slide never shows part of two groups
        (12, 12, [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)]),  # MiniLM: MHA, two a slide
        (64, 8, [tuple(range(a, a + 2)) for a in range(0, 64, 2)]),
    ],
)
def test_a_slide_shows_the_panels_it_labels_in_full_and_pages_through_the_rest(n_heads, n_kv_heads, pages):
    """On a slide (20 px type, the box of a 1024 × 768 slide's width and a 1280 × 720 slide's height) the
    sentence's 11 tokens are all labelled in two panels a slide; the others are on the slides after it."""
    for page in (0, len(pages) - 1):
        spec, got = slide_spec(n_heads, n_kv_heads, SENTENCE, page)
        assert got == pages
        assert spec["layout"]["meta"]["head_grid"]["heads"] == list(pages[page])
        check_every_label_fits(spec, 11, 11, figures.Style(present=True).font, present=True)
        assert spec["layout"]["title"]["text"] == ""  # the slide's stepper names the heads


def test_a_slide_of_few_tokens_shows_every_head():
    """Six tokens: all 8 heads fit on one slide, titled, every label at 20 px."""
    spec, pages = slide_spec(8, 8, [f"t{i}" for i in range(6)])
    assert pages == [tuple(range(8))]
    assert spec["layout"]["meta"]["head_grid"]["ncols"] == 4  # two rows of four
    check_every_label_fits(spec, 6, 6, 20, present=True)
    assert spec["layout"]["title"]["text"].startswith("Attention weights: 8 query heads, 8 KV groups")


def test_a_slide_thins_what_it_cannot_label_at_its_font_and_says_so():
    """64 tokens do not fit a slide at 20 px: every k-th label, k the same on both axes, and the chart says so."""
    spec, pages = slide_spec(8, 2, [f"t{i}" for i in range(64)])
    lay = spec["layout"]
    y, x = lay["yaxis"], lay["xaxis"]
    assert y["tickfont"]["size"] == x["tickfont"]["size"] == 20
    k_y, k_x = (int(ax["ticktext"][1].split()[0][1:]) for ax in (y, x))  # "t3 (3)": every 3rd label drawn
    assert k_x <= k_y > 1 and y["ticktext"][:3] == [f"t{i} ({i})" for i in (0, k_y, 2 * k_y)]
    assert f"query axis: 1 label in {k_y}" in lay["title"]["text"]
    assert f"key axis: 1 label in {k_x}" in lay["title"]["text"] or k_x == 1
    assert len(pages) == 4  # two panels a slide


@pytest.mark.parametrize("n_heads,n_kv_heads", [(8, 2), (1, 1)])
def test_grid_labels_every_token_up_to_64(n_heads, n_kv_heads):
    style = figures.Style()
    spec, pm = grid_spec(n_heads, n_kv_heads, [f"t{i}" for i in range(64)], style)
    assert pm.factor == 1
    check_every_label_fits(spec, 64, 64, figures.MIN_TICK_FONT)


def test_long_sequences_thin_the_labels_and_say_so():
    from attn_core.attention.longmaps import pooled_attention
    from attn_core.views import heatmaps as views

    pm = seeded(pooled_attention, 2, 1, 8, [f"t{i}" for i in range(300)], heads=[0], max_side=512)
    fig = json.loads(views.grid_view(pm, figures.Style()).figure.to_json())
    ax = fig["layout"]["yaxis"]
    step = len(fig["data"][0]["y"]) // len(ax["tickvals"])
    assert step > 1 and ax["tickvals"] == fig["data"][0]["y"][::step]
    assert f"query axis: 1 label in {step}" in fig["layout"]["title"]["text"]
    zh = json.loads(views.grid_view(pm, figures.Style(lang="zh")).figure.to_json())
    assert f"查询轴：每 {step} 个标签显示 1 个" in zh["layout"]["title"]["text"]
    # a pooled grid (150 blocks a side) keeps its compact layout (panels of cells 1.5 px or more) and thins its labels
    spec, pm = grid_spec(8, 2, [f"t{i}" for i in range(600)], figures.Style(), mask_kind="causal")
    assert pm.factor == 4
    x_ticks, (_, _, labels_k) = spec["layout"]["xaxis"]["tickvals"], grid_panel(spec, 0)
    step = labels_k.index(x_ticks[1].replace("\u200b", ""))
    ncols = spec["layout"]["meta"]["head_grid"]["ncols"]
    assert [v.replace("\u200b", "") for v in x_ticks] == labels_k[::step] * ncols  # under each panel of a row
    assert "key axis: 1 label in" in spec["layout"]["title"]["text"]


def test_cross_attention_grid_labels_both_lengths():
    spec, _ = grid_spec(4, 2, SENTENCE, figures.Style(), tokens_k=tokenize("Le chat était fatigué ."))
    check_every_label_fits(spec, 11, 5, figures.READABLE_TICK_FONT[False])


def test_short_labels_keep_the_position_and_the_hover_keeps_the_token():
    assert figures.short_label("internationally (3)") == "interna… (3)"
    assert figures.short_label("cat (1)") == "cat (1)" and figures.short_label("0–31") == "0–31"
    spec, _ = grid_spec(1, 1, ["internationally", "cat"], figures.Style())
    assert spec["data"][0]["y"][0] == "internationally (0)"  # the category (hover) is the whole token
    assert spec["layout"]["yaxis"]["ticktext"][0] == "interna… (0)"


@pytest.mark.parametrize("present", [False, True])
@pytest.mark.parametrize("t", [6, 11, 64])
def test_step_matrices_label_every_token(present, t):
    """Every query row and key column of the step matrices is labelled where they are drawn: side by side on a
    page only while the key labels fit a phone's width (the colour bar under them) readably; on a slide planned
    for the slide's height at 20 px (64 rows do not fit it: every k-th, said)."""
    from attn_core.attention.longmaps import head_window
    from attn_core.views import heatmaps as views

    tokens = SENTENCE if t == 11 else [f"t{i}" for i in range(t)]
    hw = seeded(head_window, 4, 2, 8, tokens)
    style = figures.Style(present=present)
    cols = views.step_columns(hw, style)
    assert cols == (2 if t <= 11 and not present else 1)
    figs = views.step_views(hw, style, cols)
    for v in figs:
        spec = json.loads(v.figure.to_json())
        lay, y = spec["layout"], spec["layout"]["yaxis"]
        rows_px = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
        if present:
            assert lay["height"] == views.STEP_SLIDE_H and y["tickfont"]["size"] == style.font
        k = spec["data"][0]["y"].index(y["tickvals"][1]) if len(y["tickvals"]) > 1 else 1
        assert y["tickvals"] == spec["data"][0]["y"][::k] and (k == 1 or (present and t == 64))
        assert rows_px / len(y["tickvals"]) >= figures.ROW_PITCH * y["tickfont"]["size"] - 0.5, v.name
        assert (k > 1) == (f"axis: 1 label in {k} " in lay["title"]["text"])
    for v in figs[3:7]:  # the key axis of the scores and weights
        x = json.loads(v.figure.to_json())["layout"]["xaxis"]
        assert x["tickfont"]["size"] >= (style.font if present else figures.MIN_TICK_FONT)
        assert len(x["tickvals"]) == t or (present and t == 64)
    assert "tickvals" not in json.loads(figs[0].figure.to_json())["layout"]["xaxis"]  # d0..d7: plotly's choice
