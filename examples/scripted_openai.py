"""A scripted OpenAI-compatible server: real HTTP on 127.0.0.1, answers from a script, records every request.

Framework runs that talk to "a model" through the ``openai`` client (the OpenAI Agents SDK, autogen-agentchat,
LangGraph, CrewAI, ...) need an endpoint that answers the same way every time and can return tool calls, since a
model "decides" a handoff by calling a transfer tool. This server gives them one, with no network and no key:

- ``POST /v1/chat/completions``, with and without SSE streaming (``stream_options.include_usage`` honoured);
- ``POST /v1/responses`` (not streamed), and with ``"stream": true`` as SSE events;
- ``GET /v1/models``; ``POST /reset`` rewinds every rule.

A script is ``{"rules": [{"match": SUBSTRING, "replies": [REPLY, ...]}], "default": REPLY}``. A rule matches
when its substring occurs in the system prompt or instructions (checked first), then in the last message, then
anywhere in the request body. Each rule hands out its replies in order and repeats the last one. A reply is the
message text, or ``{"tool": NAME, "args": {...}}``, or ``{"tools": [{"tool": ..., "args": ...}, ...]}`` for
parallel calls, or ``{"text": ...}`` (with ``"tool"``/``"tools"`` as well: text alongside the calls).

In a test or an example::

    with ScriptedOpenAI(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        ...
        server.requests        # every request: path, matched rule, reply, body

As a program (another process)::

    python examples/scripted_openai.py PORT SCRIPT.json [LOG.jsonl]
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedOpenAI", "ScriptedRequest"]

Reply = str | dict[str, Any]
_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
_RESPONSES_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


@dataclass(frozen=True)
class ScriptedRequest:
    path: str
    rule: int | None  # index of the matching rule; None when the default answered
    reply: Reply
    body: dict[str, Any]


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def _system_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    if isinstance(body.get("instructions"), str):
        parts.append(body["instructions"])
    messages = list(body.get("messages") or [])
    if isinstance(body.get("input"), list):
        messages += body["input"]
    for message in messages:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            parts.append(_text(message.get("content")))
    return "\n".join(parts)


def _last_text(body: Mapping[str, Any]) -> str:
    if isinstance(body.get("input"), str):
        return str(body["input"])
    messages = body.get("messages") or (body.get("input") if isinstance(body.get("input"), list) else [])
    if not messages:
        return ""
    last = messages[-1]
    return _text(last.get("content", last.get("output", ""))) if isinstance(last, dict) else _text(last)


class _Script:
    """The rules and how far each has got; thread-safe, since the server answers requests in parallel."""

    def __init__(self, script: Mapping[str, Any]) -> None:
        self.rules: list[dict[str, Any]] = list(script.get("rules", []))
        self.default: Reply = script.get("default", "ok")
        self._served: dict[int, int] = {}
        self._lock = threading.Lock()

    def pick(self, body: Mapping[str, Any]) -> tuple[int | None, Reply]:
        full = json.dumps(body)
        for haystack in (_system_text(body), _last_text(body), full):
            for index, rule in enumerate(self.rules):
                if rule["match"] in haystack:
                    with self._lock:
                        served = self._served.get(index, 0)
                        self._served[index] = served + 1
                    replies = rule["replies"]
                    reply: Reply = replies[min(served, len(replies) - 1)]
                    return index, reply
        return None, self.default

    def reset(self) -> None:
        with self._lock:
            self._served.clear()


class ScriptedOpenAI:
    """The server. ``start()`` binds 127.0.0.1 (port 0 = a free one) and serves from a daemon thread."""

    def __init__(self, script: Mapping[str, Any], port: int = 0, log_path: str | None = None) -> None:
        self._script = _Script(script)
        self._port = port
        self._log_path = log_path
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.requests: list[ScriptedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> ScriptedOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        self._script.reset()
        with self._lock:
            self.requests.clear()

    # -- answers ------------------------------------------------------------------------------
    def _next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        if not isinstance(reply, dict):
            return []
        single = [{"tool": reply["tool"], "args": reply.get("args", {})}] if "tool" in reply else []
        tools = reply.get("tools") or single
        return [
            {
                "id": self._next_id("call_"),
                "type": "function",
                "function": {"name": t["tool"], "arguments": json.dumps(t.get("args", {}))},
            }
            for t in tools
        ]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        """The response body and content type for one request (the HTTP handler only frames it)."""
        rule, reply = self._script.pick(body)
        with self._lock:
            self.requests.append(ScriptedRequest(path, rule, reply, body))
        if self._log_path:
            with open(self._log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"path": path, "rule": rule, "reply": reply}) + "\n")
        calls = self._tool_calls(reply)
        if isinstance(reply, dict) and "text" in reply:
            text: str | None = str(reply["text"])  # with "tool"/"tools" too: text alongside the calls (a "thought")
        else:
            text = None if calls else (reply if isinstance(reply, str) else "")
        model = str(body.get("model", "scripted"))
        if path.rstrip("/").endswith("/responses"):
            return self._responses(model, text, calls, bool(body.get("stream")))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return self._chat_stream(model, text, calls, include_usage), "text/event-stream"
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        completion = {
            "id": self._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
            "usage": _USAGE,
        }
        return json.dumps(completion).encode(), "application/json"

    def _chat_stream(self, model: str, text: str | None, calls: list[dict[str, Any]], include_usage: bool) -> bytes:
        base = {"id": self._next_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time())}
        base["model"] = model
        if calls:
            delta: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [dict(call, index=i) for i, call in enumerate(calls)],
            }
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": text}, "stop"
        chunks: list[dict[str, Any]] = [
            dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
            dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
        ]
        if include_usage:
            chunks.append(dict(base, choices=[], usage=_USAGE))
        return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"

    def _responses(self, model: str, text: str | None, calls: list[dict[str, Any]], stream: bool) -> tuple[bytes, str]:
        output: list[dict[str, Any]] = []
        for call in calls:
            output.append(
                {
                    "type": "function_call",
                    "id": "fc_" + call["id"],
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                    "status": "completed",
                }
            )
        if not calls:
            output.append(
                {
                    "type": "message",
                    "id": self._next_id("msg_"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        response = {
            "id": self._next_id("resp_"),
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": _RESPONSES_USAGE,
        }
        if not stream:
            return json.dumps(response).encode(), "application/json"
        # The Responses stream: created, one added/done pair per output item, completed.
        events: list[dict[str, Any]] = [{"type": "response.created", "response": dict(response, output=[])}]
        for index, item in enumerate(output):
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        events.append({"type": "response.completed", "response": response})
        for number, event in enumerate(events):
            event["sequence_number"] = number
        body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
        return body, "text/event-stream"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:  # quiet: tests read server.requests instead
                pass

            def _send(self, data: bytes, content_type: str = "application/json") -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                models = {"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0}]}
                self._send(json.dumps(models).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length > 0 else b""
                if self.path == "/reset":
                    server.reset()
                    self._send(b'{"ok": true}')
                    return
                body = json.loads(raw or b"{}")
                self._send(*server.answer(self.path, body))

        return Handler


def _serve(argv: list[str]) -> None:
    if len(argv) not in (2, 3):
        raise SystemExit("usage: scripted_openai.py PORT SCRIPT.json [LOG.jsonl]")
    with open(argv[1], encoding="utf-8") as f:
        script = json.load(f)
    server = ScriptedOpenAI(script, port=int(argv[0]), log_path=argv[2] if len(argv) == 3 else None).start()
    print(f"scripted OpenAI-compatible server on {server.base_url}", flush=True)
    stop = threading.Event()
    try:
        stop.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    _serve(sys.argv[1:])
