"""What a user relies on from the redactor, as properties: the length cap keeps exactly ``max_length`` characters
(head, tail and an exact count of what was cut), the flags say what happened, a user pattern's ``v`` group is the
only part replaced, and the callback sees the text it is to clean."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
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


# --- no matching secret gets through ------------------------------------------------------------------------------
#
# Each built-in shape is written here from what it documents (the credential's own format), not read from the
# module's regex: a secret of any length the shape allows, at any position in any text, with any letter case the
# shape allows (a keyword such as "Bearer" or "password" in any case; a vendor prefix such as "sk-" or "AKIA" as the
# vendor writes it), never appears in what the redactor returns. Around it: any text, cut from it by a character that
# delimits words (whitespace or punctuation), as a secret sits in a message.

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SEPARATOR = st.sampled_from([" ", "\n", "\t", ".", ",", ";", ":", "(", ")", "[", "]", "<", ">", "!", "?", '"', "'"])


def _body(alphabet: str, min_size: int, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=min_size, max_size=max_size if max_size is not None else min_size + 40)


def _any_case(word: str) -> st.SearchStrategy[str]:
    return st.tuples(*[st.sampled_from(sorted({c.lower(), c.upper()})) for c in word]).map("".join)


_SECRETS: dict[str, st.SearchStrategy[str]] = {
    # OpenAI / Anthropic / Stripe: sk-, an optional kind, then 16 or more of [A-Za-z0-9_-]
    "sk": st.tuples(st.sampled_from(["", "proj-", "ant-", "live-", "test-"]), _body(_ALNUM + "_-", 16)).map(
        lambda t: f"sk-{t[0]}{t[1]}"
    ),
    # AWS access key id: AKIA (long-term) or ASIA (temporary), then exactly 16 of [0-9A-Z]
    "aws": st.tuples(st.sampled_from(["AKIA", "ASIA"]), _body(_UPPER_DIGITS, 16, 16)).map("".join),
    # GitHub: ghp_, gho_, ghu_, ghs_, ghr_, then 30 or more letters and digits; fine-grained: github_pat_ and 40+
    "github": st.tuples(st.sampled_from("pousr"), _body(_ALNUM, 30)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    "github_pat": _body(_ALNUM + "_", 40).map(lambda b: f"github_pat_{b}"),
    # Google API key: AIza and 35 of [0-9A-Za-z_-] (39 characters in all); it may end in "-" or "_"
    "google": _body(_ALNUM + "_-", 35, 35).map(lambda b: f"AIza{b}"),
    # Slack: xoxa-, xoxb-, xoxp-, xoxo-, xoxs-, xoxr-, then 10 or more of [A-Za-z0-9-]
    "slack": st.tuples(st.sampled_from("abposr"), _body(_ALNUM + "-", 10)).map(lambda t: f"xox{t[0]}-{t[1]}"),
    # JWT: three base64url parts, the first two JSON objects (so "eyJ"), each 8+ characters after it
    "jwt": st.tuples(*[_body(_ALNUM + "_-", 8)] * 3).map(lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}"),
}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(_SECRETS)), data=st.data(), before=st.text(max_size=30),
       after=st.text(max_size=30), left=_SEPARATOR, right=_SEPARATOR, alone=st.booleans())  # fmt: skip
def test_a_built_in_secret_never_gets_through(
    kind: str, data: st.DataObject, before: str, after: str, left: str, right: str, alone: bool
) -> None:
    secret = data.draw(_SECRETS[kind], label="secret")
    assume(secret not in f"{before}{left}" and secret not in f"{right}{after}")  # no "[" or "]" in any secret:
    text = secret if alone else f"{before}{left}{secret}{right}{after}"  # an occurrence in `out` is a leak
    out, redacted, _ = Redactor(max_length=0).redact(text)
    assert secret not in out and redacted
    assert REDACTED in out


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(sorted(_SECRETS)), data=st.data(), left=_SEPARATOR, right=_SEPARATOR)
def test_every_built_in_shape_is_redacted_at_its_shortest_and_in_plain_surroundings(
    kind: str, data: st.DataObject, left: str, right: str
) -> None:
    """The shortest secret of each shape, in text with no other anchor: the redactor's quick pre-check must not
    skip it, and a length bound off by one shows here."""
    shortest = {"sk": 16, "aws": 16, "github": 30, "github_pat": 40, "google": 35, "slack": 10, "jwt": 8}[kind]
    secret = data.draw(_SECRETS[kind], label="secret")
    body = {"sk": _body(_ALNUM + "_-", shortest, shortest).map(lambda b: f"sk-{b}"),
            "github": _body(_ALNUM, shortest, shortest).map(lambda b: f"ghp_{b}"),
            "github_pat": _body(_ALNUM + "_", shortest, shortest).map(lambda b: f"github_pat_{b}"),
            "slack": _body(_ALNUM + "-", shortest, shortest).map(lambda b: f"xoxb-{b}"),
            "jwt": _body(_ALNUM, shortest, shortest).map(lambda b: f"eyJ{b}.eyJ{b}.{b}")}.get(kind)  # fmt: skip
    if body is not None:
        secret = data.draw(body, label="shortest")
    out, redacted, _ = Redactor().redact(f"here{left}{secret}{right}done")
    assert secret not in out and redacted, out


def _key_value() -> st.SearchStrategy[tuple[str, str, str]]:
    """(key as written, the text between key and value, value): a credential given by name, the name in any case
    with "_", "-" or nothing inside, quoted or not, after ":" or "=" with any spaces around."""
    names = st.sampled_from(["api{}key", "secret", "password", "passwd", "access{}token", "auth{}token"])
    key = st.tuples(names, st.sampled_from(["_", "-", ""])).map(lambda t: t[0].format(t[1])).flatmap(_any_case)
    quote = st.sampled_from(["", '"', "'"])
    spaces = st.text(alphabet=" \t", max_size=3)
    between = st.tuples(quote, spaces, st.sampled_from([":", "="]), spaces, quote).map("".join)
    value = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Z", "Cc"), blacklist_characters="\"',;[]"),
                    min_size=4, max_size=40)  # fmt: skip
    return st.tuples(key, between, value)


@settings(max_examples=150, deadline=None)
@given(kv=_key_value(), before=st.text(max_size=30), left=_SEPARATOR, right=st.sampled_from([" ", "\n", ",", ";"]),
       after=st.text(max_size=30))  # fmt: skip
def test_a_named_credential_never_gets_through_and_its_name_stays(
    kv: tuple[str, str, str], before: str, left: str, right: str, after: str
) -> None:
    key, between, value = kv
    assume(value not in f"{before}{left}{key}{between}{REDACTED}" and value not in f"{right}{after}")
    text = f"{before}{left}{key}{between}{value}{right}{after}"
    out, redacted, _ = Redactor(max_length=0).redact(text)
    assert value not in out, out
    assert redacted and f"{key}{between}" in out  # the key is kept: the judge still sees what was there


@settings(max_examples=100, deadline=None)
@given(keyword=_any_case("bearer"), spaces=st.text(alphabet=" \t", min_size=1, max_size=3),
       token=_body(_ALNUM + "._~+/-", 8), padding=st.text(alphabet="=", max_size=2), before=st.text(max_size=30),
       left=_SEPARATOR)  # fmt: skip
def test_a_bearer_token_never_gets_through_in_any_case(
    keyword: str, spaces: str, token: str, padding: str, before: str, left: str
) -> None:
    assume(token not in f"{before}{left}{keyword}")
    out, redacted, _ = Redactor().redact(f"{before}{left}{keyword}{spaces}{token}{padding} next")
    assert token not in out and redacted, out


@settings(max_examples=50, deadline=None)
@given(kind=st.sampled_from(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA ", ""]),
       body=st.text(alphabet=_ALNUM + "+/=\n", min_size=8, max_size=200), before=st.text(max_size=30))  # fmt: skip
def test_a_private_key_block_never_gets_through(kind: str, body: str, before: str) -> None:
    assume(len(body.strip()) >= 8 and body.strip() not in before)
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    out, redacted, _ = Redactor(max_length=0).redact(f"{before}\n{block}\ntail")
    assert body.strip() not in out and redacted and out.endswith("\ntail")


@given(st.text(min_size=4, max_size=30), st.data())
def test_a_user_pattern_redacts_every_match_wherever_it_is(word: str, data: st.DataObject) -> None:
    """A user's literal pattern: every occurrence, at any position, is replaced."""
    pieces = data.draw(st.lists(st.text(max_size=10), min_size=1, max_size=4))
    text = word.join(pieces)
    redactor = Redactor(patterns=[re.escape(word)], builtin=False, max_length=0)
    out, redacted, _ = redactor.redact(text)
    assert out == re.sub(re.escape(word), REDACTED, text)
    assert redacted == (word in text)


def test_the_defaults_are_the_documented_ones() -> None:
    """``Redactor()``: the built-in patterns on and a cap of 8192 characters (docs/instrumenting.md)."""
    assert Redactor().redact("x" * 8192) == ("x" * 8192, False, False)
    out, _, truncated = Redactor().redact("x" * 8193)
    assert truncated and len(out) == 8192
    assert Redactor().redact("sk-" + "a" * 20)[0] == REDACTED


@pytest.mark.parametrize("last", ["-", "_", "a", "7"])
@pytest.mark.parametrize("right", ["", " ", ".", "\n", '"'])
def test_a_google_key_is_redacted_whatever_its_last_character(last: str, right: str) -> None:
    """A Google key's 35 characters after AIza may end in "-", a non-word character: the key must still be found
    when a space, a full stop or the end of the text follows (no word boundary is there to match)."""
    key = "AIza" + "Q-_" * 11 + "x" + last
    out, redacted, _ = Redactor().redact(f"key {key}{right}")
    assert key not in out and redacted, out


# Every vendor prefix each shape names, at the shortest length it allows, and the longest where there is one.
_PREFIXES = [("sk-", 16, _ALNUM + "_-"), ("sk-proj-", 16, _ALNUM + "_-"), ("sk-ant-", 16, _ALNUM + "_-"),
             ("sk-live-", 16, _ALNUM + "_-"), ("sk-test-", 16, _ALNUM + "_-"), ("AKIA", 16, _UPPER_DIGITS),
             ("ASIA", 16, _UPPER_DIGITS), *[(f"gh{c}_", 30, _ALNUM) for c in "pousr"],
             ("github_pat_", 40, _ALNUM + "_"), ("AIza", 35, _ALNUM + "_-"),
             *[(f"xox{c}-", 10, _ALNUM + "-") for c in "abposr"]]  # fmt: skip


@pytest.mark.parametrize(("prefix", "shortest", "alphabet"), _PREFIXES, ids=[p for p, _, _ in _PREFIXES])
@given(data=st.data(), left=_SEPARATOR, right=_SEPARATOR)
@settings(max_examples=10, deadline=None)
def test_each_vendor_prefix_is_redacted_from_its_shortest_secret_on(
    prefix: str, shortest: int, alphabet: str, data: st.DataObject, left: str, right: str
) -> None:
    exact = prefix in ("AKIA", "ASIA", "AIza")  # a fixed length: 16 and 35
    size = shortest if exact else data.draw(st.sampled_from([shortest, shortest + 1, shortest + 30]))
    secret = prefix + data.draw(_body(alphabet, size, size))
    out, redacted, _ = Redactor().redact(f"plain words{left}{secret}{right}more words")
    assert secret not in out and redacted, out


def test_the_callback_runs_on_empty_text_too() -> None:
    """A callback that adds to or fails on any text, empty text included: what it returns is what is kept."""
    assert Redactor(callback=lambda t: t + "!").redact("") == ("!", True, False)

    def broken(_: str) -> str:
        raise RuntimeError

    assert Redactor(callback=broken).redact("") == (REDACTED, True, False)
