"""What a page shows on one slide of its slide mode (``PageSpec.slide``), the source of a deck's files: one
section or step a slide where the page shows one at a time, the current view's charts elsewhere."""

from __future__ import annotations

import pytest

from attn_core import figures
from attn_core.export import params_from_link
from attn_core.runtime.config import ConfigError
from attn_core.views import page

STYLE = figures.Style(present=True)

CASES = [  # page, link state, the charts drawn (name prefixes), how many sentences
    ("heatmaps", {}, ["attention_weights"], 1),
    ("heatmaps", {"view": "shapes"}, [], 1),
    ("heatmaps", {"view": "steps", "slide": "4"}, ["head0_scores"], 2),
    ("heatmaps", {"view": "steps", "slide": "99"}, ["head0_output"], 2),  # past the last step: the last
    ("saturation", {"slide": "2"}, ["maps_dk64"], 0),
    ("saturation", {"head_dim": "256", "scaling": "false", "slide": "3"}, ["saturation_sweep"], 1),
    ("kv_cache", {}, ["kv_layouts_llama-3-8b"], 2),
    ("kv_cache", {"slide": "3", "kv_token": "4"}, ["kv_tensors_llama-3-8b_fp16_b1_s4096_t256"], 1),
    ("kv_cache", {"slide": "4"}, ["kv_decode_plan"], 1),
    ("kv_cache", {"slide": "5"}, [], 1),
    ("kv_sharing", {"kv_view": "costs"}, ["kv_bytes"], 1),
    ("mla", {"view": "agree"}, [], 2),
    ("mla", {"view": "agree", "slide": "2"}, ["mla_head0_agree"], 0),
    ("mla", {"view": "cost"}, ["mla_cost_small_flops", "mla_cost_small_bytes"], 0),  # the charts have the slide
    ("mla", {"view": "cost", "slide": "2"}, [], 1),  # then what they say, with the formulas
    ("complexity", {}, ["complexity_stages", "complexity_flops"], 0),  # no hook: the current view's charts
]


@pytest.mark.parametrize("name,link,charts,said", CASES, ids=[f"{c[0]}-{'-'.join(c[1].values())}" for c in CASES])
def test_a_slide_shows_its_section_or_step(name, link, charts, said):
    spec = page(name)
    params, steps = params_from_link(spec, link)
    shown = spec.slide(params, STYLE, steps)
    assert len(shown.views) == len(charts)
    assert all(v.name.startswith(c) for v, c in zip(shown.views, charts, strict=True)), [v.name for v in shown.views]
    assert len(shown.sentences) == said


def test_a_link_state_becomes_the_pages_params():
    spec = page("saturation")
    params, steps = params_from_link(spec, {"head_dim": "256", "scaling": "false", "slide": "3", "x_sat_row": "true"})
    assert (params.head_dim, params.scaling, steps) == (256, False, {"slide": 3})
    with pytest.raises(ConfigError) as err:
        params_from_link(spec, {"head_dim": "many"})
    assert err.value.key == "link_value"
    with pytest.raises(ConfigError) as err:
        params_from_link(spec, {"heads": "8"})
    assert err.value.key == "link_param"
