"""The evaluation texts (assets/eval) and their loader, on tiny models' tokenizers."""

from __future__ import annotations

import pytest

from tests.core.tiny_models import require, write_model

require("transformers")

from attn_core.pretrained import models, texts  # noqa: E402
from attn_core.runtime.config import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {f: models.load_model(str(write_model(f, root / f)), device="cpu") for f in ("llama", "bert")}


def test_both_texts_are_long_public_domain_prose():
    en, zh = texts.eval_text("en"), texts.eval_text("zh")
    assert en.startswith("PRIDE AND PREJUDICE") and "It is a truth universally acknowledged" in en
    assert "Down the Rabbit-Hole" in en and len(en.split()) > 3000
    assert zh.startswith("论语") and "学而时习之" in zh and "德不孤，必有邻" in zh and len(zh) > 3000
    readme = (texts.EVAL_DIR / "README.md").read_text(encoding="utf-8")
    assert "public domain" in readme and "en.txt" in readme and "zh.txt" in readme
    with pytest.raises(ConfigError) as err:
        texts.eval_text("fr")
    assert err.value.key == "unknown_option"


def test_ids_keep_the_special_tokens_and_fit_the_model(tiny):
    llama, bert = tiny["llama"], tiny["bert"]  # byte-level with a BOS (128 positions); WordPiece (16 positions)
    ids = texts.eval_ids(llama, "en", 100)
    body = llama.tokenizer(texts.eval_text("en"), add_special_tokens=False)["input_ids"]
    assert len(ids) == 100 and ids[0] == 257 and ids[1:] == list(body[:99])
    assert len(texts.eval_ids(llama, "zh", 4096)) == llama.max_positions == 128
    b = texts.eval_ids(bert, "en", 2048)
    assert len(b) == 16 and b[0] == bert.tokenizer.cls_token_id and b[-1] == bert.tokenizer.sep_token_id
