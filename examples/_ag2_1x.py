"""What the AG2 1.x example, tests and benchmark share: a scripted model that spans turns, and waiting for a
channel to close. AG2 1.x only (the ``ag2`` module); the AG2 Classic helpers are in ``examples/_scripted.py``.

``ag2.testing.TestConfig`` builds a fresh ``TestClient`` on every ``Agent.ask``, so its script restarts each
turn; an agent on a hub is asked once per inbound envelope and would replay its first reply for ever.
``ScriptedConfig`` keeps one client per config, so the script reads on from turn to turn.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ag2.events import ToolCallEvent
from ag2.network import ChannelState
from ag2.testing import TestConfig

__all__ = ["ScriptedConfig", "call", "wait_closed"]


class ScriptedConfig(TestConfig):  # type: ignore[misc]
    """``TestConfig`` whose script spans the agent's turns (one client for the config's lifetime)."""

    _client: Any = None

    def create(self) -> Any:
        if self._client is None:
            self._client = super().create()
        return self._client


def call(tool: str, **arguments: Any) -> Any:
    """One scripted model turn that calls ``tool`` with ``arguments``."""
    return ToolCallEvent(tool, arguments=json.dumps(arguments))


async def wait_closed(hub: Any, channel_id: str, timeout: float = 30.0) -> Any:
    """The channel's metadata once AG2 has closed or expired it (a hub run has no blocking ``run`` call)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        metadata = await hub.get_channel(channel_id)
        if metadata.state in (ChannelState.CLOSED, ChannelState.EXPIRED):
            return metadata
        if loop.time() > deadline:
            raise TimeoutError(f"channel {channel_id} still {metadata.state} after {timeout}s")
        await asyncio.sleep(0.01)
