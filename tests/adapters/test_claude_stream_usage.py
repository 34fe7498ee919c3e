"""Tokens of a headless Claude Code run, read from its stream-json output.

Claude Code 2.1 prints an ``assistant`` event as soon as a content block is complete, before the response's
last usage arrives: the event's ``output_tokens`` is the count so far (1, as ``message_start`` gave it). The
final ``result`` event carries the totals the harness summed. The lines below follow that shape (the fields
this reading needs; the real CLI's output is read end to end in ``test_real_harnesses.py``).
"""

from __future__ import annotations

import json

import pytest

from assay.adapters.runners.claude_stream import read_stream

USAGE_SO_FAR = {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                "output_tokens": 1}


def assistant(message_id: str, parent: str | None = None) -> dict:
    return {"type": "assistant", "parent_tool_use_id": parent, "session_id": "s",
            "message": {"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                        "content": [{"type": "text", "text": "Done."}], "stop_reason": None,
                        "usage": USAGE_SO_FAR}}


RESULT = {"type": "result", "subtype": "success", "is_error": False, "session_id": "s", "num_turns": 2,
          "usage": {"input_tokens": 240, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 500,
                    "output_tokens": 317}}


@pytest.mark.parametrize("events,expected", [
    ([assistant("msg_1"), assistant("msg_2"), RESULT], (240, 317, 30, 500, 2)),
    ([assistant("msg_1"), assistant("msg_2")], (240, 2, 0, 0, 2)),
    ([assistant("msg_1"), assistant("msg_2", parent="toolu_1"), RESULT], (120, 1, 0, 0, 1)),
], ids=["result-totals", "no-result-streamed-counts", "subagent-streamed-counts"])
def test_the_main_sessions_tokens_are_the_results_totals_unless_a_subagent_ran(events: list[dict],
                                                                                expected: tuple) -> None:
    lines = [json.dumps({"type": "system", "subtype": "init", "session_id": "s", "tools": [], "cwd": "/w"}),
             *map(json.dumps, events)]
    tokens = read_stream(lines, prompt="Fix it.").session.tokens
    assert (tokens.input, tokens.output, tokens.cache_creation, tokens.cache_read, tokens.responses) == expected
