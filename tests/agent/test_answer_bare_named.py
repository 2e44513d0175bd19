"""Asked "which N", a sentence that says the N with a determiner alone ("a theme from a
movie", "this spot") says that there is one, not which: the name its speaker gives next,
when the listener asks, answers (kbmem.research.which.named_after_bare); synthetic turns
through the real direct answer."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.which import bare_noun


def test_a_bare_noun_is_the_noun_with_a_determiner_alone() -> None:
    assert bare_noun("My favorite is a theme from a movie I enjoy.", "theme") == "a theme"
    assert bare_noun("Loved this spot on the hike.", "spot") == "this spot"
    assert bare_noun("I love the Harbour theme.", "theme") == ""


def test_the_film_named_when_the_listener_asks_about_it() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "Do you have any favourite songs you like playing on it?"),
        (
            "Ilse",
            "I love playing different songs on the piano, but my favourite one to jam to is"
            " a theme from a film I really enjoy. It brings back great memories.",
        ),
        ("Tomas", "Wow! Could you tell me more about that film and the memories it brings up?"),
        ("Ilse", 'Yeah, "Paper Boats" is special to me. Watching it with my family was amazing.'),
    )
    answer = direct_answer("Which film's theme is Ilse's favourite to play on the piano?", [item])
    assert answer.line.startswith("Paper Boats"), answer.line


def test_the_spot_named_when_the_listener_asks_where() -> None:
    item = turns_item(
        "s1",
        "2024-05-01T09:00:00",
        ("Tomas", "Did you take any photos on your hike?"),
        ("Ilse", "Yes! Loved this spot on the hike."),
        ("Tomas", "Looks great! Where did you take this picture?"),
        ("Ilse", "At a quiet lake called Mirror Tarn. It was so calm."),
    )
    answer = direct_answer("Which outdoor spot did Ilse visit on her hike?", [item])
    assert answer.line.startswith("Mirror Tarn"), answer.line


def test_a_title_the_sentence_says_itself_is_kept() -> None:
    # The sentence's own title answers before any name said after it.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", 'I just saw a movie that blew my mind - "Paper Boats"!'),
        ("Tomas", "Which one?"),
        ("Ilse", "Also, Harbour Gulls won again."),
    )
    answer = direct_answer("What movie has Ilse seen that blew her mind?", [item])
    assert answer.line.startswith("Paper Boats"), answer.line
