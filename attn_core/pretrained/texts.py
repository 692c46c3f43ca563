"""The evaluation texts shipped in ``assets/eval`` (public domain; sources in ``assets/eval/README.md``).

``en``: the first two chapters of Jane Austen's *Pride and Prejudice* (1813) and the first chapter of
Lewis Carroll's *Alice's Adventures in Wonderland* (1865), about 3,800 words; ``zh``: the first four
books of the *Analects* (《论语》 学而, 为政, 八佾, 里仁), about 3,200 characters. Each gives a few
thousand tokens to the shipped models' tokenizers (SmolLM2: 4,983 and 5,381; Gemma 3: 4,820 and 2,881).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from attn_core.pretrained.models import special_frame
from attn_core.runtime.config import check_int, unknown_option

EVAL_DIR = Path(__file__).resolve().parents[2] / "assets" / "eval"
LANGS = ("en", "zh")


@lru_cache(maxsize=len(LANGS))
def eval_text(lang: str = "en") -> str:
    """The evaluation text in ``lang`` (:data:`LANGS`), read once per process."""
    if lang not in LANGS:
        raise unknown_option("lang", lang, LANGS)
    return (EVAL_DIR / f"{lang}.txt").read_text(encoding="utf-8")


def eval_ids(model: Any, lang: str = "en", n_tokens: int = 2048) -> list[int]:
    """The first ``n_tokens`` token ids of :func:`eval_text` for ``model`` (a
    :class:`~attn_core.pretrained.models.LoadedModel`), with its special tokens kept around them (a BOS, or
    BERT's ``[CLS]`` ... ``[SEP]``) and the whole cut to ``model.max_positions``; fewer when the text is
    shorter. What :func:`attn_core.pretrained.surgery.evaluate` reads.
    """
    n_tokens = check_int("n_tokens", n_tokens, 2)
    prefix, suffix = special_frame(model.tokenizer)
    body = list(model.tokenizer(eval_text(lang), add_special_tokens=False, verbose=False)["input_ids"])
    room = min(n_tokens, model.max_positions) - len(prefix) - len(suffix)
    return [int(i) for i in prefix + body[: max(0, room)] + suffix]
