"""A real OpenAI-compatible HTTP server on 127.0.0.1 that answers from a script and records every request.

Tests hand it a list of :class:`Reply` (or callables ``request_body -> Reply``) consumed one per request; when
the script runs out the last entry repeats. Each request is recorded with its raw bytes, parsed JSON and
headers, so tests assert on what the judge actually sent (structure, fence, redaction), not on what it meant to.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mast_otel.taxonomy import MODE_IDS


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # hold the request until the server stops (the client's timeout fires first)


@dataclass
class Recorded:
    path: str
    raw: bytes
    headers: dict[str, str]

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 50) -> Reply:
    """A 200 chat completion whose message content is ``content``."""
    return Reply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-model",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def answer(
    present: dict[str, Sequence[str]] | None = None,
    *,
    summary: str = "ok",
    done: bool = True,
    decisive: dict[str, str] | None = None,
) -> str:
    """A valid judge answer: ``present`` maps mode id -> evidence refs; every other mode absent; ``decisive`` is
    the who-and-when object (``{"message": "M3", "agent": ..., "reason": ...}``) or None."""
    present = present or {}
    modes = {
        m: {
            "evidence": list(present.get(m, [])),
            "reason": f"reason {m}" if m in present else "",
            "present": m in present,
        }
        for m in MODE_IDS
    }
    return json.dumps({"summary": summary, "task_completed": done, "modes": modes, "decisive": decisive})


_TRANSCRIPT_LINE = re.compile(r"^\[([A-Z]\d+)\] (.*)$", re.MULTILINE)


def citing(rules: dict[str, str], *, summary: str = "scripted verdict") -> Callable[[Any], Reply]:
    """A scripted judge: each mode is present, citing the transcript lines whose first line matches its regex.

    Reads the transcript from the request the way a model would (refs like ``[M3]`` at line starts), so the
    evidence it cites are real references of that conversation, whatever their numbering.
    """

    def reply(body: Any) -> Reply:
        prompt = "\n".join(m["content"] for m in (body or {}).get("messages", []) if isinstance(m.get("content"), str))
        present: dict[str, Sequence[str]] = {}
        for mode_id, pattern in rules.items():
            refs = [m.group(1) for m in _TRANSCRIPT_LINE.finditer(prompt) if re.search(pattern, m.group(2))]
            if refs:
                present[mode_id] = refs
        return completion(answer(present, summary=summary))

    return reply


def error(status: int, message: str = "error", headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": "server_error"}}, headers=headers or {})


Script = Sequence[Reply | Callable[[Any], Reply]]


class FakeOpenAI:
    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def bodies(self) -> list[Any]:
        return [r.json for r in self.requests]

    def _next(self, body: Any) -> Reply:
        with self._lock:
            n = len(self.requests) - 1
            item = self.script[min(n, len(self.script) - 1)]
        return item(body) if callable(item) else item

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with fake._lock:
                    fake.requests.append(Recorded(self.path, raw, {k.lower(): v for k, v in self.headers.items()}))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                reply = fake._next(body)
                if reply.hang:
                    fake._stop.wait(30)
                    return
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextmanager
def fake_openai(script: Script) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(script).start()
    try:
        yield server
    finally:
        server.stop()
