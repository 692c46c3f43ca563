"""attn_core.views.saturation: the saturation page's Params, steps and views (what the page and the CLI draw)."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attn_core.figures import FONTS_SET, Style, apply_fonts
from attn_core.runtime.config import ConfigError
from attn_core.saturation import examples, measures, sweep
from attn_core.saturation.sampling import SamplingSpec as S
from attn_core.views import saturation as sat
from attn_core.views.base import defaults, with_values


def spec(fig) -> dict:
    """The figure as plotly JSON, as the browser receives it."""
    return json.loads(pio.to_json(fig))


def test_saturation_views_build_every_view_with_its_numbers():
    p = sat.Params(head_dim=128, seq_len=8, samples=32, seed=4, scaling=False, temperature=0.5, row=2)
    views = sat.views(p, Style())
    assert [v.name for v in views] == [
        "scores_dk128",
        "maps_dk128",
        "saturation_sweep",
        "gradient_sweep",
        "row2_dk128",
        "float16_row2_dk128",
    ]
    example = examples.example_scores(S(8, 32, 4), 128)
    maps = views[1].data
    assert len(maps) == 64
    np.testing.assert_allclose(maps["weight_unscaled"], measures.softmax_weights(example, 2.0).reshape(-1), atol=1e-6)
    np.testing.assert_allclose(maps["score_qk"], example.reshape(-1), atol=1e-5)
    row = views[4].data
    np.testing.assert_allclose(row["weight"], measures.row_softmax(example[2], 1.0, 0.5).p, atol=1e-6)
    assert "no 1/√d_k scaling" in spec(views[4].figure)["layout"]["title"]["text"]
    swept = sweep.saturation_sweep(S(8, 32, 4), sweep.SWEEP_D_K, 0.5)
    np.testing.assert_allclose(views[2].data["max_weight"], swept["max_weight"])
    np.testing.assert_allclose(views[3].data["grad_q_norm_median"], swept["grad_q_norm_median"])
    np.testing.assert_allclose(views[5].data["stable_fp16"], measures.float16_demo(example[2]).stable, atol=1e-3)
    with pytest.raises(ConfigError, match="row"):
        sat.views(sat.Params(seq_len=8, row=8), Style())


@pytest.mark.parametrize("style", [Style(), Style(present=True, lang="zh")], ids=["normal", "present-zh"])
def test_figures_carry_the_fonts_of_apply_fonts(style):
    """The builders set the fonts themselves and say so in layout.meta, so that ui.show_view's apply_fonts
    skips its plotly layout updates (most of a rerun): what it would set must be there already."""
    swept = sweep.saturation_sweep(S(8, 16), (1, 4, 16))
    raw = examples.example_scores(S(8, 16), 16, rows=[0])[0]
    p4 = sat.Params(head_dim=4, scaling=True, seq_len=8, samples=16, temperature=1.0)
    p16 = with_values(p4, head_dim=16)
    views = [
        sat.distribution_view(sweep.score_sample(S(8, 16), 16), style),
        sat.maps_view(examples.example_maps(S(8, 16), 16), style),
        sat.maps_view(examples.example_maps(S(100, 16), 16), style),
        sat.curves_view(p4, swept, style),
        sat.gradient_view(p4, swept, style),
        sat.row_view(p16, sat.row_softmax(raw, p16), style),
        sat.float16_view(p16, sat.float16_demo(raw), swept, style),
    ]
    for v in views:
        before = spec(v.figure)
        assert before["layout"].pop("meta") == {FONTS_SET: style.font}
        fig = go.Figure(v.figure)  # validated: also checks every property is one plotly accepts as written
        fig.layout.meta = None
        assert spec(apply_fonts(fig, style)) == before, v.name  # apply_fonts itself adds nothing
        assert before["layout"]["xaxis"]["tickfont"]["size"] == style.font


def test_params_hold_the_pages_defaults_and_url_keys():
    assert defaults(sat.Params) == {
        "head_dim": 64,
        "scaling": True,
        "seq_len": 16,
        "samples": 256,
        "temperature": 1.0,
        "dist": "normal",
        "row": 0,
        "seed": 0,
        "text": None,
    }
    with pytest.raises(ConfigError, match="uniform"):
        sat.Params(dist="uniform")


def test_the_sample_drawn_does_not_depend_on_the_scaling_temperature_or_row():
    """The sweep and the sample are cached by what they depend on (Params.sampling and d_k, τ): moving the scaling,
    τ or the row must not make the page measure the whole sweep again."""
    p = sat.Params()
    assert with_values(p, scaling=False, temperature=2.0, row=5, head_dim=8).sampling == p.sampling
    assert with_values(p, seq_len=8).sampling != p.sampling and with_values(p, dist="projected").sampling != p.sampling
    assert with_values(p, samples=64).sampling != p.sampling and with_values(p, seed=1).sampling != p.sampling


def test_text_sets_the_number_of_keys_as_the_cli_did():
    assert sat.Params(text="the cat sat on the mat").seq_len == 6
    assert sat.Params(text="one", seq_len=100).seq_len == 2  # at least two keys
    assert sat.Params(seq_len=100).seq_len == 100


def test_which_views_computes_only_what_they_need(monkeypatch):
    called = []
    for name in ("score_sample", "saturation_sweep", "example_maps", "query_scores"):
        real = getattr(sat, name)
        monkeypatch.setattr(sat, name, lambda *a, _real=real, _name=name, **k: called.append(_name) or _real(*a, **k))
    p = sat.Params(seq_len=8, samples=16, head_dim=16, row=3)
    views = sat.views(p, Style(), "row")
    assert [v.name for v in views] == ["row3_dk16"] and called == ["query_scores"]
    called.clear()
    assert [v.name for v in sat.views(p, Style(), "maps,dist")] == ["maps_dk16", "scores_dk16"]
    assert called == ["score_sample", "example_maps"]
    with pytest.raises(ConfigError, match="view"):
        sat.views(p, Style(), "grid")


@pytest.mark.parametrize(
    "mw_u,mw_s,variant",
    [(0.95, 0.5, "peaked"), (0.6, 0.4, "sharper"), (0.45, 0.4, "alike")],
)
def test_maps_caption_follows_the_measured_largest_weight(mw_u, mw_s, variant):
    cur = {False: {"max_weight": mw_u}, True: {"max_weight": mw_s}}
    text = sat.maps_caption(sat.Params(), cur, Style())
    assert text == Style().t(f"sat.c2_{variant}", d=64, mw_u=f"{mw_u:.3f}", mw_s=f"{mw_s:.3f}")


def test_measured_note_only_when_rows_are_left_out():
    assert sat.measured_note(sat.Params(), Style()) is None
    note = sat.measured_note(sat.Params(seq_len=8192, samples=16384), Style())
    assert "**1,024** of the 134,217,728 query rows" in note


def test_maps_and_row_scores_from_the_kept_first_sequence_equal_those_drawn():
    p = sat.Params(head_dim=32, seq_len=12, samples=64, temperature=1.3, seed=5)
    qk = sat.first_sequence(p.sampling, p.head_dim)
    drawn, kept = sat.example_maps(p.sampling, 32, 1.3), sat.example_maps(p.sampling, 32, 1.3, qk=qk)
    np.testing.assert_array_equal(kept.scaled, drawn.scaled)
    np.testing.assert_array_equal(kept.unscaled, drawn.unscaled)
    assert kept.mean_max_unscaled == drawn.mean_max_unscaled
    np.testing.assert_array_equal(sat.query_scores(p.sampling, 32, 7, qk=qk), sat.query_scores(p.sampling, 32, 7))
    with pytest.raises(ValueError):  # another d_k's q and k
        sat.example_maps(p.sampling, 16, 1.3, qk=qk)
    # the page takes them from the current d_k's scores, drawn once with them
    kept_qk = sat.first_sequence(p.sampling, p.head_dim, scores=sat.current_scores(p.sampling, p.head_dim))
    assert all(np.array_equal(a, b) for a, b in zip(kept_qk, qk, strict=True))


@pytest.mark.parametrize(
    "kw",
    [
        dict(seed=0),
        dict(seed=3, dist="projected", head_dim=256, temperature=0.7, scaling=False),
        dict(seq_len=300, samples=32, head_dim=1, seed=2, temperature=2.5),
        dict(seq_len=4, samples=16, head_dim=1024, seed=9, temperature=0.1),
    ],
)
def test_the_current_d_k_s_weights_alone_are_the_sweeps_numbers_at_that_d_k(kw):
    """The page's sentences read the current d_k's largest weights and saturated rows while its sections against
    d_k are closed (``current_weights``): the same rows, scores and softmax as the whole sweep, so its numbers are
    the sweep's at that d_k, to the bit, with the kept scores or drawn again. They are not τ's leftovers: another
    τ changes them, and an unscaled row at d_k > 1 is more peaked than a scaled one."""
    p = sat.Params(**kw)
    whole = sat.sweep_at(sat.saturation_sweep(p.sampling, p.temperature, scores=sat.sweep_scores(p.sampling)), p)
    scores = sat.current_scores(p.sampling, p.head_dim)
    one = sat.current_weights(p.sampling, p.head_dim, p.temperature, scores=scores)
    assert set(one) == {False, True} and all(set(one[f]) == set(sweep.WEIGHT_COLUMNS) for f in one)
    assert one == {f: {c: whole[f][c] for c in sweep.WEIGHT_COLUMNS} for f in (False, True)}
    assert sat.current_weights(p.sampling, p.head_dim, p.temperature) == one  # no scores: drawn again
    other = sat.current_weights(p.sampling, p.head_dim, p.temperature * 2, scores=scores)
    assert other[True]["max_weight"] < one[True]["max_weight"]  # a higher τ flattens every row
    if p.head_dim > 1:
        assert one[False]["max_weight"] > one[True]["max_weight"]
    with pytest.raises(ValueError):  # scores of another d_k
        sat.current_weights(
            p.sampling, p.head_dim, p.temperature, scores=sat.current_scores(p.sampling, 2 if p.head_dim != 2 else 4)
        )


@pytest.mark.parametrize(
    "kw", [dict(seed=0), dict(seed=3, dist="projected", head_dim=256), dict(seq_len=300, samples=32, head_dim=1)]
)
def test_the_histograms_from_the_current_d_k_s_scores_equal_those_drawn_again(kw):
    """The page draws the current d_k's sample once (``current_scores``) and summarises it from there: every field
    of the score sample is the one drawing it again gives, to the bit; scores of another d_k are refused."""
    p = sat.Params(**kw)
    drawn = sat.score_sample(p.sampling, p.head_dim)
    kept = sat.score_sample(p.sampling, p.head_dim, scores=sat.current_scores(p.sampling, p.head_dim))
    for name in drawn.__dataclass_fields__:
        a, b = getattr(drawn, name), getattr(kept, name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, name
    other = sat.current_scores(p.sampling, 2 if p.head_dim != 2 else 4)
    with pytest.raises(ValueError, match="scores were drawn for"):
        sat.score_sample(p.sampling, p.head_dim, scores=other)
