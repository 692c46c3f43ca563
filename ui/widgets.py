"""URL-bound controls: sliders, toggles, choices, text, the KV-heads control, the controls box, slides."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import streamlit as st

from attn_core.figures import kv as figures_kv
from attn_core.runtime.config import divisors, kv_heads_keeping_group, nearest_divisor

from .core import (
    BIND,
    NOTICES,
    Notice,
    _notice_if_replaced,
    _parse_number,
    _remember,
    _url_raw,
    _write_url,
    present,
    seed,
    t,
)
from .streamlit_compat import page_script_hash


def int_slider(
    key: str,
    lo: int,
    hi: int,
    default: int,
    *,
    container: Any = None,
    step: int = 1,
    help_key: str | None = None,
) -> int:
    """An integer slider bound to the URL parameter ``key``; bad URL values give a notice.

    A value kept from an earlier run that falls outside ``[lo, hi]`` (the range
    shrank, or another page uses the same key with a wider range) is clamped into
    it, as a slider whose range shrinks would do, instead of raising. A range of
    one value (``hi <= lo``, e.g. the head of a one-head layer) draws no slider,
    which Streamlit refuses for min = max: the value is stated instead.
    """
    box = container or st
    raw = _url_raw(key)
    if hi <= lo:
        return _only_value(key, lo, default, raw, box)
    current = st.session_state.get(key)
    if isinstance(current, (int, float)) and not isinstance(current, bool) and not lo <= current <= hi:
        st.session_state[key] = int(min(max(current, lo), hi))
    value = box.slider(
        t(f"ctl.{key}"),
        lo,
        hi,
        default,
        step=step,
        key=key,
        bind=BIND,
        help=t(help_key) if help_key else None,
    )
    num = _parse_number(raw)
    ok = num is not None and num == int(num) and lo <= num <= hi and (int(num) - lo) % step == 0
    _notice_if_replaced(key, raw, value, ok, t("ui.expect_int", lo=lo, hi=hi))
    _remember(key, int(value), default)
    return int(value)


def _only_value(key: str, value: Any, default: Any, raw: str | None, box: Any) -> Any:
    """A control with a single possible ``value``: say it instead of drawing a slider that cannot move.

    A URL value other than it gets the usual notice and leaves the address.
    """
    box.markdown(t("ui.only_value", label=t(f"ctl.{key}"), value=value))
    if raw is not None:
        num = _parse_number(raw)
        _notice_if_replaced(key, raw, value, num is not None and num == value, str(value))
        try:
            if key in st.query_params:
                del st.query_params[key]
        except Exception:  # noqa: BLE001 - URL sync is best effort; the page must still render
            pass
    _remember(key, value, default)
    return value


def float_slider(
    key: str, lo: float, hi: float, default: float, step: float, *, container: Any = None, help_key: str | None = None
) -> float:
    """A float slider bound to the URL parameter ``key``."""
    box = container or st
    raw = _url_raw(key)
    value = box.slider(
        t(f"ctl.{key}"), lo, hi, default, step=step, key=key, bind=BIND, help=t(help_key) if help_key else None
    )
    num = _parse_number(raw)
    _notice_if_replaced(key, raw, value, num is not None and lo <= num <= hi, t("ui.expect_range", lo=lo, hi=hi))
    _remember(key, float(value), float(default))
    return float(value)


def toggle(key: str, default: bool, *, container: Any = None, help_key: str | None = None) -> bool:
    """A toggle bound to the URL parameter ``key``."""
    box = container or st
    raw = _url_raw(key)
    value = box.toggle(t(f"ctl.{key}"), value=default, key=key, bind=BIND, help=t(help_key) if help_key else None)
    ok = raw is None or raw.lower() in ("true", "false")
    _notice_if_replaced(key, raw, value, ok, "true / false")
    _remember(key, bool(value), default)
    return bool(value)


def choice(
    key: str,
    options: Sequence[str],
    default: str,
    *,
    container: Any = None,
    widget: str = "segmented",
    help_key: str | None = None,
    data_default: bool = False,
) -> str:
    """A single choice among ``options`` (codes, shown translated as ``opt.<key>.<code>``).

    The URL carries the language-neutral code (``?mask=causal``), so a link works
    in either language and switching language keeps the choice. Streamlit's own
    binding would put the translated label in the URL, so this widget syncs the
    parameter itself: seeded from the URL on the session's first run, written
    back after every change, with a notice for an unknown value.

    ``data_default``: ``default`` depends on the data (e.g. the sequence length),
    so it applies on every run until the learner picks a value or a URL gives
    one; that choice is then kept (even while the control is hidden) and the
    default no longer moves it.
    """
    box = container or st
    raw = _url_raw(key)
    pin = f"_{key}_pinned"

    def fmt(code: str) -> str:
        return t(f"opt.{key}.{code}")

    if key not in st.session_state and raw is not None:
        if raw in options:
            st.session_state[key] = raw
            if data_default and pin not in st.session_state:
                st.session_state[pin] = raw  # a link's value is an explicit choice
        else:
            st.warning(t("ui.url_replaced", key=key, raw=raw[:40], expect=" / ".join(options), value=default), icon="⚠️")
    if data_default:
        pinned = st.session_state.get(pin)
        # unpinned: follow the data's default; pinned: keep the choice, also after the widget was hidden
        st.session_state[key] = pinned if pinned in options else default
    if st.session_state.get(key) not in options:
        st.session_state[key] = default
    label = t(f"ctl.{key}")
    extra: dict[str, Any] = {"help": t(help_key) if help_key else None}
    if data_default:
        extra.update(on_change=_pin_choice, args=(key,))
    if widget == "radio":
        value = box.radio(label, options, format_func=fmt, key=key, horizontal=True, **extra)
    elif widget == "select":
        value = box.selectbox(label, options, format_func=fmt, key=key, **extra)
    else:
        value = box.segmented_control(label, options, format_func=fmt, key=key, required=True, **extra)
    value = default if value is None else str(value)
    _write_url(key, value, default)
    _remember(key, value, default)
    return value


def _pin_choice(key: str) -> None:
    """The learner picked a value of a control with a data-dependent default: keep it from now on."""
    st.session_state[f"_{key}_pinned"] = st.session_state.get(key)


def _cut_text(key: str, max_chars: int) -> None:
    """A text box's ``on_change``: a text longer than ``max_chars`` keeps its first ``max_chars`` characters, and the
    next run says so (:func:`text_area`)."""
    value = st.session_state.get(key) or ""
    if len(value) > max_chars:
        st.session_state[key] = value[:max_chars]
        st.session_state[f"_{key}_cut"] = len(value)


def text_area(key: str, default: str, max_chars: int, *, container: Any = None, height: int = 90) -> str:
    """A text box bound to the URL parameter ``key`` that keeps at most ``max_chars`` characters and says when it cut
    a text. The browser's own limit (Streamlit's ``max_chars``) is not used: it refuses a longer paste silently and
    counts an emoji as two characters. A text left at its default follows the default when it changes (a page's
    example sentence, in the language just chosen)."""
    box = container or st
    raw = _url_raw(key)
    shown = f"_{key}_default"  # the default the box was drawn with: a text left at it follows a new default
    if st.session_state.get(shown, default) != default and st.session_state.get(key) == st.session_state[shown]:
        st.session_state[key] = default  # the example sentence in the language just chosen; a typed text stays
    st.session_state[shown] = default
    if raw is not None and len(raw) > max_chars and key not in st.session_state:
        st.session_state[key] = raw[:max_chars]
        st.warning(t("ui.text_cut", key=key, n=f"{len(raw):,}", limit=f"{max_chars:,}"), icon="✂️")
    value = box.text_area(
        t(f"ctl.{key}"), value=default, key=key, bind=BIND, height=height, on_change=_cut_text, args=(key, max_chars)
    )
    if (n := st.session_state.pop(f"_{key}_cut", None)) is not None:
        st.warning(t("ui.text_pasted_cut", n=f"{n:,}", limit=f"{max_chars:,}"), icon="✂️")
    _remember(key, value, default)
    return value


def _kv_from_url(raw: str, n_heads: int, options: list[int], fallback: int, key: str) -> tuple[int, Notice | None]:
    """The KV heads a URL value asks for, and the notice when it was not one of ``options``."""
    valid = ", ".join(map(str, options))
    num = _parse_number(raw.split(" ")[0])  # ?n_kv_heads=2 as well as the widget's own "2 · GQA" form
    if num is None or num != int(num) or num < 1:
        return fallback, ("warning", t("ui.url_replaced", key=key, raw=raw[:40], expect=valid, value=fallback), "⚠️")
    if int(num) not in options:
        return _kv_snap(num, n_heads, options)
    return int(num), None


def _kv_snap(wanted: float, n_heads: int, options: list[int]) -> tuple[int, Notice]:
    """A value that does not divide ``n_heads``: the nearest divisor, with a notice saying so."""
    got = nearest_divisor(n_heads, wanted)
    shown = int(wanted) if float(wanted).is_integer() else wanted
    text = t("ui.kv_snapped", want=shown, n_heads=n_heads, got=got, valid=", ".join(map(str, options)))
    return got, ("info", text, "↔️")


def _kv_follow(n_heads: int, old: int, choice: tuple[int, int]) -> tuple[int, Notice | None]:
    """n_heads changed: the KV heads that keep the learner's ``choice`` (see ``kv_heads_keeping_group``)."""
    h0, kv0 = choice
    new = kv_heads_keeping_group(n_heads, h0, kv0)
    if new == old:
        return new, None
    g0, g = h0 // kv0, n_heads // new
    if g == g0:
        text = t("ui.kv_kept", h=n_heads, old=old, new=new, g=g)
    else:
        text = t("ui.kv_nearest", h=n_heads, old=old, new=new, g=g, g0=g0, h0=h0, kv0=kv0)
    return new, ("info", text, "↔️")


def _kv_wanted(n_heads: int, options: list[int], fallback: int, key: str) -> tuple[int | None, Notice | None]:
    """The value the KV-heads control must show this run (None: the widget's own), and a notice.

    The learner's choice ``(n_heads, n_kv_heads)`` is kept in ``_<key>_choice``: set
    when they move this control (or open a URL), not when n_heads moves it. A change of
    n_heads alone then applies :func:`kv_heads_keeping_group` to that choice.
    """
    state = st.session_state
    current, last = state.get(key), state.get(f"_{key}_last")
    choice = state.get(f"_{key}_choice")
    raw = _url_raw(key)
    value, notice = None, None
    if current is None:
        if raw is not None and last is None:  # the session's first run, from a link
            value, notice = _kv_from_url(raw, n_heads, options, fallback, key)
        elif choice is not None:  # the control was not on the previous page: the choice, applied to n_heads
            value = kv_heads_keeping_group(n_heads, *choice)
        choice = (n_heads, fallback if value is None else value) if choice is None else choice
    elif last is not None and last[0] != n_heads:
        # n_heads changed. Whatever the KV control sent is not the learner's: a browser sends one change per
        # rerun, and after a rerun cut short by the next key press its value can be stale or mapped through
        # the previous options (seen with two quick presses on n_heads: 10 -> 8 arrived with n_kv_heads 1).
        value, notice = _kv_follow(n_heads, last[1], choice or last)
    elif last is None or current != last[1]:  # the learner moved this control (or a test set it)
        value, notice = (current, None) if current in options else _kv_snap(current, n_heads, options)
        choice = (n_heads, value)
    elif current not in options:
        value, notice = _kv_snap(current, n_heads, options)
        choice = (n_heads, value)
    state[f"_{key}_choice"] = choice
    return value, notice


def kv_label(n_heads: int, n_kv_heads: int) -> str:
    """An option of the KV-heads control: ``"2 · GQA"``, as the charts write it (:func:`attn_core.figures.kv.kv_label`)."""
    return figures_kv.kv_label(n_heads, n_kv_heads)


def kv_heads_select(n_heads: int, default: int, *, key: str = "n_kv_heads", container: Any = None) -> int:
    """Choose ``n_kv_heads`` among the divisors of ``n_heads`` (1 = MQA, n_heads = MHA).

    A URL value (or a value set in session state) that does not divide ``n_heads`` snaps to
    the nearest divisor, with a visible notice. When only ``n_heads`` changes, the learner's
    last own choice is kept as :func:`attn_core.runtime.config.kv_heads_keeping_group` says (its group
    size, else the nearest on the side of more KV heads; MQA stays MQA), again with a notice, and
    it comes back whenever it is valid again. Notices go below the page's controls
    (:func:`controls_box`), or below this control outside one, so the controls never move.
    """
    box = container or st
    options = divisors(n_heads)
    fallback = default if default in options else nearest_divisor(n_heads, default)
    value, notice = _kv_wanted(n_heads, options, fallback, key)
    if len(options) == 1:  # one query head: one KV head, said instead of a slider that cannot move
        st.session_state[f"_{key}_last"] = (n_heads, 1)
        st.session_state[f"_{key}_page"] = page_script_hash()
        box.markdown(t("ui.only_value", label=t("ctl.n_kv_heads"), value=kv_label(1, 1)))
        if notice is not None:
            _control_notice(notice, box)
        _write_url(key, "1", "1")  # implied by one query head: the address leaves it out
        _remember(key, 1, fallback)
        return 1
    current = st.session_state.get(key)
    assigned = False  # whether this run sets the value through session state
    if value is not None and value != current:
        st.session_state[key] = value
        assigned = True
    elif current is not None and st.session_state.get(f"_{key}_page") != page_script_hash():
        # Widget ids include the page, so after a page switch the value under this key belongs to the
        # previous page's widget; re-assigning it makes this page's new widget start from it, not from 1.
        st.session_state[key] = current
        assigned = True
    st.session_state[f"_{key}_page"] = page_script_hash()

    def fmt(d: int) -> str:
        return kv_label(n_heads, d)

    # The default decides what the URL leaves out (a value equal to it); it may not be passed in a run that
    # set the value through session state, which Streamlit reports as a conflict.
    kwargs = {} if assigned else {"value": fallback}
    value = box.select_slider(
        t("ctl.n_kv_heads"), options=options, format_func=fmt, key=key, help=t("help.n_kv_heads"), **kwargs
    )
    # The URL carries the plain number (?n_kv_heads=2), written here: Streamlit's binding would write the
    # formatted "2 · GQA" and drop a plain number it cannot match, so links lost n_kv_heads.
    _write_url(key, str(int(value)), str(fallback))
    st.session_state[f"_{key}_last"] = (n_heads, int(value))
    if notice is not None:
        _control_notice(notice, box)
    _remember(key, int(value), fallback)
    return int(value)


def pow2_slider(key: str, lo: int, hi: int, default: int, *, container: Any = None, help_key: str | None = None) -> int:
    """A slider over the powers of two from ``lo`` to ``hi`` (log steps), bound to the URL parameter ``key``.

    A URL value (or an earlier choice) that is not one of them snaps to the
    nearest power of two on a log scale, or to ``default`` if it is not a
    positive number, with a visible notice saying so.
    """
    box = container or st
    options = [2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]
    raw = _url_raw(key)
    if len(options) == 1:
        return int(_only_value(key, options[0], default, raw, box))
    current = st.session_state.get(key)
    wanted: str | None = None
    if current is not None and current not in options:
        wanted = str(current)
    elif current is None and raw is not None and raw not in {str(o) for o in options}:
        wanted = raw
    if wanted is not None:
        num = _parse_number(wanted)
        shown = wanted if len(wanted) <= 40 else wanted[:37] + "..."
        if num is not None and num > 0:
            snapped = min(options, key=lambda o: (abs(math.log2(o) - math.log2(num)), o))
            st.info(t("ui.pow2_snapped", key=key, want=shown, lo=lo, hi=hi, got=snapped), icon="↔️")
        else:
            snapped = default
            st.warning(
                t("ui.url_replaced", key=key, raw=shown, expect=t("ui.expect_pow2", lo=lo, hi=hi), value=snapped),
                icon="⚠️",
            )
        st.session_state[key] = snapped
    kwargs = {} if key in st.session_state else {"value": default}
    value = box.select_slider(
        t(f"ctl.{key}"), options=options, key=key, bind=BIND, help=t(help_key) if help_key else None, **kwargs
    )
    _remember(key, int(value), default)
    return int(value)


def note_cut(text: str | None) -> None:
    """A notice when ``text`` has more tokens than a page takes (:data:`attn_core.attention.tokens.MAX_TEXT_TOKENS`)."""
    from attn_core.attention.tokens import MAX_TEXT_TOKENS, tokenize

    n = len(tokenize(text or ""))
    if n > MAX_TEXT_TOKENS:
        st.warning(t("heatmap.cut", n=n, limit=MAX_TEXT_TOKENS), icon="✂️")


def token_input(params: type, cut_note: bool = True, default_text: str | None = None) -> dict[str, Any]:
    """The input sequence of a page's ``Params``: ``source``, then ``text`` (its tokens) or ``seq_len`` synthetic ones.

    ``cut_note``: say when the text has more tokens than the page's tokenizer keeps (not for a pretrained
    model, which reads the whole text with its own tokenizer). ``default_text``: the text until one is typed or
    linked (default the field's own: a page's example in the viewer's language).
    """
    # a link that sets the length of synthetic tokens but no source means synthetic tokens (not the text's)
    synthetic = _url_raw("seq_len") is not None and _url_raw("source") is None
    values: dict[str, Any] = {"source": control(params, "source", **({"default": "synthetic"} if synthetic else {}))}
    if values["source"] == "text":
        values["text"] = control(params, "text", **({"default": default_text} if default_text else {}))
        if cut_note:
            note_cut(values["text"])
    else:
        values["seq_len"] = control(params, "seq_len")
    return values


DRAWER = "_controls_drawer"  # the controls box of the running script (replaced by every run's controls_box)


@contextlib.contextmanager
def controls_box() -> Iterator[Any]:
    """Where a page puts its controls (``with ui.controls_box():``): inline, or folded into a compact bar in
    presentation mode. Notices about the controls (:func:`_control_notice`) are drawn below the box when it
    closes, so that a notice never pushes a control down."""
    if present():  # slide mode places the keyed bar at the slide's top right (ui/assets/present.css)
        box = st.expander(t("ui.controls"), expanded=False, icon=":material/tune:", key="slide_controls")
    else:  # beside the charts on a wide screen (ui/assets/page.css)
        box = st.container(key="page_controls", border=True)
    st.session_state[DRAWER] = box  # this run's: a view's own options join it in slide mode (map_options)
    st.session_state[NOTICES] = []
    try:
        with box:
            yield box
    finally:
        notices = st.session_state.pop(NOTICES, [])
    for kind, text, icon in notices:
        getattr(st, kind)(text, icon=icon)


def drawer() -> Any:
    """Where a view's own controls go (``with ui.drawer(): ...``): with the page's other controls
    (:func:`controls_box`): in slide mode its folded bar, which keeps the slide for the chart; otherwise its box
    beside the charts on a wide screen (above them on a narrow one)."""
    box = st.session_state.get(DRAWER)
    return box if box is not None else contextlib.nullcontext()


def file_input(label: str, key: str, help: str, container: Any = None) -> Any:
    """``st.file_uploader`` in the page's language (the file, or None). Streamlit writes its button ("Upload")
    and its size note ("200MB per file", the server's limit, not the page's) in English: the note is left out (the
    label states the page's own limit) and the button says ``ui.upload``."""
    box = container if container is not None else st
    file = box.file_uploader(label, key=key, help=help)
    zone = f".st-key-{key} [data-testid='stFileUploaderDropzone']"
    word = '"' + t("ui.upload").replace("\\", "\\\\").replace('"', '\\"') + '"'  # a CSS string, as written
    box.html(
        f"<style>{zone} [data-testid='stFileUploaderDropzoneInstructions'], {zone} button p {{ display: none; }}"
        f" {zone} button [data-testid='stMarkdownContainer']::after {{ content: {word}; }}"
        "</style>"
    )
    return file


def title(key: str) -> None:
    """The page's title (``ui.title("heatmap.title")``, the first thing a page draws). In slide mode with a
    lecture deck open the deck's bar already holds the slide's own title as the slide's heading, so the page's
    is left out: one title a slide, and the room for the chart."""
    from . import decks as deck_ui

    if present() and deck_ui.is_open():
        return
    st.title(t(key))


def _control_notice(notice: Notice, box: Any) -> None:
    """Show a notice about a control: below the controls box when inside one, else in ``box`` (below the control)."""
    pending = st.session_state.get(NOTICES)
    if isinstance(pending, list):
        pending.append(notice)
    else:
        kind, text, icon = notice
        getattr(box, kind)(text, icon=icon)


def _shift_slide(key: str, step: int, n: int) -> None:
    st.session_state[key] = min(max(int(st.session_state.get(key, 0)) + step, 0), n - 1)


def slide_controls(key: str, n: int, label: Callable[[int], str] | None = None) -> int:
    """Previous / Next buttons over ``n`` slides; returns the index. The clicker keys (Page Down / Page Up, arrows,
    space: ``ui/assets/clicker.js``) press them, or a lecture deck's when one is open.

    The index lives in session state and in the URL (``?slide=3``), so a bookmark
    opens the lecture at the same step. ``label(index)``: what the slide shows, written over its progress bar
    (default "Step 2 of 8").
    """
    seen_on = st.session_state.get(f"_{key}_page")  # a deck's slide sets the index and clears this
    if key not in st.session_state or (seen_on is not None and seen_on != page_script_hash()):  # new, or another page's
        num = _parse_number(_url_raw(key))
        st.session_state[key] = int(num) - 1 if num is not None and 1 <= num <= n and num == int(num) else 0
    idx = min(max(int(st.session_state[key]), 0), n - 1)
    st.session_state[key], st.session_state[f"_{key}_page"] = idx, page_script_hash()
    with st.container(key=f"slide_nav_{key}"):  # the clicker keys press the lowest of these that can move
        left, mid, right = st.columns([1, 3, 1], vertical_alignment="center")
        left.button(
            t("ui.prev"),
            key=f"{key}__prev",
            icon=":material/arrow_back:",
            disabled=idx == 0,
            width="stretch",
            on_click=_shift_slide,
            args=(key, -1, n),
        )
        right.button(
            t("ui.next"),
            key=f"{key}__next",
            icon=":material/arrow_forward:",
            disabled=idx == n - 1,
            width="stretch",
            on_click=_shift_slide,
            args=(key, 1, n),
        )
        mid.progress((idx + 1) / n, text=label(idx) if label is not None else t("ui.slide", i=idx + 1, n=n))
        mid.caption(t("ui.slide_keys"))
    _write_url(key, str(idx + 1), "1")
    _remember(key, idx + 1, 1)
    return idx


class _Sections:
    """``shown(i)``: whether section ``i`` is drawn (:func:`slide_sections`); ``deck_titled``: a deck's slide picked
    the section, and its bar holds the slide's title (:func:`section_box` then writes no heading of its own)."""

    def __init__(self, at: int | None, deck_titled: bool = False) -> None:
        self.at, self.deck_titled = at, deck_titled

    def __call__(self, i: int) -> bool:
        return self.at is None or i == self.at


def slide_sections(n: int, key: str = "slide", *, deck_picks: bool = False) -> Callable[[int], bool]:
    """Which of a page's ``n`` sections to draw (``shown = ui.slide_sections(4)``; ``if shown(0): ...``): all of
    them normally; in presentation mode one a slide, with :func:`slide_controls` (drawn here) to move between them,
    so that each section fits the projector's screen.

    ``deck_picks``: on a lecture deck's slide that sets ``key`` the deck's own Previous and Next are the slide's
    navigator: no stepper is drawn (one navigator a slide; a page's own steps within the section keep theirs),
    and :func:`section_box` leaves out the section's heading (the deck's bar holds the slide's title)."""
    from . import decks as deck_ui

    if not present():
        return _Sections(None)
    if deck_picks and deck_ui.sets_step(key):
        return _Sections(min(max(int(st.session_state.get(key, 0)), 0), n - 1), deck_titled=True)
    return _Sections(slide_controls(key, n))


def section_box(
    shown: Callable[[int], bool], i: int, label: str, key: str, opened: bool = False, slide_heading: bool = True
) -> Any | None:
    """Where section ``i`` of a page of :func:`slide_sections` goes, titled ``label``: on a slide the page itself
    (on the section's own slide only); on the page a :func:`ui.output.lazy_expander` whose content is computed
    and sent only while it is open (AppTest gets every one open), open at first when ``opened`` (a link that
    sets one of the section's controls, :func:`ui.core.linked`) or when the address says ``<key>=true``; its open
    state is in the share link. None where the section is not drawn. ``slide_heading=False``: a slide leaves the
    heading out (a grid planned for the slide's whole height, whose stepper names what it shows)."""
    from .output import lazy_expander

    if present():
        if not shown(i):
            return None
        if slide_heading and not getattr(shown, "deck_titled", False):
            st.subheader(label)
        return st.container()
    # bold: a section, not one of the explanations' expanders; open or closed, it is part of the share link
    return lazy_expander(f"**{label}**", key, linked=True, open_first=opened)


def control(params: type, name: str, *, container: Any = None, **how: Any) -> Any:
    """The widget of field ``name`` of a page's ``Params`` (:class:`attn_core.views.base.Control`), its value.

    The field's control gives the kind, range or options, the default and the help; ``how``
    narrows them from the data where the control says ``data`` (``lo``, ``hi``, ``default``),
    and passes ``n_heads`` to a ``kv_heads`` control, ``widget`` (``segmented``, ``radio``,
    ``select``) and ``data_default`` to a choice, ``height`` to a text box.
    """
    from attn_core.views.base import controls, defaults

    ctl = controls(params)[name]
    default = how.get("default", defaults(params)[name])
    lo = how.get("lo", ctl.lo)
    hi = how.get("hi", ctl.hi)
    box = {"container": container}
    if ctl.kind == "int":
        step = int(ctl.step or 1)
        return int_slider(name, int(lo), int(hi), int(min(max(default, lo), hi)), step=step, help_key=ctl.help, **box)
    if ctl.kind == "float":
        return float_slider(name, float(lo), float(hi), float(default), float(ctl.step), help_key=ctl.help, **box)
    if ctl.kind == "pow2":
        return pow2_slider(name, int(lo), int(hi), int(default), help_key=ctl.help, **box)
    if ctl.kind == "choice":
        extra = {k: how[k] for k in ("widget", "data_default") if k in how}
        return choice(name, list(how.get("options", ctl.options)), default, help_key=ctl.help, **extra, **box)
    if ctl.kind == "bool":
        return toggle(name, bool(default), help_key=ctl.help, **box)
    if ctl.kind == "text":
        return text_area(name, str(default), int(hi), height=how.get("height", 90), **box)
    if ctl.kind == "kv_heads":
        return kv_heads_select(how["n_heads"], int(default), key=name, **box)
    return seed()


def map_options(p: Any, t_rows: int, t_cols: int, side: int, t_keys: int) -> Any:
    """A heat map's options under it, set on ``p`` (a page's Params with ``cscale`` and ``pool`` fields): the
    colour scale (following the data, :func:`attn_core.views.heatmaps.default_cscale` of ``t_keys`` keys, until
    set) and, only for a map of ``t_rows × t_cols`` pooled at ``side`` cells a side, block max or mean."""
    from attn_core.views.base import with_values
    from attn_core.views.heatmaps import default_cscale, is_pooled

    pooled = is_pooled(t_rows, t_cols, side)
    with drawer():  # slide mode: in the folded controls bar
        # two columns only when there are two controls: each block is one more message and one more element the
        # browser renders again at every run (the colour scale alone, a segmented control, is as wide either way)
        c1, c2 = st.columns(2, gap="medium") if pooled else (contextlib.nullcontext(), None)
        with c1:
            p = with_values(p, cscale=control(type(p), "cscale", default=default_cscale(t_keys), data_default=True))
        if c2 is not None:
            with c2:
                p = with_values(p, pool=control(type(p), "pool"))
    return p
