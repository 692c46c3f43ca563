"""AppTest: the training lab page. Every experiment trains (a short steps override) and draws the losses the engine
measures; a stopped run keeps its partial curve; a finished run survives a page switch; an over-budget run is
refused with a message; the sentences follow the numbers; Chinese."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.lab import training as lab
from attn_core.views import lab as lv
from tests.conftest import no_exception
from tests.util import arr, chart_specs

PAGE = "app_pages/lab.py"
SHORT = {"lab_steps": "5"}


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def train(at):
    at.button(key="lab_run").click().run()
    no_exception(at)
    return at


@pytest.mark.parametrize("experiment", ["kv_heads", "convert", "heads", "custom"])
def test_every_experiment_trains_and_draws_two_charts(app_test, experiment):
    at = app_test(PAGE, query={"experiment": experiment, **SHORT})
    no_exception(at)
    assert [s["data"] for s in chart_specs(at)] == [[]] and "Press Train" in texts(at)  # nothing trains before Start
    specs = chart_specs(train(at))
    assert len(specs) == 2, experiment
    assert all(s["data"] for s in specs)


def test_scaling_curves_are_the_engines_losses_and_the_sentence_follows_them(app_test):
    at = train(app_test(PAGE, query={"experiment": "scaling", "lab_steps": "5", "lab_seeds": "1"}))
    loss, top = chart_specs(at)
    names = [d["name"] for d in loss["data"]]
    assert names == ["d_k 16, scaled", "d_k 16, unscaled", "d_k 256, scaled", "d_k 256, unscaled"]
    recs = list(
        lab.train(
            lab.LabSpec(n_heads=2, n_kv_heads=2, head_dim=256, scaled=False),
            lab.Task("copy", 64, 16),
            run=lab.RunSpec(5, 32, 3e-3, 0, eval_every=1, probe_every=1),
        )
    )
    np.testing.assert_allclose(arr(loss["data"][3]["y"]), [r.loss for r in recs], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(top["data"][3]["y"]), [r.max_weight for r in recs], rtol=1e-5, atol=1e-6)
    for dk in (16, 256):
        assert f"d_k {dk}: at step 5" in texts(at)


def test_a_stopped_run_keeps_its_partial_curve(app_test):
    """A rerun during training (the Stop button) leaves the run marked running: the page reads it as stopped."""
    import ui

    p = lv.Params(experiment="kv_heads", lab_steps=5)
    exp = lv.experiment(p)
    points = []
    for pt in lv.experiment_steps(exp):
        points.append(pt)
        if len(points) == 8:  # the first arm (6 points) and two steps of the second
            break
    run = ui.LiveRun(params=(exp, "cpu"), steps=points, status="running")
    at = app_test(PAGE, query={"experiment": "kv_heads", **SHORT}, session={"lab_live": run})
    no_exception(at)
    assert "Stopped after 6 of 15 steps" in at.warning[0].value
    loss = chart_specs(at)[0]
    assert [len(arr(d["y"])) for d in loss["data"]] == [6, 2]  # the partial curve of the second arm
    at.slider(key="lab_steps").set_value(10).run()  # the page stays usable
    no_exception(at)


def test_a_finished_run_is_kept_across_page_switches(app_test):
    at = train(app_test(PAGE, query={"experiment": "kv_heads", **SHORT}))
    before = chart_specs(at)
    at.switch_page("app_pages/saturation.py").run()
    no_exception(at)
    at.switch_page(PAGE).run()
    no_exception(at)
    after = chart_specs(at)
    assert len(after) == 2 and after[0]["data"][0]["y"] == before[0]["data"][0]["y"]


def test_an_over_budget_run_is_refused_with_a_message(app_test):
    query = {
        "experiment": "custom",
        "lab_steps": "1000",
        "lab_layers": "4",
        "lab_d_model": "256",
        "lab_head_dim": "256",
        "lab_batch": "128",
    }
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert "FLOPs" in at.error[0].value and "fewer steps" in at.error[0].value
    assert not [b for b in at.button if b.key == "lab_run"]


def test_chinese(app_test):
    at = train(app_test(PAGE, query={"experiment": "heads", "lang": "zh", **SHORT}))
    assert "训练实验室" in at.title[0].value
    body = texts(at)
    assert "训练 5 步后" in body and "还没有头" in body and "Press" not in body
    heads = chart_specs(at)[1]
    assert "第 5 步" in heads["layout"]["title"]["text"]
