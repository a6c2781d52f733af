"""An AG2 Classic GroupChat (planner, coder, critic; round robin) traced by one line: ``mast_otel.instrument()``.

Run it offline (scripted replies, the default) or against any OpenAI-compatible server::

    python examples/ag2_group_chat.py --console                      # print the spans here
    python examples/ag2_group_chat.py                                 # OTLP to localhost:4317 (mast-otel collector)
    python examples/ag2_group_chat.py --base-url http://127.0.0.1:8011/v1 --model gemma3-270m

The scripted run fails the way MAST says multi-agent runs fail, and every failure is visible in the spans:

- **1.3 step repetition**: the coder re-sends the same code word for word after the critic's objection (two
  ``message coder -> chat_manager`` spans with identical ``mast.message.content``); the planner repeats its plan.
- **2.5 ignored input**: the critic's objection (``primes[n]`` is off by one) changes nothing.
- **1.5 / 3.1**: nobody ever says TERMINATE or gives a checked answer; the run stops only because ``max_round``
  is reached: the root says ``mast.termination.reason = max_rounds`` with ``mast.conversation.rounds`` equal to
  ``mast.conversation.max_rounds``.

Import it to reuse the run (the tests do): ``from examples.ag2_group_chat import run``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from autogen import ConversableAgent, GroupChat, GroupChatManager

try:
    from examples._cli import console_tracing, flush, parse_args
    from examples._scripted import is_terminate, llm_config, make_agent
except ImportError:  # run as a script (python examples/ag2_group_chat.py): examples/ itself is on sys.path
    from _cli import console_tracing, flush, parse_args  # type: ignore[no-redef]
    from _scripted import is_terminate, llm_config, make_agent  # type: ignore[no-redef]

import mast_otel

TASK = "Write a Python function nth_prime(n) and use it to report the 10th prime number."
MAX_ROUND = 8

CODE = """```python
def nth_prime(n):
    primes, k = [], 2
    while len(primes) < n:
        if all(k % p for p in primes):
            primes.append(k)
        k += 1
    return primes[n]
```
nth_prime(10) gives the 10th prime."""

# Cycled per agent. Round robin over user, planner, coder, critic with max_round=8 gives
# user, planner, coder, critic, planner, coder, critic, planner: then the round limit, with no answer.
REPLIES: dict[str, list[str]] = {
    "planner": [
        "Plan: (1) the coder writes nth_prime(n); (2) the critic checks that nth_prime(10) == 29; "
        "(3) we stop once the answer is verified.",
        "Coder, please fix the bound the critic pointed out and show the output for n=10.",
    ],
    "coder": [CODE],  # the same code every time, whatever the critic says
    "critic": ["primes[n] is off by one: nth_prime(10) returns the 11th prime. Fix it and show the output for n=10."],
}
SYSTEM_MESSAGES = {
    "planner": "You are the planner. Split the task into steps and keep the team on track.",
    "coder": "You are the coder. Write Python code for the current step.",
    "critic": "You are the critic. Check the coder's work; reply TERMINATE when the answer is verified.",
}


def build(
    base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> tuple[ConversableAgent, GroupChatManager, GroupChat]:
    """The agents and the group: (user proxy, manager, groupchat)."""
    user = ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="")
    members = [
        make_agent(
            name,
            llm_config(name, replies, base_url=base_url, model=model, api_key=api_key),
            system_message=SYSTEM_MESSAGES[name],
            is_termination_msg=is_terminate,
        )
        for name, replies in REPLIES.items()
    ]
    # The user only states the task: it is not a member, so the three members take turns.
    groupchat = GroupChat(agents=members, messages=[], max_round=MAX_ROUND, speaker_selection_method="round_robin")
    manager = GroupChatManager(groupchat, llm_config=False, is_termination_msg=is_terminate)
    return user, manager, groupchat


def run(
    base_url: str | None = None, model: str | None = None, api_key: str | None = None, *, silent: bool = False
) -> Any:
    """Run the group chat (offline unless ``base_url``); returns AG2's ChatResult."""
    user, manager, _ = build(base_url, model, api_key)
    return user.initiate_chat(manager, message=TASK, silent=silent)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    if args.console:
        console_tracing()
    mast_otel.instrument()  # the one line: every AG2 agent, message, handoff and termination becomes a span
    user, manager, groupchat = build(args.base_url, args.model, args.api_key)
    user.initiate_chat(manager, message=TASK, silent=args.console)
    flush()
    print(f"{len(groupchat.messages)} messages in the group chat (max_round={MAX_ROUND})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
