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
