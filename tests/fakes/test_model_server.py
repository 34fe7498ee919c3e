"""The scripted model server, spoken to over real HTTP on loopback as Claude Code and Codex speak to it.

Requests carry the sample project's working directory the way each harness states it (Claude Code in its
system prompt, Codex in its environment context), so the server plays that project's own playbook. The
answers are read back the way a client reads them: server-sent events reassembled into the message or the
output items, tool-call inputs parsed from their JSON deltas.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import assay.fakes
from assay.fakes.harness_tools import UsageError
from assay.fakes.model_script import DONE_TEXT, Script, edit_hunk, turns_of
from assay.fakes.model_server import ScriptedModel
from assay.fakes.harness import load_playbook

EXAM_PROJECT = Path(assay.fakes.__file__).parent / "exam_project"
ANTHROPIC_HEADERS = {"x-api-key": "offline", "anthropic-version": "2023-06-01"}
OPENAI_HEADERS = {"authorization": "Bearer offline"}
CLAUDE_TURNS = [("Read", {"file_path": "{cwd}/pricing.py"}), ("Read", {"file_path": "{cwd}/tests/test_pricing.py"}),
                ("Bash", {"command": "python -m pytest -q"}),
                ("Edit", {"file_path": "{cwd}/pricing.py", "old_string": "rounding=decimal.ROUND_HALF_EVEN",
                          "new_string": "rounding=decimal.ROUND_HALF_UP"}),
                ("Bash", {"command": "python -m pytest -q"})]
"""The sample playbook's good steps as Claude Code's tool calls (inputs: the fields the test checks)."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(EXAM_PROJECT, copy)
    return copy


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


def post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, str, str]:
    """(status, content type, body text) of a POST."""
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers["content-type"], answer.read().decode()
    except urllib.error.HTTPError as failed:
        return failed.code, failed.headers["content-type"], failed.read().decode()


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """A server-sent event stream as (event, data) pairs; each event's name must match its data's type."""
    found = []
    for chunk in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.split("\n"))
        data = json.loads(fields["data"])
        assert data["type"] == fields["event"]
        found.append((fields["event"], data))
    return found


def anthropic_request(cwd: Path, results: int, *, stream: bool = True) -> dict[str, Any]:
    """A Claude Code request after ``results`` answered tool calls."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "fix the rounding"}]}]
    for number in range(results):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{number}", "name": "Read",
                                                        "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{number}",
                                                   "content": "ok"}]}]
    system = [{"type": "text", "text": "You are Claude Code."},
              {"type": "text", "text": f"# Environment\n - Primary working directory: {cwd}\n - Platform: linux"}]
    return {"model": "claude-sonnet-4-6", "max_tokens": 32000, "system": system, "messages": messages,
            "tools": [{"name": n, "input_schema": {}} for n in ("Bash", "Edit", "Read")], "stream": stream}


def read_message(text: str) -> dict[str, Any]:
    """A streamed Anthropic message reassembled as a client does: blocks from their deltas."""
    stream = events(text)
    assert [name for name, _ in stream][0] == "message_start" and stream[-1][0] == "message_stop"
    message = stream[0][1]["message"]
    partial: dict[int, str] = {}
    for name, data in stream[1:]:
        if name == "content_block_start":
            message["content"].append(data["content_block"])
        elif name == "content_block_delta":
            delta, block = data["delta"], message["content"][data["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
            message["usage"]["output_tokens"] = data["usage"]["output_tokens"]
    for index, text_json in partial.items():
        message["content"][index]["input"] = json.loads(text_json)
    return message


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_claude_code_is_played_the_playbook_one_tool_call_per_answered_call(
        model: ScriptedModel, project: Path, stream: bool) -> None:
    calls = []
    for results in range(len(CLAUDE_TURNS) + 1):
        status, kind, text = post(model.url + "/v1/messages?beta=true", anthropic_request(project, results,
                                                                                          stream=stream),
                                  ANTHROPIC_HEADERS)
        assert status == 200 and kind == ("text/event-stream" if stream else "application/json")
        message = read_message(text) if stream else json.loads(text)
        assert message["type"] == "message" and message["role"] == "assistant" and message["usage"]["output_tokens"] > 0
        uses = [block for block in message["content"] if block["type"] == "tool_use"]
        assert message["stop_reason"] == ("tool_use" if uses else "end_turn")
        calls.append((uses[0]["name"], uses[0]["input"]) if uses else message["content"][-1]["text"])
    expected = [(name, {key: value.format(cwd=project) for key, value in fields.items()})
                for name, fields in CLAUDE_TURNS]
    assert [(name, {k: given[k] for k in want}) for (name, given), (_, want) in zip(calls, expected)] == expected
    assert calls[-1].startswith("Fixed: apply_discount now rounds half a cent up")


def responses_request(cwd: Path, results: int, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A Codex request after ``results`` answered tool calls."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the rounding"}]}]
    for number in range(results):
        items += [{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": f"call_{number}"},
                  {"type": "function_call_output", "call_id": f"call_{number}", "output": "ok"}]
    return {"model": "gpt-5.1-codex", "instructions": "You are Codex.", "input": items, "tools": tools,
            "tool_choice": "auto", "parallel_tool_calls": False, "stream": True}


CODEX_TOOLS = [{"type": "function", "name": "exec_command",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "login": {"type": "boolean"}},
                               "required": ["cmd"]}},
               {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark"}}]


def read_response(text: str) -> dict[str, Any]:
    """A streamed response as Codex reads it: the items of ``output_item.done``, then ``response.completed``."""
    stream = events(text)
    assert stream[0][0] == "response.created" and stream[-1][0] == "response.completed"
    assert [data["sequence_number"] for _, data in stream] == list(range(len(stream)))
    done = [data["item"] for name, data in stream if name == "response.output_item.done"]
    response = stream[-1][1]["response"]
    assert response["output"] == done and response["status"] == "completed"
    return response


def test_codex_is_played_the_playbook_with_its_shell_and_a_patch_that_applies(model: ScriptedModel,
                                                                               project: Path) -> None:
    played = []
    for results in range(6):
        status, _, text = post(model.url + "/v1/responses", responses_request(project, results, CODEX_TOOLS),
                               OPENAI_HEADERS)
        assert status == 200
        response = read_response(text)
        usage = response["usage"]
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        calls = [item for item in response["output"] if item["type"] != "message"]
        played.append(calls[0] if calls else response["output"][-1])
    shell = [json.loads(call["arguments"]) for call in played if call["type"] == "function_call"]
    assert [(arguments["cmd"], arguments["login"]) for arguments in shell] == [
        ("cat pricing.py", False), ("cat tests/test_pricing.py", False), ("python -m pytest -q", False),
        ("python -m pytest -q", False)]
    patch = next(call["input"] for call in played if call["type"] == "custom_tool_call")
    assert patch.startswith("*** Begin Patch\n*** Update File: pricing.py\n@@\n") and patch.endswith("*** End Patch\n")
    removed = "\n".join(line[1:] for line in patch.splitlines() if line.startswith("-"))
    added = "\n".join(line[1:] for line in patch.splitlines() if line.startswith("+"))
    before = (project / "pricing.py").read_text()
    assert f"\n{removed}\n" in before  # whole lines of the file as it is
    assert before.replace(removed, added) == before.replace("rounding=decimal.ROUND_HALF_EVEN",
                                                            "rounding=decimal.ROUND_HALF_UP")
    assert played[-1]["type"] == "message" and played[-1]["content"][0]["text"].startswith("Fixed:")


def test_a_function_apply_patch_and_an_older_shell_get_their_declared_shapes(model: ScriptedModel,
                                                                            project: Path) -> None:
    tools = [{"type": "function", "name": "shell", "parameters": {"properties": {"command": {"type": "array"}}}},
             {"type": "function", "name": "apply_patch", "parameters": {"properties": {"input": {"type": "string"}}}}]
    first = read_response(post(model.url + "/v1/responses", responses_request(project, 0, tools), OPENAI_HEADERS)[2])
    edit = read_response(post(model.url + "/v1/responses", responses_request(project, 3, tools), OPENAI_HEADERS)[2])
    assert json.loads(first["output"][-1]["arguments"]) == {"command": ["bash", "-c", "cat pricing.py"]}
    call = edit["output"][-1]
    assert call["type"] == "function_call" and call["name"] == "apply_patch"
    assert json.loads(call["arguments"])["input"].startswith("*** Begin Patch\n*** Update File: pricing.py")


@pytest.mark.parametrize("path,body,headers,status,problem", [
    ("/v1/messages", {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}, ANTHROPIC_HEADERS, 400,
     "model: Field required"),
    ("/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, ANTHROPIC_HEADERS, 400,
     "max_tokens"),
    ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "robot", "content": "hi"}]},
     ANTHROPIC_HEADERS, 400, "messages.0.role"),
    ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
     {"anthropic-version": "2023-06-01"}, 401, "x-api-key"),
    ("/v1/responses", {"model": "m"}, OPENAI_HEADERS, 400, "'input'"),
    ("/v1/responses", {"model": "m", "input": []}, {}, 401, "API key"),
], ids=["no-model", "no-max-tokens", "bad-role", "no-key", "no-input", "no-bearer"])
def test_a_request_the_api_would_refuse_gets_its_error_shape(model: ScriptedModel, path: str, body: Any,
                                                             headers: dict[str, str], status: int,
                                                             problem: str) -> None:
    got, kind, text = post(model.url + path, body, headers)
    error = json.loads(text)
    message = error["error"]["message"]
    assert got == status and kind == "application/json" and problem in message
    if path == "/v1/messages":
        assert error["type"] == "error" and error["error"]["type"] in ("invalid_request_error", "authentication_error")


def test_without_a_playbook_the_error_names_where_it_looked(model: ScriptedModel, tmp_path: Path) -> None:
    status, _, text = post(model.url + "/v1/messages", anthropic_request(tmp_path, 0), ANTHROPIC_HEADERS)
    assert status == 400
    assert str(tmp_path / ".fake-harness" / "playbook.toml") in json.loads(text)["error"]["message"]


def test_an_unknown_path_is_answered_404_and_listed(model: ScriptedModel) -> None:
    status, _, _ = post(model.url + "/v1/complete", {"prompt": "hi"}, ANTHROPIC_HEADERS)
    assert status == 404 and model.unknown == ["POST /v1/complete"]
    assert [(r.method, r.path, r.status) for r in model.requests] == [("POST", "/v1/complete", 404)]


def test_text_steps_fold_into_the_next_call_and_the_final_answer(tmp_path: Path) -> None:
    playbook = tmp_path / "playbook.toml"
    playbook.write_text('[[good]]\nsay = "Looking."\n[[good]]\nsay = "At the code."\nread = "a.py"\n'
                        '[[good]]\nrun = "make"\n[[good]]\nsay = "All done."\n[[good]]\nsay = "Bye."\n'
                        '[[regressed]]\nrun = "make"\n')
    turns = turns_of(load_playbook(playbook)["good"])
    assert [(t.text, t.action) for t in turns] == [("Looking.\n\nAt the code.", "read"), ("", "run"),
                                                   ("All done.\n\nBye.", None)]
    regressed = Script(playbook, "regressed")
    assert [regressed.next_turn(None, n).text for n in (0, 1, 5)] == ["", DONE_TEXT, DONE_TEXT]
    with pytest.raises(UsageError, match="flavour 'bad' is not one of good, regressed"):
        Script(playbook, "bad")


@pytest.mark.parametrize("old,new,replace_all,before,after", [
    ("HALF_EVEN", "HALF_UP", False, ["x = ROUND_HALF_EVEN  # HALF_EVEN"], ["x = ROUND_HALF_UP  # HALF_EVEN"]),
    ("HALF_EVEN", "HALF_UP", True, ["x = ROUND_HALF_EVEN  # HALF_EVEN"], ["x = ROUND_HALF_UP  # HALF_UP"]),
    ("b\nc", "B", False, ["b", "c"], ["B"]),
], ids=["first", "all", "lines"])
def test_an_edit_becomes_the_whole_lines_it_touches(old: str, new: str, replace_all: bool, before: list[str],
                                                    after: list[str]) -> None:
    text = "a\nx = ROUND_HALF_EVEN  # HALF_EVEN\nb\nc\n"
    assert edit_hunk(text, old, new, replace_all) == (before, after)
    with pytest.raises(UsageError, match="not found"):
        edit_hunk(text, "nowhere", "x")


def test_the_command_line_serves_until_stopped_and_writes_codex_config(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    with subprocess.Popen([sys.executable, "-m", "assay.fakes.model_server", "--codex-home", str(home)],
                          stdout=subprocess.PIPE, text=True) as process:
        try:
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            config = (home / "config.toml").read_text()
            assert f'base_url = "{url}/v1"' in config and 'wire_api = "responses"' in config
        finally:
            process.terminate()
            assert process.wait(timeout=10) == 0


def test_without_an_apply_patch_tool_the_patch_goes_through_the_shell(model: ScriptedModel, project: Path) -> None:
    edit = read_response(post(model.url + "/v1/responses", responses_request(project, 3, CODEX_TOOLS[:1]),
                              OPENAI_HEADERS)[2])
    call = edit["output"][-1]
    command = json.loads(call["arguments"])["cmd"]
    assert call["name"] == "exec_command" and command.startswith("apply_patch <<'PATCH'\n*** Begin Patch\n")
    assert command.endswith("*** End Patch\nPATCH")
