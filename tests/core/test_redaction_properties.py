"""What a user relies on from the redactor, as properties: the length cap keeps exactly ``max_length`` characters
(head, tail and an exact count of what was cut), the flags say what happened, a user pattern's ``v`` group is the
only part replaced, and the callback sees the text it is to clean."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mast_otel.redaction import REDACTED, Redactor, cut_middle

_MARKER = re.compile(r" \[\.\.\. (\d+) chars cut \.\.\.\] ")


@given(st.text(min_size=31, max_size=300), st.data())
def test_the_cap_keeps_head_and_tail_and_counts_the_cut(text: str, data: st.DataObject) -> None:
    limit = data.draw(st.integers(min_value=30, max_value=len(text) - 1))
    cut = cut_middle(text, limit)
    assert len(cut) == limit
    marker = _MARKER.search(cut)
    assert marker is not None and int(marker.group(1)) == len(text) - limit
    head, tail = cut[: marker.start()], cut[marker.end() :]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) - len(tail) in (0, 1)  # the head gets the odd character


@given(st.text(max_size=200), st.integers(min_value=0, max_value=50))
def test_text_within_the_cap_is_kept_whole(text: str, spare: int) -> None:
    assert cut_middle(text, len(text) + spare) == text


def test_a_cap_smaller_than_its_marker_keeps_only_the_marker() -> None:
    cut = cut_middle("x" * 50, 5)
    assert _MARKER.fullmatch(cut) and "x" not in cut


@given(st.text(alphabet="abc ", min_size=0, max_size=60), st.integers(min_value=1, max_value=80))
def test_truncated_is_reported_exactly_when_the_text_was_longer_than_the_cap(text: str, cap: int) -> None:
    out, redacted, truncated = Redactor(max_length=cap, builtin=False).redact(text)
    assert truncated == (len(text) > cap)
    assert out == (cut_middle(text, cap) if truncated else text)
    assert redacted is False


@pytest.mark.parametrize("cap", [0, -1])
def test_a_cap_of_zero_or_less_keeps_everything(cap: int) -> None:
    assert Redactor(max_length=cap).redact("y" * 10_000) == ("y" * 10_000, False, False)


def test_a_user_patterns_v_group_alone_is_replaced_and_the_rest_of_the_match_kept() -> None:
    redactor = Redactor(patterns=[r"pin=(?P<v>\d+);x"], builtin=False)
    assert redactor.redact("my pin=1234;x then more") == (f"my pin={REDACTED};x then more", True, False)


def test_the_callback_cleans_the_text_after_the_patterns_and_its_change_counts_as_a_redaction() -> None:
    seen: list[str] = []

    def callback(text: str) -> str:
        seen.append(text)
        return text.replace("Alice", "[NAME]")

    redactor = Redactor(callback=callback)
    assert redactor.redact("Alice used sk-proj-abcdefghijklmnopqrstuv") == (f"[NAME] used {REDACTED}", True, False)
    assert seen == [f"Alice used {REDACTED}"]  # the built-in patterns ran first
    assert redactor.redact("nothing to hide") == ("nothing to hide", False, False)


def test_the_cap_applies_to_what_the_redaction_left() -> None:
    text, redacted, truncated = Redactor(max_length=40).redact("api_key=" + "s" * 60 + " " + "z" * 20)
    assert (redacted, truncated) == (True, False)  # the secret shrank to [REDACTED]: short enough now
    assert text == f"api_key={REDACTED} " + "z" * 20


def test_a_pattern_that_is_not_a_string_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="invalid redaction pattern 42: not a string"):
        Redactor(patterns=[42])  # type: ignore[list-item]
