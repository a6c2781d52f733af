"""Real MetaGPT 0.8 teams with a scripted provider: shared by the tests and the benchmark.

Import only after MetaGPT's config exists (``tests.metagpt.offline_config.configure_metagpt``): MetaGPT reads it
at import time.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from metagpt.actions import Action, UserRequirement
from metagpt.config2 import Config
from metagpt.configs.llm_config import LLMConfig, LLMType
from metagpt.const import USE_CONFIG_TIMEOUT
from metagpt.context import Context
from metagpt.provider.base_llm import BaseLLM
from metagpt.provider.llm_provider_registry import LLM_REGISTRY, register_provider
from metagpt.roles import Role
from metagpt.team import Team

# The registry key the scripted provider takes over while registered. LLMType is a closed Enum, so a test provider
# borrows a member; METAGPT (MetaGPT's hosted service) is never used offline and is charged through the context's
# CostManager, which the budget test needs.
SCRIPTED_TYPE = LLMType.METAGPT
PRICED_MODEL = "gpt-4"  # in MetaGPT's TOKEN_COSTS: $0.03 / $0.06 per 1k prompt / completion tokens
_NAMED = re.compile(r"named (.+?), your goal")


@dataclass
class Script:
    """What the scripted provider answers. Replies are per asking role (found in MetaGPT's role prefix)."""

    replies: dict[str, list[str]] = field(default_factory=dict)  # role name -> replies, cycled
    delay: float = 0.0  # seconds per call, so that roles of one round interleave
    fail_for: str | None = None  # the role whose call raises
    usage: tuple[int, int] = (0, 0)  # prompt / completion tokens reported per call (for the budget)
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def reply(self, role: str) -> str:
        n = self.calls[role]
        self.calls[role] += 1
        options = self.replies.get(role)
        return options[n % len(options)] if options else f"{role} output {n + 1}"


class ScriptFailure(RuntimeError):
    pass


class ScriptedLLM(BaseLLM):
    """A MetaGPT provider (``BaseLLM``) that answers from ``ScriptedLLM.script``, with no network."""

    script: ClassVar[Script] = Script()

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.model = config.model
        self.pricing_plan = config.model

    async def _answer(self, messages: list[dict[str, Any]]) -> str:
        system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
        found = _NAMED.search(system)
        role = found.group(1) if found else "unknown"
        script = ScriptedLLM.script
        if script.delay:
            await asyncio.sleep(script.delay)
        if script.fail_for == role:
            raise ScriptFailure(f"scripted failure for {role}")
        prompt_tokens, completion_tokens = script.usage
        if prompt_tokens or completion_tokens:
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            self._update_costs(usage, model=self.model)
        return script.reply(role)

    async def _achat_completion(self, messages: list[dict[str, Any]], timeout: int = USE_CONFIG_TIMEOUT) -> Any:
        return {"choices": [{"message": {"role": "assistant", "content": await self._answer(messages)}}]}

    async def acompletion(self, messages: list[dict[str, Any]], timeout: int = USE_CONFIG_TIMEOUT) -> Any:
        return await self._achat_completion(messages, timeout)

    async def _achat_completion_stream(self, messages: list[dict[str, Any]], timeout: int = USE_CONFIG_TIMEOUT) -> str:
        return await self._answer(messages)


@contextmanager
def scripted_provider(script: Script | None = None) -> Iterator[Script]:
    """Register ``ScriptedLLM`` in MetaGPT's provider registry for the block; restore the previous provider after."""
    previous = LLM_REGISTRY.providers.get(SCRIPTED_TYPE)
    register_provider(SCRIPTED_TYPE)(ScriptedLLM)
    ScriptedLLM.script = script or Script()
    try:
        yield ScriptedLLM.script
    finally:
        if previous is not None:
            LLM_REGISTRY.register(SCRIPTED_TYPE, previous)
        ScriptedLLM.script = Script()


def scripted_context(model: str = PRICED_MODEL) -> Context:
    llm = {"api_type": SCRIPTED_TYPE.value, "model": model, "api_key": "scripted", "stream": False}
    return Context(config=Config.from_llm_config(llm))


def server_context(base_url: str, model: str, max_token: int = 48) -> Context:
    """A context whose LLM is a real OpenAI-compatible server (the llama.cpp tier)."""
    llm = {
        "api_type": "openai",
        "base_url": base_url,
        "model": model,
        "api_key": "local",
        "max_token": max_token,
        "timeout": 300,
        "stream": False,
        "calc_usage": False,
    }
    return Context(config=Config.from_llm_config(llm))


# -- a small software team ------------------------------------------------------------------
class WriteCode(Action):
    name: str = "WriteCode"

    async def run(self, history: list[Any]) -> str:
        return await self._aask(f"Write a short Python function for this request:\n{history[-1].content}\nCode:")


class WriteTest(Action):
    name: str = "WriteTest"

    async def run(self, history: list[Any]) -> str:
        return await self._aask(f"Write one pytest test for this code:\n{history[-1].content}\nTest:")


class ReviewCode(Action):
    name: str = "ReviewCode"

    async def run(self, history: list[Any]) -> str:
        return await self._aask(f"Review this code and test in one sentence:\n{history[-1].content}\nReview:")


class Summarize(Action):
    name: str = "Summarize"

    async def run(self, history: list[Any]) -> str:
        return await self._aask("Summarize the review in one line.\nSummary:")


class Coder(Role):
    name: str = "Alice"
    profile: str = "Coder"
    goal: str = "write the code"


class Tester(Role):
    name: str = "Bob"
    profile: str = "Tester"
    goal: str = "write the tests"


class Reviewer(Role):
    name: str = "Carol"
    profile: str = "Reviewer"
    goal: str = "review code and tests"


def software_team(
    context: Context,
    *,
    cycle: bool = False,
    parallel: bool = False,
    two_step_review: bool = False,
) -> Team:
    """Coder (watches the idea) -> Tester (watches WriteCode) -> Reviewer (watches WriteTest).

    ``cycle``: the Coder also watches ReviewCode, so the team never goes idle. ``parallel``: the Tester watches
    the idea too, so Coder and Tester act in the same round. ``two_step_review``: the Reviewer runs ReviewCode
    then Summarize in one reaction (``by_order``), and only the summary is published.
    """
    coder = Coder(watch=[UserRequirement, *([ReviewCode] if cycle else [])], context=context)
    coder.set_actions([WriteCode])
    tester = Tester(watch=[WriteCode, *([UserRequirement] if parallel else [])], context=context)
    tester.set_actions([WriteTest])
    reviewer = Reviewer(watch=[WriteTest], context=context)
    reviewer.set_actions([ReviewCode, Summarize] if two_step_review else [ReviewCode])
    if two_step_review:
        reviewer._set_react_mode(react_mode="by_order")
    team = Team(context=context)
    team.hire([coder, tester, reviewer])
    return team


IDEA = "Write a function that adds two numbers."
