"""The rewrite guard: nothing lost, nothing invented, longest name first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from growth import grows_linearly

from querywise.catalog import Catalog, Entity
from querywise.checks.guard import GuardResult, check_rewrite, terms
from querywise.demo import demo_file

DEMO = Path(__file__).resolve().parents[2] / "src" / "querywise" / "demo"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load(DEMO / "catalog.jsonl")


def _texts(text: str, **kw: object) -> list[str]:
    return [t.text for t in terms(text, **kw)]  # type: ignore[arg-type]


def test_identifiers_any_case_reported_upper_with_hyphen() -> None:
    assert _texts("is hc3471 or Hc-3417 in stock?") == ["HC-3471", "HC-3417"]


def test_identifier_survives_a_change_of_case_and_hyphen() -> None:
    assert check_rewrite("is hc3471 in stock", "Is HC-3471 in stock?", []).ok


def test_lost_identifier() -> None:
    result = check_rewrite(
        "Is HC-3471 in stock?", "Are Solace 7 Pro ear cushions in stock?", ["Cushions for the Solace 7 Pro?"]
    )
    assert result == GuardResult(ok=False, lost=("HC-3471",), invented=())
    assert result.reason == "lost 'HC-3471'"


def test_configurable_identifier_patterns() -> None:
    # Order numbers as identifiers: an 8-digit run.
    patterns = (r"\b\d{8}\b",)
    assert _texts("where is order 40128833?", identifier_patterns=patterns) == ["40128833"]
    result = check_rewrite("where is order 40128833?", "where is my order?", [], identifier_patterns=patterns)
    assert result.lost == ("40128833",)


def test_numbers_keep_units_as_written_and_compare_by_value() -> None:
    assert _texts("a 12-month warranty for under $200, 22mm strap") == ["12-month", "200", "22mm"]
    assert check_rewrite("is the 12-month warranty transferable?", "Is the 12 months warranty transferable?", []).ok
    assert check_rewrite("is the 12-month warranty transferable?", "Is the warranty transferable?", []).lost == (
        "12-month",
    )


def test_invented_number() -> None:
    result = check_rewrite("how long is the warranty?", "How long is the 30-month warranty?", ["Solace 7 Pro?"])
    assert result.invented == ("30-month",)


def test_number_from_the_history_is_not_invented() -> None:
    result = check_rewrite(
        "can I still change the address?",
        "Can I still change the address on order 40128833?",
        ["My order 40128833 hasn't arrived"],
    )
    assert result.ok


def test_digits_inside_an_identifier_are_not_a_separate_number() -> None:
    assert [t.kind for t in terms("Is HC-3417 in stock?")] == ["identifier"]


def test_catalog_names_are_reported_as_written(catalog: Catalog) -> None:
    assert _texts("does the s7 pro fold?", catalog=catalog) == ["s7 pro"]


def test_longer_name_in_the_rewrite_is_invented(catalog: Catalog) -> None:
    result = check_rewrite(
        "does it cover water damage?",
        "Does the Solace 7 Pro warranty cover water damage?",
        ["What's the warranty on the Solace 7?"],
        catalog=catalog,
    )
    assert result == GuardResult(ok=False, lost=(), invented=("Solace 7 Pro",))


def test_shorter_name_in_the_rewrite_loses_the_longer(catalog: Catalog) -> None:
    result = check_rewrite("does the Solace 7 Pro fold?", "Does the Solace 7 fold?", [], catalog=catalog)
    assert result.lost == ("Solace 7 Pro",)
    assert result.invented == ("Solace 7",)


def test_any_name_of_the_same_product_keeps_it(catalog: Catalog) -> None:
    assert check_rewrite("does the S7 Pro fold?", "Does the Halden Solace 7 Pro fold?", [], catalog=catalog).ok


def test_shared_alias_may_be_resolved_only_from_the_history(catalog: Catalog) -> None:
    # "S7" names both the Solace 7 and the Solace 7 Pro: the rewrite may pick one only if it was said.
    message, rewrite = "how long does the S7 battery last?", "How long does the Solace 7 Pro battery last?"
    assert check_rewrite(message, rewrite, ["I bought the Solace 7 Pro"], catalog=catalog).ok
    assert check_rewrite(message, rewrite, [], catalog=catalog).invented == ("Solace 7 Pro",)
    # The other way round, going from one product to the alias of two, loses the product.
    assert check_rewrite(rewrite, message, [], catalog=catalog).lost == ("Solace 7 Pro",)


def test_a_name_completed_by_the_users_words_is_not_invented(catalog: Catalog) -> None:
    history = ["How long is the warranty on the Halden Solace 7?"]
    rewrite = "How long is the warranty on the Halden Solace 7 Pro?"
    assert check_rewrite("And the Pro?", rewrite, history, catalog=catalog).ok
    assert check_rewrite("And the Pro?", rewrite, history).ok
    # Nobody said "Lite".
    assert check_rewrite("And the Pro?", "How long is the warranty on the Solace 7 Lite?", history).invented == (
        "Solace 7 Lite",
    )


def test_product_named_by_its_part_number_in_the_history(catalog: Catalog) -> None:
    result = check_rewrite(
        "do they fit the Solace 7 Lite?",
        "Do the Solace 7 Ear Cushions fit the Solace 7 Lite?",
        ["Is HC-3417 in stock?"],
        catalog=catalog,
    )
    assert result.ok


def test_without_catalog_capitalised_names_count() -> None:
    assert _texts("Does Steadfast Protection cover the Solace 7 Pro in Washington D.C.?") == [
        "Steadfast Protection",
        "Solace 7 Pro",
        "Washington D.C.",
    ]
    # Sentence-initial function words and a lone capital word are not names.
    assert _texts("What is Steadfast? Can I add it?") == []


def test_without_catalog_longest_first_still_holds() -> None:
    history = ["Is the Knoll Mini speaker loud?"]
    assert check_rewrite("How long does it play?", "How long does the Knoll Mini speaker play?", history).ok
    result = check_rewrite("How long does it play?", "How long does the Knoll Mini 2 speaker play?", history)
    assert result.invented == ("Knoll Mini 2",)


def test_plural_and_possessive_are_not_losses() -> None:
    assert check_rewrite("How tall is a Great Dane?", "How tall are Great Danes?", []).ok
    assert check_rewrite("Who founded Red Bull?", "Who founded Red Bull's company?", []).ok


@pytest.mark.parametrize("with_catalog", [True, False])
def test_every_demo_human_rewrite_passes(catalog: Catalog, with_catalog: bool) -> None:
    for line in (DEMO / "rewrites.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        result = check_rewrite(
            row["message"], row["standalone"], row["history"], catalog=catalog if with_catalog else None
        )
        assert result.ok, (row["standalone"], result.reason)


def test_catalog_built_in_code_reports_the_surface_form() -> None:
    cat = Catalog([Entity("v3", "Vela X3"), Entity("v3p", "Vela X3 Pro")])
    result = check_rewrite("is it foldable?", "Is the vela x3 pro foldable?", ["Vela X3 sizes"], catalog=cat)
    assert result == GuardResult(ok=False, lost=(), invented=("vela x3 pro",))


def test_names_do_not_run_across_sentences() -> None:
    """The deterministic standalone form joins two turns; no name spans the join."""
    assert check_rewrite("How can I request?", "Yes. How can I request?", ["Yes"]).ok
    assert check_rewrite("Yes, I do.", "I live in NY. Yes, I do.", ["I live in NY."]).ok
    assert check_rewrite("Yes.", "My husband is a Veteran. Yes.", ["My husband is a Veteran."]).ok


# --- bounded time (issue #12) ---------------------------------------------------------------------


def test_a_rewrite_longer_than_the_guard_reads_is_rejected_unread() -> None:
    result = check_rewrite("is it covered?", "Is the Solace 7 covered? " * 1_000, ["Solace 7 warranty"], max_chars=10_000)
    assert not result.ok and result.lost == () and result.invented == ("25,000 characters unread",)
    assert result.reason == "rewrite of 25,000 characters is longer than the guard reads (10,000, [limits] max_rewrite_chars)"
    assert check_rewrite("is it covered?", "Is the Solace 7 covered?", ["Solace 7 warranty"], max_chars=24).ok


@pytest.mark.parametrize("unit", ["HC-3417 ", "1,", "Ab Cd ", "Solace 7 Pro ", "1 ", "ET-", "Ａb Ｃd "])
@pytest.mark.parametrize("with_catalog", [True, False])
def test_the_guard_is_linear_in_its_texts(unit: str, with_catalog: bool) -> None:
    # "HC-3417 " * 12,500 no longer rescans taken spans, mentions and names for every term.
    catalog = Catalog.load(demo_file("catalog.jsonl")) if with_catalog else None

    def check(size: int) -> GuardResult:
        text = (unit * (size // len(unit) + 1))[:size]
        return check_rewrite(text, f"{text}. {text}", [text], catalog=catalog, max_chars=10**9)

    result = grows_linearly(check, 40_000)
    assert isinstance(result, GuardResult) and result.lost == ()


# --- text as people write it (issue #34) -----------------------------------------------------------


def test_a_name_at_a_sentence_end_is_said_whole() -> None:
    assert check_rewrite("Who directed it?", "Who directed Pulp Fiction?", ["I just watched Pulp Fiction. Great film."]).ok
    history = ["Arthur Irwin. Early roles", "He coached at the University."]
    assert check_rewrite("Where did he attend school?", "Where did Arthur Irwin attend school?", history).ok


def test_a_word_that_only_starts_the_sentence_is_not_part_of_the_name() -> None:
    assert check_rewrite("Besides Roger Clemens, who pitched?", "Other than Roger Clemens, who pitched for the Yankees?", ["Yankees pitchers"]).ok
    assert check_rewrite("who else?", "Besides Roger Clemens, who else pitched?", ["Roger Clemens pitched for the Yankees"]).ok
    assert check_rewrite("Besides USA, which countries?", "Which countries other than the USA won medals?", ["medals"]).ok


def test_initials_and_abbreviations_end_no_sentence() -> None:
    assert _texts("Where was Joseph S. Cook born?") == ["Joseph S. Cook"]
    assert check_rewrite("Where was he born?", "Where was Joseph S. Cook born?", ["Joseph S. Cook. Early life"]).ok
    assert _texts("Did Dr. Ruth Westheimer write it?") == ["Dr. Ruth Westheimer"]


def test_a_name_without_its_legal_or_club_form_is_the_same_name() -> None:
    assert check_rewrite("When did they win the league?", "When did Leeds United win the league?", ["Leeds United F.C. History"]).ok
    assert check_rewrite("Who ran it?", "Who ran Halden Audio?", ["Halden Audio Ltd. was founded in 1990."]).ok
    # a longer name is still another name: "Solace 7" is not the "Solace 7 Pro" said
    assert not check_rewrite("Is it waterproof?", "Is the Solace 7 waterproof?", ["Tell me about the Solace 7 Pro."]).ok


def test_a_name_written_in_another_case_is_the_same_name() -> None:
    assert check_rewrite("What caused it?", "What caused the English Civil war?", ["Tell me about the English Civil War."]).ok
    assert check_rewrite("What caused the English Civil War?", "What caused the English Civil war?", []).ok


def test_ordinals_and_number_words_are_their_numbers() -> None:
    assert check_rewrite("Who won the 1st match?", "Who won the first match of the Ashes?", ["the Ashes"]).ok
    assert check_rewrite("What about the first one?", "What about the 1st Ashes test?", ["the Ashes"]).ok
    assert check_rewrite("Are there two versions?", "Are there 2 versions of the Aero X2?", ["Aero X2"]).ok
    assert check_rewrite("Are there two versions?", "Are there 3 versions of the Aero X2?", ["Aero X2"]).invented == ("3",)


def test_a_possessive_ends_the_name_before_it() -> None:
    history = ["What made Shirley Collins's Anthems in Eden unusual?"]
    assert check_rewrite("why did she stop singing?", "Why did Shirley Collins stop singing?", history).ok
    assert check_rewrite("Wasn't Joshua Bell's stolen?", "Wasn't Joshua Bell's Stradivarius stolen?", ["Joshua Bell plays a Stradivarius."]).ok
    # a name in any alphabet
    assert check_rewrite("why did he stop?", "Why did Tom Zé stop?", ["What made Tom Zé's Estudando o Samba unusual?"]).ok


def test_a_contraction_that_starts_the_sentence_is_not_part_of_the_name() -> None:
    assert _texts("Isn't Samuel Langley the one?") == ["Samuel Langley"]
    assert _texts("What’s Hedy Lamarr known for?") == ["Hedy Lamarr"]
    assert check_rewrite("isn't he the guy?", "Isn't Samuel Langley the guy?", ["Samuel Langley flew a model."]).ok


def test_a_name_without_its_middle_name_is_the_same_name() -> None:
    history = ["The American astronomer Samuel Pierpont Langley invented it in 1878."]
    assert check_rewrite("what did he use it for", "What did Samuel Langley use the bolometer for?", [*history, "the bolometer"]).ok
    # words of two different names are not one name; a left-out number makes another product
    assert check_rewrite("who is she?", "Who is Mary Smith?", ["Mary Ann Jones met John Smith."]).invented == ("Mary Smith",)
    assert check_rewrite("is it waterproof?", "Is the Aero Pro waterproof?", ["Tell me about the Aero X2 Pro."]).invented == ("Aero Pro",)


def test_decades_and_thousands_as_people_shorten_them() -> None:
    assert check_rewrite("who was best in the 70s", "Who was the Jets' best player in the 1970s?", ["the Winnipeg Jets"]).ok
    assert check_rewrite("and then?", "What happened in the '70s?", ["Tell me about the 1970s."]).ok
    assert check_rewrite("odds with £8k?", "What are the odds of a prize with £8,000?", []).ok
    assert check_rewrite("odds with £8,000?", "What are the odds of a prize with £8k?", []).ok
    assert check_rewrite("a 2500k budget?", "Is a 2,500,000 budget enough?", []).ok
    assert check_rewrite("a 1.5k budget?", "Is a 1,500 budget enough?", []).ok
    # another decade, or a plain 70 made a decade, is invented; so is another amount
    assert check_rewrite("and then?", "What happened in the 1980s?", ["the 70s"]).invented == ("1980s",)
    assert check_rewrite("and then?", "What happened in the 1970s?", ["70 players"]).invented == ("1970s",)
    assert check_rewrite("and then?", "What happened in the 1870s?", ["the 1970s"]).invented == ("1870s",)
    assert check_rewrite("odds with £8k?", "What are the odds of a prize with £9,000?", []).lost == ("8k",)


def test_a_name_spelled_out_is_not_invented() -> None:
    assert check_rewrite("Who was the leader?", "Who was the leader of the Grateful Dead?", ["Why were the Dead so influential?"]).ok
    assert check_rewrite("What was Boeing's answer?", "What was Boeing's answer to the Airbus A380?", ["Why did the A380 stop?"]).ok
    assert check_rewrite("And Jared?", "Does the public pay Jared Kushner?", ["What about Jared?"]).ok
    assert check_rewrite("How does it compare?", "How does Tokyo compare to New York City?", ["Tokyo or NYC?"]).ok


def test_what_reading_people_does_not_let_through() -> None:
    # A swapped product, a dropped identifier, an invented number, a model's variant.
    history = ["Compare the Aero X2 and the Pulse Buds."]
    assert check_rewrite("does it fold?", "Does the Knoll Mini fold?", history).invented == ("Knoll Mini",)
    assert check_rewrite("Is XK-4471 in stock?", "Are Aero X2 ear cushions in stock?", history).lost == ("XK-4471",)
    assert check_rewrite("how long is the warranty?", "How long is the 30-month warranty?", history).invented == ("30-month",)
    assert check_rewrite("and the Pro?", "Does the Aero X2 Pro fold?", ["Does the Aero X2 fold?"]).ok  # every word said
    assert check_rewrite("does it fold?", "Does the Aero X2 Pro fold?", ["Does the Aero X2 fold?"]).invented == ("Aero X2 Pro",)


def test_a_variant_named_by_its_base_product_and_the_words_the_user_added(catalog: Catalog) -> None:
    """"the Solace 7", then "And the Pro?", then "and the Lite?": each ellipsis names a product whose
    every word was said, its maker's name coming with the base product's catalog entry."""
    history = ["How long is the Solace 7 warranty?", "And the Pro?"]
    assert check_rewrite("and the Lite?", "How long is the Halden Solace 7 Lite warranty?", history, catalog=catalog).ok
    assert check_rewrite("And the Pro?", "How long is the Halden Solace 7 Pro warranty?", history[:1], catalog=catalog).ok
    # a variant nobody asked for is still a swapped product
    assert check_rewrite("is it covered?", "Is the Halden Solace 7 Pro covered?", ["Solace 7 warranty"], catalog=catalog).invented == ("Halden Solace 7 Pro",)
    assert not check_rewrite("and the Lite?", "How long is the Corra Tide 4 Lite warranty?", history, catalog=catalog).ok  # another base
