"""Our caller: the prompt a simulated caller plays, scripted turns, the simulator on an OpenAI-compatible API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from assay.adapters.caller import (
    END_TOKEN, OPENING, ScriptedCaller, SimulatedCaller, caller_client, caller_for, caller_prompt,
)
from assay.adapters.http import RetryPolicy, VendorClient
from assay.core.errors import ConfigError, MalformedResponseError, PermanentVendorError
from assay.core.evidence import Turn
from assay.core.settings import Settings
from assay.fakes.openai import FakeOpenAI

SITUATION = {
    "caller": "Dana, a homeowner, worried",
    "wants": "A same-day repair of a leaking water heater",
    "must_be_told": ["The address is outside the service area", "A referral"],
    "world": {"caller_zip": "60827", "heater": {"model": "XE40"}},
}


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(key="caller-test-key-0123456789") as fake:
        yield fake


@pytest.fixture
def client(llm: FakeOpenAI) -> Iterator[VendorClient]:
    with VendorClient("caller", llm.url + "/v1", {"Authorization": f"Bearer {llm.key}"},
                      retry=RetryPolicy(attempts=2, base_delay=0.01)) as http:
        yield http


def test_the_prompt_says_who_calls_what_they_want_what_to_listen_for_and_how_to_hang_up() -> None:
    prompt = caller_prompt(SITUATION)
    for text in ("Dana, a homeowner, worried", "same-day repair", "- The address is outside the service area",
                 "- caller_zip: 60827", '- heater: {"model": "XE40"}', END_TOKEN):
        assert text in prompt
    assert "never say it yourself" in prompt
    bare = caller_prompt({"caller": "Sam"})
    assert "Sam" in bare and "want" not in bare.split("\n")[2:-1] and "Facts" not in bare


def test_a_scripted_caller_says_its_turns_in_order_then_hangs_up() -> None:
    caller = ScriptedCaller(["Hi", "My ZIP is 60614"])
    transcript: list[Turn] = []
    said = []
    while (line := caller.next_line(transcript)) is not None:
        said.append(line)
        transcript += [Turn(role="caller", text=line), Turn(role="agent", text="ok")]
    assert said == ["Hi", "My ZIP is 60614"] and caller.max_turns == 2


def test_the_simulated_caller_plays_the_caller_side_and_ends_with_the_token(llm: FakeOpenAI, client: VendorClient) -> None:
    llm.add_rule(r"booked", END_TOKEN)
    llm.add_rule(r"How can I help", "My water heater is leaking.")
    caller = SimulatedCaller(client, "caller-model", SITUATION)
    assert caller.next_line([]) == "Hi, I'm calling about a problem at home. Can you help me?"
    opening = llm.bodies[-1]["messages"]
    assert opening[0] == {"role": "system", "content": caller_prompt(SITUATION)}
    assert opening[1] == {"role": "user", "content": OPENING} and llm.bodies[-1]["temperature"] == 0.0
    transcript = [Turn(role="caller", text="Hi"), Turn(role="agent", text="How can I help?")]
    assert caller.next_line(transcript) == "My water heater is leaking."
    assert [m["role"] for m in llm.bodies[-1]["messages"]] == ["system", "user", "assistant", "user"]
    assert caller.next_line([*transcript, Turn(role="caller", text="x"), Turn(role="agent", text="You're booked.")]) is None
    assert caller.tokens_in > 0 and caller.tokens_out > 0


def test_the_turn_cap_ends_the_call_without_asking_the_model(llm: FakeOpenAI, client: VendorClient) -> None:
    caller = SimulatedCaller(client, "m", SITUATION, max_turns=1)
    assert caller.next_line([Turn(role="caller", text="Hi"), Turn(role="agent", text="Hello")]) is None
    assert llm.bodies == []


def test_an_empty_or_refused_answer_is_a_vendor_error(llm: FakeOpenAI, client: VendorClient) -> None:
    llm.add_rule(r"", " ")
    with pytest.raises(MalformedResponseError, match="empty content"):
        SimulatedCaller(client, "m", SITUATION).next_line([])
    with VendorClient("caller", llm.url + "/v1", {"Authorization": "Bearer wrong"}) as bad_key, \
            pytest.raises(PermanentVendorError) as refused:
        SimulatedCaller(bad_key, "m", SITUATION).next_line([])
    assert refused.value.status == 401 and "wrong" not in str(refused.value)


def test_caller_for_prefers_scripted_turns_then_the_caller_model_then_the_judges(llm: FakeOpenAI) -> None:
    scripted = caller_for({**SITUATION, "turns": ["Hello"]}, Settings())
    assert isinstance(scripted, ScriptedCaller) and scripted.turns == ["Hello"]
    judge_only = Settings(judge_base_url=llm.url + "/v1", judge_model="judge-m", judge_api_key=SecretStr(llm.key))
    simulated = caller_for(SITUATION, judge_only)
    assert isinstance(simulated, SimulatedCaller) and simulated.model == "judge-m"
    assert simulated.next_line([]) is not None  # the judge's key reached the fake
    simulated.close()
    own = Settings(judge_base_url="http://127.0.0.1:9/v1", judge_model="judge-m", caller_base_url=llm.url + "/v1",
                   caller_model="caller-m", caller_api_key=SecretStr(llm.key))
    mine = caller_for(SITUATION, own)
    assert isinstance(mine, SimulatedCaller) and mine.model == "caller-m" and mine.next_line([]) is not None
    mine.close()
    assert caller_client(Settings()) is None


def test_no_turns_and_no_caller_model_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError) as error:
        caller_for(SITUATION, Settings(), case="outside-area")
    message = str(error.value)
    assert "'outside-area'" in message and "situation.turns" in message and "ASSAY_CALLER_MODEL" in message
