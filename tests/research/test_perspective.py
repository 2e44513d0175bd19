"""A request about one person who speaks in memory is searched in that person's voice, among
their own turns: the rewrite itself, and what it finds with the real model and indexes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.talk import talk

from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import CHAT_AGENT, session_from_mapping
from kbmem.memorize.template import init_kb
from kbmem.research.perspective import Voiced, subject, voiced
from kbmem.research.researcher import Researcher
from kbmem.research.toolkit import Toolkit
from kbmem.store.repository import KnowledgeBase

SPEAKERS = ["John", "Maria", "Tobias Ferrante", "O'Brien", "Dr. Lee", "Anne-Marie", CHAT_AGENT]


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("What martial arts has John done?", Voiced("martial arts I done", "John")),
        ("What is Maria's relationship status?", Voiced("my relationship status", "Maria")),
        (
            "How long has Maria had her current group of friends for?",
            Voiced("I had my current group of friends for", "Maria"),
        ),
        ("When did John paint a sunrise?", Voiced("I paint a sunrise", "John")),
        # A full name, or the first name alone.
        ("Where does Tobias Ferrante work?", Voiced("I work", "Tobias Ferrante")),
        (
            "What did Tobias say about his sync service?",
            Voiced("I say about my sync service", "Tobias Ferrante"),
        ),
        ("Tell me about John's children", Voiced("Tell me about my children", "John")),
        # Names with punctuation in them.
        ("What did O'Brien say about his boat?", Voiced("I say about my boat", "O'Brien")),
        ("Where does Dr. Lee work?", Voiced("I work", "Dr. Lee")),
        ("What is Anne-Marie's job?", Voiced("my job", "Anne-Marie")),
        # Two people: the first named, talking to the other ("you").
        (
            "What things has John recommended to Maria?",
            Voiced("things I recommended to you", "John"),
        ),
        ("What did Maria give John's sister?", Voiced("I give your sister", "Maria")),
        ("What do John and Maria both like?", Voiced("I and you like", "John")),
        (
            "What did Tobias tell John about his boat?",
            Voiced("I tell you about his boat", "Tobias Ferrante"),
        ),
    ],
    ids=lambda v: v.speaker.split()[0] if isinstance(v, Voiced) else "",
)
def test_a_request_about_one_speaker_is_put_in_their_voice(
    request_text: str, expected: Voiced
) -> None:
    assert voiced(request_text, SPEAKERS, ignore=[CHAT_AGENT]) == expected


@pytest.mark.parametrize(
    "request_text",
    [
        "What do John, Maria and Anne-Marie like?",  # three people: no one voice
        "What happened at the harbour?",  # nobody named
        "What did johnny say?",  # not a name in memory (names match as written, whole)
        "What did kbmem answer?",  # kbmem's own voice is never taken
        "Who is John?",  # nothing left to search once the name is taken out
    ],
    ids=range(5),
)
def test_no_voice_when_the_request_is_not_about_one_speaker(request_text: str) -> None:
    assert voiced(request_text, SPEAKERS, ignore=[CHAT_AGENT]) is None


def test_a_first_name_two_speakers_share_names_no_one() -> None:
    speakers = ["Sam Reed", "Sam Ortiz", "Ann"]
    assert subject("What does Sam like?", speakers) is None
    assert subject("What does Sam Reed like?", speakers) == "Sam Reed"
    assert subject("What does Ann like?", speakers) == "Ann"


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """John does kickboxing (said once, in passing); Maria talks about martial arts a lot."""
    kb = init_kb(tmp_path_factory.mktemp("voice") / "kb", with_history=False)
    for sid, turns in {
        "s-gym": [
            ("Maria", "How was your week?"),
            ("John", "I started kickboxing classes, my first fight training is on Monday."),
            ("Maria", "That sounds great, keep it up!"),
        ],
        "s-film": [
            ("Maria", "I watched a documentary about martial arts yesterday."),
            ("John", "Oh nice, what was it about?"),
            ("Maria", "Martial arts schools in Japan, and how martial arts are taught there."),
        ],
        "s-garden": [
            ("John", "We planted tomatoes in the garden this weekend."),
            ("Maria", "Lovely, mine never grow."),
        ],
    }.items():
        ingest_session(kb, session_from_mapping(talk("acme", sid, turns)))
    return kb


def test_dense_pages_hear_the_request_in_the_speakers_voice(chats: KnowledgeBase) -> None:
    toolkit = Toolkit(chats, "acme")
    question = "What martial arts has John done?"
    # Taken literally, the nearest turns are Maria's, which share the question's words.
    assert toolkit.dense(question, 1)[0].page_id == "s-film/1"
    # In John's voice, among John's turns, the kickboxing turn comes first.
    assert toolkit.voiced(question) == Voiced("martial arts I done", "John")
    assert toolkit.dense_pages(question, 10)[0] == "s-gym/1"
    # A filter on another speaker is respected: no voice is taken then.
    only_maria = toolkit.dense_pages(question, 10, {"speaker": "Maria"})
    assert only_maria and only_maria[0] == "s-film/1"


@pytest.fixture
def researcher(chats: KnowledgeBase) -> Iterator[Researcher]:
    found = Researcher(chats, "acme")
    yield found
    found.close()


def test_the_researcher_plans_a_search_in_the_speakers_voice(researcher: Researcher) -> None:
    briefing = researcher.research("What martial arts has John done?")
    [plan] = [e for e in briefing.trace if e.kind == "plan" and e.step == 0]
    voiced_actions = [a for a in plan.data["actions"] if a.get("speaker")]
    assert voiced_actions == [
        {
            "tool": tool,
            "k": voiced_actions[n]["k"],
            "query": "martial arts I done",
            "note": "what John would have said about it, among their own turns" + suffix,
            "speaker": "John",
        }
        for n, (tool, suffix) in enumerate((("dense", ""), ("late", ", word by word")))
    ]
    call = plan.data["actions"].index(voiced_actions[0])
    [result] = [
        e
        for e in briefing.trace
        if e.kind == "tool_result" and e.step == 0 and e.data["call"] == call
    ]
    assert result.data["hits"], "the voiced search found John's turn"
    assert all(h["excerpt"].startswith("John:") for h in result.data["hits"])
    assert "kickboxing" in " ".join(e.excerpt for e in briefing.evidence)


def test_a_request_naming_two_speakers_is_searched_in_the_first_ones_voice(
    researcher: Researcher,
) -> None:
    briefing = researcher.research("What did Maria tell John about martial arts?")
    [plan] = [e for e in briefing.trace if e.kind == "plan" and e.step == 0]
    voiced_actions = [a for a in plan.data["actions"] if a.get("speaker")]
    assert [(a["tool"], a["query"], a["speaker"]) for a in voiced_actions] == [
        ("dense", "I tell you about martial arts", "Maria"),
        ("late", "I tell you about martial arts", "Maria"),
    ]
    assert "documentary about martial arts" in " ".join(e.excerpt for e in briefing.evidence)


def test_nobody_named_means_no_voiced_search(researcher: Researcher) -> None:
    briefing = researcher.research("Which vegetables grow in the garden?")
    plans = [e for e in briefing.trace if e.kind == "plan"]
    assert not any(a.get("speaker") for e in plans for a in e.data["actions"])
