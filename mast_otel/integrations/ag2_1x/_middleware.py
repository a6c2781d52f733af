"""Per-agent middleware: an agent turn per ``ask`` on a channel, and a tool call per tool the agent runs.

Inserted as the outermost middleware of every agent registered on a hub (``Agent.insert_middleware``, AG2's
public seam), so AG2's own ``TelemetryMiddleware`` and any user middleware run inside the turn. The turn finds its
channel in the ``ask`` dependencies the hub's notify handler stamps (``ag2.network.channel``); an ``ask`` outside
any channel records nothing. LLM calls are left to AG2's telemetry or the user's LLM instrumentation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ag2.events import ToolErrorEvent, ToolResultEvent
from ag2.middleware import BaseMiddleware
from opentelemetry import context as otel_context
from opentelemetry.context import Context

from mast_otel import semconv as sc
from mast_otel._safety import record_failure
from mast_otel.recorder import Recorder

from ._channels import ChannelRun, Channels
from ._render import tool_result_text

CHANNEL_DEP = "ag2.network.channel"  # ag2.network.policies.CHANNEL_DEP
DELEGATE_TOOL = "delegate"  # NetworkPlugin's consult-a-peer tool: a call into a child conversation


class Switch:
    """Whether the instrumentor is on: middleware already inserted into an agent outlives ``uninstrument``."""

    def __init__(self) -> None:
        self.on = True


class MastMiddlewareFactory:
    """What ``Agent.insert_middleware`` takes: called once per turn with the turn's first event and context."""

    def __init__(self, agent_name: str, recorder: Recorder, channels: Channels, switch: Switch) -> None:
        self.agent_name = agent_name
        self.recorder = recorder
        self.channels = channels
        self.switch = switch

    def __call__(self, event: Any, context: Any) -> MastMiddleware:
        return MastMiddleware(event, context, self)


class MastMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, event: Any, context: Any, factory: MastMiddlewareFactory) -> None:
        super().__init__(event, context)
        self._f = factory
        self._turn_context: Context | None = None

    def _run(self, context: Any) -> ChannelRun | None:
        if not self._f.switch.on:
            return None
        try:
            channel = context.dependencies.get(CHANNEL_DEP)
            return self._f.channels.get(getattr(channel, "channel_id", None))
        except Exception as exc:
            record_failure("ag2_1x.turn.begin", exc)
            return None

    async def on_turn(self, call_next: Callable[[Any, Any], Awaitable[Any]], event: Any, context: Any) -> Any:
        run = self._run(context)
        if run is None:
            return await call_next(event, context)
        f = self._f
        with run.recording():
            try:
                turn = f.recorder.start_agent_turn(f.agent_name)
            except Exception as exc:
                record_failure("ag2_1x.turn.begin", exc)
                turn = None
            if turn is None:
                return await call_next(event, context)
            # AG2 runs tools from stream subscriptions, outside this call's context: they attach the turn's.
            self._turn_context = otel_context.get_current()
            try:
                reply = await call_next(event, context)
            except BaseException as exc:
                self._finish("ag2_1x.turn.fail", turn.fail, exc)
                raise
            self._finish("ag2_1x.turn.finish", _end_turn, turn, reply)
            return reply

    async def on_tool_execution(self, call_next: Callable[[Any, Any], Awaitable[Any]], event: Any, context: Any) -> Any:
        f = self._f
        if not f.switch.on or self._turn_context is None:  # only inside a turn this middleware recorded
            return await call_next(event, context)
        token = otel_context.attach(self._turn_context)
        try:
            return await self._traced_tool(call_next, event, context)
        finally:
            otel_context.detach(token)

    async def _traced_tool(self, call_next: Callable[[Any, Any], Awaitable[Any]], event: Any, context: Any) -> Any:
        f = self._f
        try:
            if event.name == DELEGATE_TOOL:
                self._delegation(event)
            call = f.recorder.start_tool_call(event.name, arguments=event.arguments, call_id=event.id)
        except Exception as exc:
            record_failure("ag2_1x.tool.begin", exc)
            call = None
        if call is None:
            return await call_next(event, context)
        try:
            result = await call_next(event, context)
        except BaseException as exc:
            self._finish("ag2_1x.tool.fail", call.fail, exc)
            raise
        if isinstance(result, ToolErrorEvent):  # AG2 returns a tool's exception as a result, not raised
            self._finish("ag2_1x.tool.finish", lambda: call.set_result(str(result.error), success=False))
            self._finish("ag2_1x.tool.finish", call.fail, result.error)
        else:
            if isinstance(result, ToolResultEvent):
                self._finish("ag2_1x.tool.finish", lambda: call.set_result(tool_result_text(result.result)))
            self._finish("ag2_1x.tool.finish", call.end)
        return result

    @staticmethod
    def _finish(kind: str, step: Callable[..., Any], *args: Any) -> None:
        """Close a span without letting a recording failure reach AG2 (counted under ``kind``)."""
        try:
            step(*args)
        except Exception as exc:
            record_failure(kind, exc)

    def _delegation(self, event: Any) -> None:
        """``delegate(target, prompt)`` hands the question to a peer in a consulting channel it opens."""
        target = event.serialized_arguments.get("target")
        if isinstance(target, str) and target:
            self._f.recorder.handoff(self._f.agent_name, target, reason=sc.HANDOFF_DELEGATION)


def _end_turn(turn: Any, reply: Any) -> None:
    turn.end(getattr(reply, "message", None) is not None or bool(getattr(reply, "tool_calls", None)))
