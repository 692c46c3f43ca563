"""Message catalogs for English and Simplified Chinese (``assets/i18n/<lang>.json``).

Keys are dotted names (``heatmap.title``); values are ``str.format`` templates.
The catalogs are read once per process and never mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

LANGUAGES = ("en", "zh")
DEFAULT_LANG = "en"
CATALOG_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"


@cache
def catalog(lang: str) -> Mapping[str, str]:
    """The read-only catalog of ``lang`` (``en`` or ``zh``)."""
    if lang not in LANGUAGES:
        lang = DEFAULT_LANG
    with open(CATALOG_DIR / f"{lang}.json", encoding="utf-8") as fh:
        data = json.load(fh)
    return MappingProxyType({k: v for k, v in data.items() if not k.startswith("_")})


def translate(key: str, lang: str = DEFAULT_LANG, /, **kwargs: object) -> str:
    """The text for ``key`` in ``lang`` with ``kwargs`` substituted.

    A key missing from ``lang`` falls back to English; a key missing everywhere
    returns the key itself (tests make sure that never happens).
    """
    text = catalog(lang).get(key)
    if text is None:
        text = catalog(DEFAULT_LANG).get(key, key)
    return text.format(**kwargs) if kwargs else text


def count(n: int, unit: str, lang: str = DEFAULT_LANG, /) -> str:
    """``n`` with its unit in the right number: ``count.<unit>.one`` for 1, else ``count.<unit>.other``.

    ``count(1, "kv_head")`` is "1 KV head", ``count(4, "kv_head")`` "4 KV heads"
    (Chinese has one form, written in both entries).
    """
    return translate(f"count.{unit}.{'one' if n == 1 else 'other'}", lang, n=n)
