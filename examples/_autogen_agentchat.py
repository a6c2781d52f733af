"""What the autogen-agentchat examples must tell autogen about the scripted server's model.

autogen-ext knows the capabilities of OpenAI's own model names only; for any other name its
``OpenAIChatCompletionClient`` needs a ``model_info``. The scripted model (``examples/scripted_openai.py``) claims
none of the optional capabilities but function calling, so agents call tools (handoffs included) and anything
that wants JSON (Magentic-One's ledger) is asked for it as plain text. A real model leaves it to autogen.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCRIPTED_MODEL_INFO"]

SCRIPTED_MODEL_INFO: dict[str, Any] = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}
