"""AG2's group API (``initiate_group_chat`` with a DefaultPattern and handoffs), traced by ``mast_otel.instrument()``.

Run it offline (scripted replies, the default) or against any OpenAI-compatible server::

    python examples/ag2_group_api.py --console                        # print the spans here
    python examples/ag2_group_api.py                                   # OTLP to localhost:4317 (mast-otel collector)
    python examples/ag2_group_api.py --base-url http://127.0.0.1:8011/v1 --model gemma3-270m

Every kind of handoff the group API has shows up as a ``handoff`` span with its ``mast.handoff.reason``:

=========================================  ==============================================================
handoff                                    why
=========================================  ==============================================================
``_User -> planner``                       ``initial_agent``: the pattern's first agent
``planner -> _Group_Tool_Executor``        ``tool_call``: the planner calls ``transfer_to_coder_1``, the
                                           tool AG2 makes from its ``OnCondition`` (an LLM condition)
``_Group_Tool_Executor -> coder``          ``llm_condition``: that tool's target
``coder -> _Group_Tool_Executor``          ``tool_call``: the coder calls ``submit_answer``
``_Group_Tool_Executor -> coder``          ``tool_return``: back to the agent that called the tool
``coder -> critic``                        ``context_condition``: ``submit_answer`` set ``answer_submitted``
                                           in the context variables; the coder's ``OnContextCondition``
                                           fires
``critic -> <terminate>``                  ``after_work``: the critic's after-work target is
                                           ``TerminateTarget``; the root says ``handoff_terminate``
=========================================  ==============================================================

With a real model the LLM decides whether to call the tools; when it does not, the after-work targets
(planner -> coder -> critic -> terminate) carry the run.

The scripted run shows MAST failure **3.2, no or incomplete verification**: the plan says the critic re-runs the
code before approving, but the critic approves the coder's unchecked answer (31; the 10th prime is 29, and the
code's ``primes[n]`` is off by one) without running anything, and the run ends there as a success.

Import it to reuse the run (the tests do): ``from examples.ag2_group_api import run``.
"""

# No ``from __future__ import annotations`` here: AG2 reads the tool's annotations at runtime, and must see
# ContextVariables itself (to inject it) rather than the string "ContextVariables".
import sys
from collections.abc import Sequence
from typing import Any

from autogen import ConversableAgent
from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnCondition,
    OnContextCondition,
    ReplyResult,
    StringLLMCondition,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern

try:
    from examples._cli import console_tracing, flush, parse_args
    from examples._scripted import llm_config, make_agent
except ImportError:  # run as a script (python examples/ag2_group_api.py): examples/ itself is on sys.path
    from _cli import console_tracing, flush, parse_args  # type: ignore[no-redef]
    from _scripted import llm_config, make_agent  # type: ignore[no-redef]

import mast_otel

TASK = "Write a Python function nth_prime(n) and use it to report the 10th prime number."
MAX_ROUNDS = 12

CODE = """```python
def nth_prime(n):
    primes, k = [], 2
    while len(primes) < n:
        if all(k % p for p in primes):
            primes.append(k)
        k += 1
    return primes[n]
```"""

REPLIES: dict[str, list[Any]] = {
    "planner": [
        {
            "content": "Plan: the coder implements nth_prime(n), runs it for n=10 and submits the result; the critic "
            "re-runs the code and approves only if the output checks out.",
            "tool_calls": [{"name": "transfer_to_coder_1"}],
        }
    ],
    "coder": [
        {
            "content": f"{CODE}\nThe 10th prime is 31.",  # never run: it is 29, and primes[n] is off by one
            "tool_calls": [{"name": "submit_answer", "arguments": {"answer": "31"}}],
        }
    ],
    "critic": ["The code reads cleanly and 31 sounds right. Approved."],  # approves without running anything
}
SYSTEM_MESSAGES = {
    "planner": "You are the planner. Split the task into steps, then hand over to the coder.",
    "coder": "You are the coder. Write and run Python code, then submit your answer with submit_answer.",
    "critic": "You are the critic. Re-run the coder's code and approve the answer only if the output checks out.",
}


def submit_answer(answer: str, context_variables: ContextVariables) -> ReplyResult:
    """Submit the final answer for review."""
    context_variables["answer"] = answer
    context_variables["answer_submitted"] = True
    return ReplyResult(message=f"Answer recorded: {answer}", context_variables=context_variables)


def build(
    base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> tuple[DefaultPattern, dict[str, ConversableAgent]]:
    """The pattern and its agents by name."""

    def agent(name: str, **kwargs: Any) -> ConversableAgent:
        config = llm_config(name, REPLIES[name], base_url=base_url, model=model, api_key=api_key)
        return make_agent(name, config, system_message=SYSTEM_MESSAGES[name], **kwargs)

    planner = agent("planner")
    coder = agent("coder", functions=[submit_answer])
    critic = agent("critic")

    planner.handoffs.add_llm_condition(
        OnCondition(
            target=AgentTarget(coder), condition=StringLLMCondition("Transfer to the coder once the plan is ready.")
        )
    )
    planner.handoffs.set_after_work(AgentTarget(coder))
    coder.handoffs.add_context_condition(
        OnContextCondition(
            target=AgentTarget(critic),
            condition=ExpressionContextCondition(ContextExpression("${answer_submitted}")),
        )
    )
    coder.handoffs.set_after_work(AgentTarget(critic))
    critic.handoffs.set_after_work(TerminateTarget())

    pattern = DefaultPattern(
        initial_agent=planner,
        agents=[planner, coder, critic],
        context_variables=ContextVariables(data={"answer_submitted": False}),
    )
    return pattern, {a.name: a for a in (planner, coder, critic)}


def run(base_url: str | None = None, model: str | None = None, api_key: str | None = None) -> Any:
    """Run the group chat (offline unless ``base_url``); returns AG2's ChatResult."""
    # Looked up at call time, not imported at the top: a name bound by ``from ... import`` before
    # mast_otel.instrument() ran would keep pointing at the uninstrumented function.
    from autogen.agentchat import initiate_group_chat

    pattern, _ = build(base_url, model, api_key)
    result, _context, _last = initiate_group_chat(pattern=pattern, messages=TASK, max_rounds=MAX_ROUNDS)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    if args.console:
        console_tracing()
    mast_otel.instrument()  # the one line: every AG2 agent, message, handoff and termination becomes a span
    result = run(args.base_url, args.model, args.api_key)
    flush()
    print(f"{len(result.chat_history)} messages; the last from {result.chat_history[-1].get('name')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
