"""Assertions of the recorded spans against MetaGPT's own record: ``Environment.history`` and each role's memory."""

from __future__ import annotations

from collections import Counter
from typing import Any

from metagpt.utils.common import any_to_str

from mast_otel import semconv as sc
from tests.span_query import Spans, attr, parent_id, span_id


def roles_of(env: Any) -> list[Any]:
    return list(env.roles.values())


def assert_messages_match_history(got: Spans, env: Any) -> None:
    """One message span per publish, in order: ``env.history`` is exactly the spans' senders and contents.

    MetaGPT appends ``"\\n{message.role}: {message.content}"`` per published message; a role's messages carry its
    profile as ``role``, so the spans (which name the sender) are mapped name -> profile to rebuild the string.
    """
    profile = {r.name: r.profile for r in roles_of(env)}
    messages = got.messages
    rebuilt = "".join(f"\n{profile.get(attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_SENDER))}: "
                      f"{attr(m, sc.MESSAGE_CONTENT)}" for m in messages)  # fmt: skip
    assert rebuilt == env.history
    assert [attr(m, sc.MESSAGE_INDEX) for m in messages] == list(range(len(messages)))
    # The sender is the role's name, never MetaGPT's class path, and the role's memory holds the message it sent.
    by_name = {r.name: r for r in roles_of(env)}
    for m in messages:
        sender = attr(m, sc.MESSAGE_SENDER)
        assert "." not in sender
        role = by_name.get(sender)
        if role is None:
            continue  # the idea, published by Team.run as "Human"
        own = [x for x in role.rc.memory.get() if x.sent_from == any_to_str(role)]
        assert any(x.content == attr(m, sc.MESSAGE_CONTENT) and x.cause_by == attr(m, sc.MESSAGE_CAUSE) for x in own)


def expected_handoffs(env: Any) -> Counter[tuple[str, str]]:
    """(sender, receiver) for every message a role took, per MetaGPT's memory and its undelivered buffer.

    A role took a message when it is in its memory (or still waiting in its buffer, or is the one it was working on
    when it failed), was not sent by itself, and
    passes ``_observe``'s filter: the role watches the message's ``cause_by`` or is named in its ``send_to``.
    Destroys the buffers: call once, at the end of a test.
    """
    roles = roles_of(env)
    by_class = {any_to_str(r): r.name for r in roles}
    expected: Counter[tuple[str, str]] = Counter()
    for role in roles:
        received = [m for m in role.rc.memory.get() if m.sent_from != any_to_str(role)]
        received += role.rc.msg_buffer.pop_all()
        if role.latest_observed_msg is not None and role.latest_observed_msg not in received:
            # A role whose run failed: MetaGPT deletes the message it took from memory (to retake it on resume)
            # and keeps it here.
            received.append(role.latest_observed_msg)
        for m in received:
            if m.cause_by in role.rc.watch or role.name in m.send_to:
                expected[(by_class.get(m.sent_from, m.role), role.name)] += 1
    return expected


def assert_handoffs_match_routing(got: Spans, env: Any) -> None:
    recorded = Counter((attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in got.handoffs)
    assert recorded == expected_handoffs(env)
    assert {attr(h, sc.HANDOFF_REASON) for h in got.handoffs} <= {sc.HANDOFF_ROUTING}


def assert_parenting(got: Spans, env: Any) -> None:
    """Turns are children of the root; each message (and its handoffs) is a child of the turn that produced it."""
    root = got.root
    role_names = {r.name for r in roles_of(env)}
    assert {s.get_span_context().trace_id for s in got.all} == {root.get_span_context().trace_id}
    for turn in got.turns:
        assert parent_id(turn) == span_id(root)
    for m in got.messages:
        sender = attr(m, sc.MESSAGE_SENDER)
        parent = got.by_id(parent_id(m))
        assert parent is not None
        if sender not in role_names:
            assert parent is root
            continue
        assert attr(parent, sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_AGENT_TURN
        assert attr(parent, sc.GEN_AI_AGENT_NAME) == sender
        assert attr(parent, sc.TURN_ACTION) == str(attr(m, sc.MESSAGE_CAUSE)).rsplit(".", 1)[-1]
        assert parent.start_time <= m.start_time <= parent.end_time
    for h in got.handoffs:
        parent = got.by_id(parent_id(h))
        assert parent is not None
        if parent is not root:
            assert attr(parent, sc.GEN_AI_AGENT_NAME) == attr(h, sc.HANDOFF_FROM)


def assert_matches_metagpt(got: Spans, env: Any) -> None:
    assert_messages_match_history(got, env)
    assert_parenting(got, env)
    assert_handoffs_match_routing(got, env)
