"""Chart text planned for a slide (attn_core.figures.fit) and the charts of the saturation, cost, convolution and
training-lab pages that use it: log axes labelled in full at the tick font, titles and panel titles broken into lines
that fit where they are drawn, the lab's dotted line said on the chart.

What a lecturer saw at 1024×768 and 1280×720: minor log ticks "2" and "5" at 15 px and exponents of 10⁻³ at 14 px on
slides asking for 20; "Scores of query 12, head …" cut at the right of a third of the slide; two panel titles of the
saturation page's row figure run into each other; an unexplained dotted line on the lab's empty chart.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from attn_core.attention.tokens import synthetic_tokens
from attn_core.figures import Style
from attn_core.figures import conv_attention as vfig
from attn_core.figures import lab as lfig
from attn_core.figures import saturation as fs
from attn_core.figures.fit import SLIDE_CHART_PX, fitted_title, log_ticks, power_label, wrap
from attn_core.figures.margins import text_width
from attn_core.saturation import examples, measures
from attn_core.saturation import sweep as sat_sweep
from attn_core.saturation.sampling import SamplingSpec as S
from attn_core.views import complexity as cv
from attn_core.views import conv_attention as cav
from attn_core.views import lab as lv

SLIDES = (Style(present=True), Style(present=True, lang="zh"))


def spec(fig) -> dict:
    return json.loads(pio.to_json(fig))


def lines(text: str) -> list[str]:
    return re.split(r"<br\s*/?>", text)


# ---------------------------------------------------------------- the helpers
def test_log_ticks_write_every_label_in_full():
    short = log_ticks([0.4, 6.0])  # under two decades: 1, 2, 5 × 10^k, none of them a bare minor digit
    assert short == {"tickvals": [0.2, 0.5, 1.0, 2.0, 5.0, 10.0], "ticktext": ["0.2", "0.5", "1", "2", "5", "10"]}
    wide = log_ticks([1e-5, 1.0], powers=True)  # exponents as superscript digits, drawn at the tick font
    assert wide["ticktext"] == ["10⁻⁵", "10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "1"]
    assert log_ticks([2e3, 3e6])["ticktext"] == ["1k", "10k", "100k", "1M", "10M"]
    many = log_ticks([1e-17, 1e-2])  # 16 decades: every third, at most seven; small ones as powers
    assert len(many["tickvals"]) <= 7 and many["ticktext"][-1] == "10⁻²" and "10⁻¹⁷" in many["ticktext"]
    assert log_ticks([0.0, float("nan"), -1.0]) == {}
    assert power_label(-12) == "10⁻¹²" and power_label(0) == "1" and power_label(3) == "10³"


@pytest.mark.parametrize(
    "text",
    [
        "3 heads, one per shift Δ, for query 12 (α = 1): the taps of a 3-tap convolution",
        "查询 12 的 3 个头，每个偏移 Δ 一个（α = 1）：3 抽头卷积的各个位置",
        "weights of query t0 (0) · max 0.2189 · H/log n 0.905",
    ],
)
def test_wrap_breaks_a_line_where_it_would_outgrow_its_room(text):
    out = wrap(text, 300, 20)
    assert len(lines(out)) > 1
    assert all(text_width(line, 20) <= 300 for line in lines(out)), out
    assert re.sub(r"\s|<br>", "", out).replace("·", "") == re.sub(r"\s", "", text).replace("·", "")  # nothing lost
    assert not any(line.endswith("·") for line in lines(out))  # a middle dot ends no line
    assert wrap("short", 300, 20) == "short" and wrap("a<br>b", 300, 20) == "a<br>b"


def test_wrap_never_starts_a_line_with_closing_punctuation():
    """ "分数方差（理论值<br>：d_k 与 1）" put a full-width colon at the start of a line."""
    assert wrap("分数方差（理论值：d_k 与 1）", 182, 20) == "分数方差（理论值：<br>d_k 与 1）"
    for text in (
        "在全部键上做 softmax，以 12 + Δ 为中心的窗口（Δ = 1，α = 1）",
        "最大权重的均值，归一化熵（H / log n）",
    ):
        for width in (60, 90, 140):
            parts = lines(wrap(text, width, 20))
            assert not any(p[:1] in "，：、；）。" or p[-1:] in "（《" for p in parts), parts


def test_a_fitted_title_draws_its_subtitle_at_the_axis_font_and_takes_its_lines_height():
    title, top = fitted_title(
        "Scores of query 12, head Δ = 1, α = 1<br><sub>a parabola, its top at 12 + Δ</sub>", 420, 26, 20
    )
    parts = lines(title["text"])
    assert parts[-1] == '<span style="font-size:20px">a parabola, its top at 12 + Δ</span>'  # not <sub>: 70 %
    assert all(text_width(p, 26) <= 420 for p in parts)
    assert top >= 12 + 26 * 1.3 * (len(parts) - 1) + 20 * 1.3 and title["yref"] == "container"


# ---------------------------------------------------------------- the figures on a slide
def log_axes(s: dict) -> list[tuple[str, dict]]:
    return [(k, a) for k, a in s["layout"].items() if k[1:5] == "axis" and a.get("type") == "log"]


@pytest.fixture(scope="module")
def sweep():
    return sat_sweep.saturation_sweep(S(8, 32, 0), (1, 4, 16, 64, 256))


def slide_log_figures(sweep, style: Style) -> list:
    p = cv.Params()
    alphas = np.array(cav.SWEEP_ALPHAS)
    return [
        fs.saturation_curves_figure(sweep, 64, True, 8, 32, 1.0, style),
        fs.gradient_curves_figure(sweep, 64, True, 8, 32, 1.0, style),
        cv.heads_view(p, style).figure,
        cv.curve_view(p, style).figure,
        *[v.figure for v in cv.pd_views(p, None, style)],
        vfig.sweep_figure(alphas, 10.0 ** -np.linspace(1, 16, len(alphas)), 1e-6, 10.0, 1.0, style),
    ]


@pytest.mark.parametrize("style", SLIDES)
def test_every_log_axis_on_a_slide_labels_its_ticks_itself(sweep, style):
    """plotly's own labels of a short log axis are minor 2s and 5s at 15 px, its powers 10⁻³ with 14 px exponents:
    every log axis of these charts says which ticks to draw and writes their labels (none a <sup>)."""
    for fig in slide_log_figures(sweep, style):
        s = spec(fig)
        axes = log_axes(s)
        assert axes, s["layout"]["title"]["text"]
        for name, ax in axes:
            assert ax.get("tickvals") and len(ax["ticktext"]) == len(ax["tickvals"]), (s["layout"]["title"], name)
            assert all("<sup>" not in t for t in ax["ticktext"]), ax["ticktext"]


def test_the_gradients_on_a_slide_write_their_powers_of_ten_with_superscript_digits(sweep):
    lay = spec(fs.gradient_curves_figure(sweep, 64, False, 8, 32, 1.0, Style(present=True)))["layout"]
    assert "10⁻¹" in lay["yaxis"]["ticktext"] and "exponentformat" not in lay["yaxis"]


@pytest.mark.parametrize("style", SLIDES)
def test_panel_titles_on_a_slide_fit_their_panels(style):
    """The row figure's two panel titles ran into each other at 1024 px ("… H/log n 0.905" over "Jacobian …")."""
    raw = examples.example_scores(S(16, 16), 64, rows=[0])[0]
    figs = [
        fs.row_figure(measures.row_softmax(raw, 0.125), synthetic_tokens(16), "t0 (0)", "title", style),
        fs.float16_figure(
            measures.float16_demo(raw * 8),
            sat_sweep.saturation_sweep(S(8, 16), (1, 64)),
            synthetic_tokens(16),
            64,
            style,
        ),
    ]
    for fig in figs:
        s = spec(fig)
        lay, bar = s["layout"], any(t.get("coloraxis") for t in s["data"])  # a colour bar at the right
        for a in lay["annotations"]:
            axis = next(
                ax for k, ax in lay.items() if k.startswith("xaxis") and abs(sum(ax["domain"]) / 2 - a["x"]) < 1e-6
            )
            plot = SLIDE_CHART_PX - 100 - (150 if bar else 20)
            room = (axis["domain"][1] - axis["domain"][0]) * plot + 20
            assert all(text_width(line, a["font"]["size"]) <= room for line in lines(a["text"])), a["text"]


@pytest.mark.parametrize("style", SLIDES)
def test_the_float16_slide_keeps_its_flags_and_axis_title_inside_a_short_plot(style):
    """On a slide the plot is about 190 px tall: "rows that are not a valid distribution" at 22 px ran past it into
    the legend, and the "NaN" written above its mark reached the panel's title."""
    demo = measures.float16_demo(np.array([20.0, 1.0, -3.0, 15.0]))
    s = spec(fs.float16_figure(demo, sat_sweep.saturation_sweep(S(8, 16), (1, 16)), synthetic_tokens(4), 16, style))
    assert text_width(s["layout"]["yaxis2"]["title"]["text"], 22) <= 190
    (marks,) = [t for t in s["data"] if t.get("name") == "non-finite"]
    assert marks["text"] == ["NaN", "NaN"] and marks["textposition"] == ["middle right", "middle left"]
    page = spec(fs.float16_figure(demo, sat_sweep.saturation_sweep(S(8, 16), (1, 16)), synthetic_tokens(4), 16))
    assert page["layout"]["yaxis2"]["title"]["text"] == "rows that are not a valid distribution"  # the page: in full


@pytest.mark.parametrize("style", SLIDES)
def test_the_one_dimensional_heads_titles_fit_a_slide(style):
    """On a slide the score and window charts stand side by side (the K heads on a slide of their own): each title
    line fits half the slide, the subtitle drawn at 20 px (plotly's <sub> drew it at 18), the top margin holds it."""
    pos, scores = np.arange(24), -((np.arange(24) - 13.0) ** 2)
    w = np.exp(scores - scores.max())
    w /= w.sum()
    figs = [
        (vfig.score_figure(pos, scores, 12, 1, 1.0, style), 0.5),
        (vfig.window_figure(pos, w, 12, 1, 1.0, style), 0.5),
        (vfig.heads_1d_figure(pos, np.stack([w, w, w]), (-1, 0, 1), 12, 1.0, style), 1.0),
        (vfig.image_figure(np.zeros((3, 3)), style.t("conv.fig_att", n=9, ch="grey"), "grey", style=style), 0.5),
    ]
    for fig, share in figs:
        lay = spec(fig)["layout"]
        text = lay["title"]["text"]
        assert "<sub>" not in text
        plain = [(re.sub(r"<[^>]+>", "", line), 20 if "font-size:20px" in line else 26) for line in lines(text)]
        assert all(text_width(line, px) <= share * SLIDE_CHART_PX - 30 for line, px in plain), text
        assert lay["margin"]["t"] >= 12 + 1.3 * 26 * len(plain) - 6 * 1.3
    page = spec(vfig.score_figure(pos, scores, 12, 1, 1.0))["layout"]
    assert "<sub>" in page["title"]["text"]  # the page keeps its small subtitle


def test_the_analogy_table_breaks_chinese_cells_into_lines_its_columns_hold():
    """A table cell wraps at spaces only: Chinese cells ran past their columns and over the next."""
    style = Style(present=True, lang="zh")
    header, rows = cav.analogy_rows(3, 1, style)
    cells = spec(vfig.analogy_figure(header, rows, "t", style))["data"][0]["cells"]["values"]
    widths = vfig.ANALOGY_COLUMNS
    for col, w in zip(cells, widths, strict=True):
        room = SLIDE_CHART_PX * w / sum(widths) - 20
        assert all(text_width(line, 21) <= room for cell in col for line in lines(cell)), col
    parts = [cav.analogy_view(3, 1, style, i).data for i in (0, 1)]
    assert [len(d) for d in parts] == [3, 3] and len(cav.analogy_view(3, 1, style).data) == 6


# ---------------------------------------------------------------- the lab's dotted line
@pytest.mark.parametrize(
    ("name", "says"), [("scaling", "curves compared at step 20"), ("kv_heads", "step 60: read by the trade-off chart")]
)
def test_the_labs_dotted_line_says_what_it_marks_before_any_run(name, says):
    """Before a run the lab's chart showed a dotted line at step 20 and nothing else: the chart says what it is."""
    exp = lv.experiment(lv.Params(experiment=name))
    lay = spec(lv.result_views([], exp, 0, Style())[0].figure)["layout"]
    (line,) = lay["shapes"]
    (note,) = lay["annotations"]
    assert note["text"] == says and note["x"] == line["x0"] == lv.mark_step(exp)
    zh = spec(lv.result_views([], exp, 0, Style(present=True, lang="zh"))[0].figure)["layout"]
    assert f"第 {lv.mark_step(exp)} 步" in zh["annotations"][0]["text"] and zh["annotations"][0]["font"]["size"] >= 20


def test_a_curve_without_a_label_keeps_its_bare_line():
    df = pd.DataFrame({"group": ["a"], "step": [1], "loss": [1.0]})
    lay = spec(lfig.curves_figure(df, ["a"], ["A"], "loss", 10, "t", Style(), mark=5))["layout"]
    assert lay["shapes"][0]["x0"] == 5 and not lay.get("annotations")


@pytest.mark.parametrize("k", [3, 5, 7])
def test_the_k2_maps_on_a_slide_keep_each_rows_labels_clear_of_the_panels_above(k):
    """A slide stretches the K² heads' maps to about 320 px of plot: with the page's gaps (11 px there) each row's
    "Δ=(0,-1)" sat on the panels above it."""
    maps = np.zeros((k * k, 6, 6), dtype=np.float32)
    fig = vfig.head_maps_figure(maps, k, (2, 2), np.arange(6), np.arange(6), (6, 6), style=Style(present=True))
    lay = spec(fig)["layout"]
    tops = sorted({tuple(a["domain"]) for key, a in lay.items() if key.startswith("yaxis")}, reverse=True)
    assert len(tops) == k and min(a[0] - b[1] for a, b in zip(tops, tops[1:], strict=False)) * 320 >= 1.4 * 20
    notes = lay["annotations"]
    assert len(notes) == k * k and all(n["font"]["size"] >= 20 for n in notes)
    pitch = 1 / k * (SLIDE_CHART_PX - 150)  # px between the centres of two panels side by side
    assert all(text_width(n["text"], 20) < pitch for n in notes), [n["text"] for n in notes]
    assert lay["margin"]["t"] >= 12 + 26 * 1.3 + 1.4 * 20  # the title, then the top row's labels
