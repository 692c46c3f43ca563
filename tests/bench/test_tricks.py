"""bench/tricks.py takes each speed trick out of a copy of the app by one textual edit: the code each edit names
must still be there, once, or the benchmark measures nothing (it refuses to run such a trick)."""

from __future__ import annotations

import pytest

from bench import tricks


@pytest.mark.parametrize("trick", tricks.TRICKS, ids=lambda t: t.name)
def test_each_trick_is_taken_out_by_an_edit_of_code_that_is_there(trick):
    text = (tricks.ROOT / trick.path).read_text(encoding="utf-8")
    assert text.count(trick.old) == 1, f"{trick.name}: {trick.path} no longer holds the code the edit replaces"
    assert trick.new != trick.old and trick.pages
    from bench import bench as B

    pages = {c.label.split(" · ")[0] for c in B.page_cases()}
    assert set(trick.pages) <= pages, f"{trick.name}: pages without a benchmark case"
