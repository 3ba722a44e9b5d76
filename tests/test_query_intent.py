"""memoryapp.query_intent: the words and fact attributes a question implies."""

from __future__ import annotations

from memoryapp.message_search import query_terms, query_words
from memoryapp.query_intent import (
    ATTRIBUTE_WEIGHT,
    SearchQuery,
    about_someone_else,
    asks_attribute,
    names_in,
    names_someone,
    search_query,
)


def _of(query: str) -> SearchQuery:
    return search_query(words=query_words(query), terms=query_terms(query))


def test_it_adds_the_words_and_attributes_of_a_category_the_question_names() -> None:
    hobbies = _of("what are his hobbies?")
    assert hobbies.terms == (
        "hobbies", "love", "like", "enjoy", "play", "practise", "practice", "hobby", "fan"
    )
    assert hobbies.weights == (1.0, *[0.5] * 8)
    assert hobbies.attributes == (("stance on %", "likes"), ("stance on %", "does"), ("favorite %", None))
    assert hobbies.fact_weights == (*hobbies.weights, ATTRIBUTE_WEIGHT)
    assert hobbies.related == tuple(range(1, 9))
    # "his" and no name: the person this memory is about.
    assert hobbies.roles == frozenset({"user"})


def test_it_weighs_request_words_down_and_hears_the_first_person() -> None:
    kids = _of("Remind me what my kids are called")
    assert kids.terms == ("remind", "kids", "called", "son", "daughter", "kid", "child", "children")
    assert kids.weights == (0.1, 1.0, 0.1, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert kids.attributes == (
        ("son", None), ("daughter", None), ("kid", None), ("child", None), ("baby", None)
    )
    assert kids.roles == frozenset({"user"})


def test_it_keeps_a_query_of_request_words_only_at_full_weight() -> None:
    assert _of("remind me").weights == (1.0,)


def test_it_asks_about_the_user_when_the_question_says_the_user() -> None:
    live = _of("where does the user live?")
    assert live.terms == ("user", "live", "moved", "home", "based")
    assert live.attributes == (("lives in", None),)
    assert live.roles == frozenset({"user"})


def test_a_third_person_question_naming_someone_is_not_about_the_user() -> None:
    query = "What are Caroline's hobbies?"
    assert names_someone(query) is True
    assert names_someone("What are his hobbies? I forget") is False
    words, terms = query_words(query), query_terms(query)
    assert search_query(words=words, terms=terms, named=True).roles == frozenset()


def test_a_question_naming_no_category_searches_its_own_words_only() -> None:
    assert _of("When did Caroline go to the LGBTQ support group?") == SearchQuery(
        terms=("caroline", "go", "lgbtq", "support", "group"), weights=(1.0,) * 5
    )


def test_a_question_for_a_name_looks_up_the_name_attribute() -> None:
    name = _of("what is my name?")
    assert (name.terms, name.weights, name.attributes, name.roles) == (
        ("name",), (1.0,), (("name", None),), frozenset({"user"})
    )


def test_it_tells_the_names_a_query_gives_and_facts_about_someone_else() -> None:
    assert names_in("how old is Tom?") == {"tom"}
    assert names_in("What is Daniel's job? I forget") == {"daniel"}
    assert names_in("How old am I?") == frozenset()
    assert about_someone_else("Lily", "Lily is 8.", frozenset({"tom"})) is True
    assert about_someone_else("Lily", "Lily and Tom are twins.", frozenset({"tom"})) is False
    assert about_someone_else("user", "The user is 40.", frozenset({"tom"})) is False
    query = search_query(words=["how", "old", "is", "tom"], terms=["old", "tom"], named=True)
    assert asks_attribute(query, "age") is True
    assert asks_attribute(query, "job") is False


def test_a_question_for_languages_looks_up_those_spoken_native_and_learned() -> None:
    languages = _of("What languages does she speak?")
    assert languages.terms == ("languages", "speak", "fluent", "language")
    assert languages.weights == (1.0, 1.0, 0.5, 0.5)
    assert languages.attributes == (("speaks", None), ("native language", None), ("learning", None))
