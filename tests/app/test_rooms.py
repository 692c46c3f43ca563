"""Live lecture rooms in the app (AppTest, two sessions sharing one store): the lecturer starts a room from the deck
panel; a student's page follows the lecturer's slide and view, explores and follows again, answers a question once
and sees the reveal; a student link drives nothing; bad links and the room's end are said in the user's language.
On SQLite (a temporary data directory) and on a real redis-server (``ATTN_STORE``)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from attn_core import decks
from rooms import codes, current
from tests.conftest import ROOT, no_exception


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path))
    if request.param == "redis":
        monkeypatch.setenv("ATTN_STORE", request.getfixturevalue("redis_url"))
    else:
        monkeypatch.delenv("ATTN_STORE", raising=False)
    return request.param


@pytest.fixture
def sqlite_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ATTN_STORE", raising=False)


def fresh(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    no_exception(at)
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    no_exception(at)
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    no_exception(at)
    return at


def texts(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def lecturer_room(deck: str = "gqa_and_the_kv_cache", lang: str = "en") -> tuple[AppTest, str, str]:
    at = fresh({"deck": deck, "lang": lang})
    click(at, "room_start")
    room = at.session_state["_room"]
    assert room["role"] == "lecturer" and codes.key_shape(room["key"])
    return at, room["code"], room["key"]


def test_a_student_follows_the_lecturer_explores_and_follows_again(store):
    lec, code, key = lecturer_room()
    panel = texts(lec)
    assert f"Room {codes.display_code(code)}" in panel
    assert any(code in h.proto.body and "attn-link" in h.proto.body for h in lec.get("html"))  # the students' link
    assert any(key in h.proto.body for h in lec.get("html"))  # the lecturer link, in the lecturer's own sidebar
    assert lec.get("image")  # the QR code

    stu = fresh({"room": codes.display_code(code).lower()})
    assert stu.session_state["_room"] == {"code": code, "role": "student", "key": None}
    assert "Following the lecturer" in texts(stu) and "Slide 1 of 9" in texts(stu)
    assert not any(key in h.proto.body for h in stu.get("html"))  # no key anywhere on a student's page
    assert stu.session_state["_link_params"]["room"] == code and "deck" not in stu.session_state["_link_params"]

    click(lec, "deck_next")
    click(lec, "deck_next")  # MQA: one KV head
    rerun(stu)  # the run the student's watch asks for
    assert "Slide 3 of 9" in texts(stu) and stu.session_state["n_kv_heads"] == 1
    rerun(stu)
    assert stu.session_state["_room_follow"] is True  # a second run of the same slide is no exploring

    lec.slider(key="n_heads").set_value(16).run()  # the lecturer's own view of the slide
    no_exception(lec)
    rerun(stu)
    assert stu.session_state["n_heads"] == 16 and stu.session_state["_room_follow"] is True

    stu.slider(key="n_heads").set_value(4).run()  # the student explores
    no_exception(stu)
    assert stu.session_state["_room_follow"] is False and "Exploring on your own" in texts(stu)
    click(lec, "deck_next")
    rerun(stu)
    assert stu.session_state["n_heads"] == 4 and "the lecturer is on slide 4" in texts(stu)  # not pulled back
    click(stu, "room_follow")
    assert "Slide 4 of 9" in texts(stu) and stu.session_state["_room_follow"] is True
    assert stu.session_state["kv_view"] == "maps" and stu.session_state["n_heads"] == 8  # the deck's slide 4


def test_a_question_is_answered_once_and_revealed(store):
    lec, code, key = lecturer_room()
    stu = fresh({"room": code})
    for _ in range(3):
        click(lec, "deck_next")
    rerun(stu)
    assert "Question:" not in texts(stu)  # not asked yet: nothing to answer
    assert stu.session_state["_deck"].slides[3].question.answer is None  # a student's deck holds no answer
    click(lec, "room_ask")
    rerun(stu)
    assert "How many MiB" in texts(stu)
    click(stu, "room_answer")  # nothing typed
    assert any("Type a number first" in e.value for e in stu.error)
    stu.number_input(key="room_number_3").set_value(512).run()
    click(stu, "room_answer")
    assert any("Your answer is recorded: 512 MiB" in s.value for s in stu.success)
    assert not [b for b in stu.button if b.key == "room_answer"]  # no second form
    with pytest.raises(Exception, match="answered this question already"):
        current().answer(code, stu.session_state["_room_browser"], 3, 600)  # the same browser, straight at the store
    rerun(lec)
    assert "1 answer so far" in texts(lec) and "Right answer" not in texts(lec)  # the count, not the answers
    click(lec, "room_reveal")
    rerun(stu)
    assert "Right answer: 512 MiB · 1 of 1 right · yours is right" in texts(stu)
    assert stu.get("plotly_chart") or stu.get("bidi_component")
    csv = current().results_csv(code, key)
    assert csv.splitlines()[1].endswith(",number,512,1,yes")


def test_a_student_link_drives_nothing_and_a_wrong_key_is_said(sqlite_store):
    lec, code, key = lecturer_room()
    stu = fresh({"room": code})
    keys = {b.key for b in stu.button}
    assert not keys & {"room_ask", "room_reveal", "room_end", "room_start"} and "room_leave" in keys
    wrong = fresh({"room": code, "key": codes.new_key(), "lang": "zh"})
    assert any("只有持有房间密钥的讲师" in e.value for e in wrong.error)
    assert wrong.session_state["_room"]["role"] == "student" and "key" not in wrong.query_params
    owner = fresh({"room": code, "key": key})  # the lecturer link, on another device
    assert owner.session_state["_room"]["role"] == "lecturer" and "key" not in owner.query_params  # off the address


def test_bad_room_links_and_the_rooms_end_are_said(sqlite_store):
    bad = fresh({"room": "ABC", "lang": "zh"})
    assert any("房间码由 8 个字母和数字组成" in e.value for e in bad.error) and bad.get("plotly_chart")
    gone = fresh({"room": "ABCD-2345"})
    assert any("This room has ended or does not exist" in e.value for e in gone.error)
    lec, code, key = lecturer_room()
    stu = fresh({"room": code})
    click(lec, "room_end")
    assert "_room" not in lec.session_state and current().view(code) is None
    rerun(stu)
    assert any("The room has ended" in i.value for i in stu.info)
    assert "_room" not in stu.session_state and stu.session_state["_deck"] is not None  # the deck stays open
    link = stu.session_state["_link_params"]["deck"]  # as a link again, without the questions it never had answers to
    assert decks.decode(link).slides[3].question is None and not any(e.value for e in stu.error)
