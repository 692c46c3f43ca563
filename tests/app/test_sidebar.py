"""The sidebar in both languages: the compute device is said in the user's language."""

from __future__ import annotations

import re

import pytest
import torch

from tests.conftest import no_exception


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_device_caption_is_in_the_users_language(app_test, lang):
    at = app_test(query={"lang": lang})
    no_exception(at)
    captions = [c.value for c in at.sidebar.caption]
    device = [c for c in captions if c.startswith(("Computing on", "计算设备"))]
    n = torch.get_num_threads()  # the tests run on the CPU (tests/conftest.py)
    if lang == "zh":
        assert device == [f"计算设备：CPU · {n} 个线程"], captions
        assert not re.search(r"\bthreads?\b", " ".join(captions)), captions  # was "计算设备：CPU · 2 threads"
    else:
        assert device == [f"Computing on: CPU · {n} thread{'s' if n != 1 else ''}"], captions


def test_reruns_keep_the_sidebars_values_on_a_page_of_its_own(app_test):
    """Every run, the first included, goes through app.py's navigation and sidebar, as on a warm server: a legacy
    ``pages/`` folder next to app.py would run the page script alone before each AppTest run and drop the
    sidebar's values (ui.streamlit_compat.LEGACY_PAGES_DIR)."""
    at = app_test("app_pages/saturation.py", query={"seed": "7"})
    no_exception(at)
    assert at.sidebar.number_input(key="seed").value == 7
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    at.slider(key="temperature").set_value(2.0).run()  # a move of the page's control: the page's fragment
    at.run()
    no_exception(at)
    assert at.sidebar.number_input(key="seed").value == 7 and at.sidebar.segmented_control(key="lang").value == "zh"
    assert at.slider(key="temperature").value == 2.0
    assert at.title[0].value == "Softmax 饱和：为什么要除以 √d_k", at.title[0].value
