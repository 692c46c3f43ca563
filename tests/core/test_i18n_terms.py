"""The Chinese catalog says one thing one way: 词元 for "token", no space beside full-width punctuation."""

from __future__ import annotations

import json
import re

from attn_core.i18n import CATALOG_DIR, translate

ZH = json.loads((CATALOG_DIR / "zh.json").read_text(encoding="utf-8"))


def prose(text: str) -> str:
    """``text`` without its ``{placeholders}`` and ``code`` spans."""
    return re.sub(r"\{[^}]*\}|`[^`]*`", "", text)


def test_token_is_always_ci_yuan():
    """One term for "token" on every page (it was 词元 on the KV-sharing page and "token" elsewhere)."""
    english = sorted(k for k, v in ZH.items() if re.search(r"(?i)\btokens?\b", prose(v)))
    assert english == [], english


def test_no_space_beside_full_width_punctuation():
    spaced = sorted(k for k, v in ZH.items() if re.search(r" [（）：，。、；！？]|[（）：，。、；！？] ", v))
    assert spaced == [], spaced


def test_this_model_label():
    assert translate("kvmem.layout_this_model", "zh", name="MHA") == "MHA（本模型）"  # was "MHA （本模型）"
    assert translate("kvmem.layout_this_model", "en", name="MHA") == "MHA (this model)"
