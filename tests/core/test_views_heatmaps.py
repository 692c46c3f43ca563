"""The heatmaps page's view model: the step-by-step sentences say what the current settings do."""

from __future__ import annotations

import pytest

from attn_core.figures import Style
from attn_core.views import heatmaps as hm


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_mask_and_softmax_steps_name_the_mask_that_is_set(lang):
    style = Style(lang=lang)
    sentences = {m: hm.step_sentences(hm.Params(mask=m), None, style) for m in ("none", "causal", "padding")}
    masked_get_zero = {"en": "masked cells get 0", "zh": "被掩码的位置权重为 0"}[lang]
    grey = {"en": "grey", "zh": "灰色"}[lang]
    # no mask: the mask step changes nothing and the softmax step promises no masked cells
    assert grey not in sentences["none"][5] and masked_get_zero not in sentences["none"][6]
    for mask in ("causal", "padding"):
        assert grey in sentences[mask][5] and masked_get_zero in sentences[mask][6]
    assert sentences["causal"][5] != sentences["padding"][5]
    assert len({s[5] for s in sentences.values()}) == 3


def test_a_decoders_steps_say_causal_and_an_encoders_say_no_mask():
    causal = hm.StepFacts(64, 0.125, 3, 8, 8, mask="causal")
    encoder = hm.StepFacts(64, 0.125, 1, 8, 8, mask="none")
    style = Style()
    assert "after" in hm.explanation(causal, 5, style) and "changes nothing" in hm.explanation(encoder, 5, style)
