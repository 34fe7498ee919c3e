"""The replayable ask: short steering replies rewritten from what they answered, subagents' turns left out."""

from __future__ import annotations

import pytest

from assay.core.session import Session, SessionToolCall, SessionTurn
from assay.flows.exam_instruction import instruction_text, resolve_reply, slug_for


def _session(*turns: tuple[str, str] | tuple[str, str, tuple[str, ...]], calls: tuple[SessionToolCall, ...] = ()
             ) -> Session:
    made = [SessionTurn(index=i, role=t[0], text=t[1], call_ids=t[2] if len(t) > 2 else ())
            for i, t in enumerate(turns)]  # fmt: skip
    return Session(session_id="s", harness="fake-agent", turns=tuple(made), tool_calls=calls)


def _last_reply(session: Session) -> str:
    return resolve_reply(session, session.user_turns[-1])


@pytest.mark.parametrize("options,reply,resolved", [
    ("1. Fix the rounding in pricing.py only\n2. Rewrite it", "1", "1 — Fix the rounding in pricing.py only"),
    ("1) Keep the API\n2) Break it", "2", "2 — Break it"),
    ("- 1: small fix\n- 2: big fix", "2.", "2. — big fix"),
    ("**1.** Patch it\n**2.** Leave it", "1", "1 — Patch it"),
    ("  1. indented first\n  2. indented second", " 2 ", "2 — indented second"),
])  # fmt: skip
def test_a_number_becomes_the_option_it_picked(options: str, reply: str, resolved: str) -> None:
    session = _session(("user", "Fix pricing"), ("assistant", f"Options:\n{options}\nWhich one?"), ("user", reply))
    assert _last_reply(session) == resolved


@pytest.mark.parametrize("reply", ["yes", "y", "Yes!", "ok", "go ahead", "no", "Sure."])
def test_a_yes_or_no_quotes_the_question_it_answered(reply: str) -> None:
    text = "I fixed it. **Should I also update the changelog?** Tell me."
    session = _session(("user", "Fix pricing"), ("assistant", text), ("user", reply))
    assert _last_reply(session) == f'{reply} — in answer to "Should I also update the changelog?"'


def test_a_reply_to_a_tool_call_reads_the_options_in_its_input() -> None:
    asked = SessionToolCall(call_id="q1", name="ask_person", status="ok", output="answered", turn=1,
                            input={"questions": [{"question": "Which scope?", "header": "Scope",
                                                  "options": [{"label": "Only pricing.py", "description": "small"},
                                                              {"label": "The whole module"}]}]})  # fmt: skip
    listed = SessionToolCall(call_id="q2", name="choose", status="ok", output="", turn=3,
                             input={"prompt": "Pick", "options": ["red", "green"]})
    session = _session(("user", "Fix pricing"), ("assistant", "", ("q1",)), ("user", "1", ("q1",)),
                       ("assistant", "", ("q2",)), ("user", "2"), ("user", "yes", ("q1",)), calls=(asked, listed))
    replies = [resolve_reply(session, t) for t in session.user_turns[1:]]
    assert replies == ["1 — Only pricing.py", "2 — green", 'yes — in answer to "Which scope?"']


@pytest.mark.parametrize("turns,resolved", [
    ([("assistant", "Done, all tests pass.")], "ok (a short reply; what it answered is not in the session)"),
    ([("assistant", "1. only one option")], "ok (a short reply; what it answered is not in the session)"),
    ([("assistant", "1. a\n2. b")], "ok (a short reply; what it answered is not in the session)"),
    ([], "ok (a short reply; what it answered is not in the session)"),
])  # fmt: skip
def test_an_unresolvable_short_reply_is_kept_with_a_note(turns, resolved: str) -> None:
    session = _session(("user", "Fix pricing"), *turns, ("user", "ok"))
    assert _last_reply(session) == resolved


def test_a_number_out_of_range_and_a_long_reply_stay_as_they_are() -> None:
    session = _session(("user", "Fix pricing"), ("assistant", "1. a\n2. b"), ("user", "7"),
                       ("assistant", "Should I?"), ("user", "Yes, and also rename total() to grand_total()."))
    assert [resolve_reply(session, t) for t in session.user_turns[1:]] == [
        "7 (a short reply; what it answered is not in the session)", "Yes, and also rename total() to grand_total()."]


def test_the_question_is_looked_for_only_since_the_last_ask() -> None:
    session = _session(("user", "Fix pricing"), ("assistant", "Should I add tests?"), ("user", "Use Decimal."),
                       ("assistant", "Done."), ("user", "yes"))
    assert _last_reply(session) == "yes (a short reply; what it answered is not in the session)"


def test_subagent_turns_are_not_asks_and_follow_ups_are_numbered() -> None:
    turns = [SessionTurn(index=0, role="user", text="Fix pricing.\n\nKeep the API."),
             SessionTurn(index=1, role="user", text="Search the callers", agent_id="helper-1"),
             SessionTurn(index=2, role="assistant", text="Which?\n1. small\n2. large"),
             SessionTurn(index=3, role="user", text="2"),
             SessionTurn(index=4, role="user", text="Also:\n- keep the docs\n\n- and the tests")]  # fmt: skip
    text = instruction_text(Session(session_id="s", harness="fake-agent", turns=tuple(turns)))
    assert text == ("Fix pricing.\n\nKeep the API.\n\n---\n\nLater in the session the person added, in this order:\n\n"
                    "1. 2 — large\n2. Also:\n   - keep the docs\n\n   - and the tests\n")  # fmt: skip
    alone = Session(session_id="s", harness="fake-agent", turns=tuple(turns[:2]))
    assert instruction_text(alone) == "Fix pricing.\n\nKeep the API.\n"


def test_an_exam_slug_comes_from_the_first_words_of_the_ask() -> None:
    ask = "Fix the rounding in pricing.py so totals show cents, please"
    assert slug_for(ask) == "fix-the-rounding-in-pricing-py-so-totals"
    assert slug_for("Ünïcode — déjà vu!\nsecond line") == "unicode-deja-vu"
    assert slug_for("   ") == ""
    assert len(slug_for("x" * 100)) == 40


def test_a_reply_reads_every_assistant_message_since_the_last_ask() -> None:
    probe = SessionToolCall(call_id="r1", name="read_file", status="ok", output="x", turn=2, input={"path": "a.py"})
    session = _session(("user", "Fix pricing"), ("assistant", "Pick one:\n1. narrow\n2. wide\nWhich?"),
                       ("assistant", "", ("r1",)), ("user", "", ("r1",)), ("user", "2"), calls=(probe,))
    assert _last_reply(session) == "2 — wide"
