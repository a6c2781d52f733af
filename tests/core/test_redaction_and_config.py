from __future__ import annotations

import logging

import pytest

from mast_otel.config import CaptureConfig
from mast_otel.recorder import content_text
from mast_otel.redaction import REDACTED, Redactor, cut_middle


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-Abc123Def456Ghi789Jkl012",
        "sk-ant-api03-abcdefghijklmnopqrstuv",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "xoxb-123456789012-abcdefghij",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_builtin_patterns(secret: str) -> None:
    text, redacted, truncated = Redactor().redact(f"before {secret} after")
    assert secret not in text and REDACTED in text and redacted and not truncated
    assert text.startswith("before ") and text.endswith(" after")


def test_key_value_keeps_the_key() -> None:
    text, _, _ = Redactor().redact('config: password = "correct-horse" and api_key: abcd1234')
    assert "correct-horse" not in text and "abcd1234" not in text
    assert "password" in text and "api_key" in text


def test_bearer_token() -> None:
    text, _, _ = Redactor().redact("Authorization: Bearer abc.def-123_456")
    assert "abc.def-123_456" not in text


def test_plain_text_untouched() -> None:
    msg = "The secret to good code is tests. Tokens: 42."
    assert Redactor().redact(msg) == (msg, False, False)


def test_failing_callback_fails_closed() -> None:
    def broken(_: str) -> str:
        raise RuntimeError

    assert Redactor(callback=broken).redact("anything")[0] == REDACTED


def test_invalid_user_pattern_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="invalid redaction pattern"):
        Redactor(patterns=["(unclosed"])


def test_inline_global_flags_work_and_redact() -> None:
    """``(?i)...`` is legal on its own; joined into one alternation it used to crash at the first message."""
    config = CaptureConfig.from_env(environ={"MAST_OTEL_REDACT_PATTERNS": "(?i)internal-[a-z]+\n(x)\\1y"})
    assert config.redactor.redact("see INTERNAL-Alpha now") == ("see [REDACTED] now", True, False)
    # A numbered backreference refers to the user's own group, not to a built-in pattern's.
    assert config.redactor.redact("a xxy b")[0] == "a [REDACTED] b"
    assert config.redactor.redact("sk-proj-" + "a" * 24)[0] == "[REDACTED]"  # built-ins still apply


def test_bad_pattern_from_the_environment_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deployment's typo never raises out of ``instrument()``: content capture goes off, and text written whatever
    the switch (an exception's message) is withheld whole, so what the pattern meant to hide stays in."""
    monkeypatch.setenv("MAST_OTEL_REDACT_PATTERNS", "fine-[0-9]+\n(?i)ok\nbroken[")
    config = CaptureConfig.from_env(capture_content=True)
    assert config.capture_content is False
    assert config.redactor.redact("fine-42 and broken[ text")[0] == REDACTED
    assert config.redactor.redact("")[0] == REDACTED


def test_bad_pattern_given_in_code_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"invalid redaction pattern 'broken\['"):
        CaptureConfig.from_env(redact_patterns=["broken["], environ={})


def test_cut_middle() -> None:
    text = "a" * 50 + "b" * 50
    cut = cut_middle(text, 40)
    assert len(cut) <= 40 and cut.startswith("a") and cut.endswith("b")
    assert cut_middle("short", 40) == "short"


def test_env_parsing(caplog: pytest.LogCaptureFixture) -> None:
    env = {
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        "MAST_OTEL_MAX_CONTENT_LENGTH": "50",
        "MAST_OTEL_REDACT_PATTERNS": '["ACME-\\\\d+"]',
    }
    cfg = CaptureConfig.from_env(environ=env)
    assert cfg.capture_content is True
    assert cfg.redactor.max_length == 50
    assert cfg.redactor.redact("id ACME-42")[0] == f"id {REDACTED}"
    assert CaptureConfig.from_env(environ={}).capture_content is True
    from mast_otel._safety import reset_recording_failures

    reset_recording_failures()  # a bad value is logged once per process: forget earlier tests' values
    with caplog.at_level(logging.WARNING):
        assert (
            CaptureConfig.from_env(
                environ={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "maybe"}
            ).capture_content
            is False
        )
    assert "content capture is off" in caplog.text


def test_content_text_shapes() -> None:
    assert content_text(None) == ""
    assert content_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "a\nb"
    assert content_text({"k": 1}) == '{"k": 1}'


def test_prefilter_agrees_with_the_full_scan() -> None:
    """The anchor pre-check may skip the regex only where the regex would find nothing."""
    import random
    import string

    from mast_otel import redaction

    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + " _-.:=/'\"\n"
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200))) for _ in range(3000)]
    samples += [f"x {s} y" for s in ("sk-" + "a" * 20, "AKIA" + "B" * 16, "Bearer abcdefghij", "token: abcd")]
    fast = Redactor()
    regex = redaction._BUILTIN_REGEX
    assert regex is not None
    for text in samples:
        full = regex.sub(redaction._replace_builtin, text)
        assert fast.redact(text) == (full, full != text, False), text
    assert redaction._may_hold_secret("hello world") is False


def test_only_a_group_named_v_is_the_value_group() -> None:
    """A user pattern's group named ``v`` is the value (the rest of the match stays); any other name, even one
    starting with "v", is not: the whole match is replaced, so the secret cannot stay visible."""
    vendor = Redactor(patterns=[r"(?P<vendor>acme|globex)-key-[0-9a-f]{8}"])
    assert vendor.redact("use acme-key-deadbeef now") == ("use [REDACTED] now", True, False)
    valued = Redactor(patterns=[r"(?P<version>v\d+)/token=(?P<v>[0-9a-f]{8})"])
    assert valued.redact("v2/token=deadbeef")[0] == "v2/token=[REDACTED]"
    # The built-in key = value pattern keeps its key (its value group is renamed when the patterns are joined).
    assert Redactor().redact("password: hunter2-horse")[0] == "password: [REDACTED]"
