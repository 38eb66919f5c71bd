"""Conversations that open with a title and a section, as QA dialogues do ("Title. Section." or
"Title — Section"), and the expletive "it" (#34 item 2). Invented conversations."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn

U, A = "user", "assistant"


def test_a_one_word_title_is_the_subject_not_the_section() -> None:
    history = [Turn(role=U, text="Kwalasi — Beginnings"),
               Turn(role=A, text="The group came together in 1981 in a refugee camp near the border.")]
    said = form("did they tour abroad?", history)
    assert "Kwalasi" in said and "Beginnings" not in said, said


def test_a_disambiguator_after_the_title_is_not_the_subject() -> None:
    history = [Turn(role=U, text="Mist (band). Members."),
               Turn(role=A, text="The first line-up had four players from Leeds.")]
    said = form("who sang for them?", history)
    assert "Mist" in said and "band" not in said.lower(), said


def test_it_takes_the_work_a_section_names_not_the_person_of_the_title() -> None:
    history = [Turn(role=U, text="Mara Quell. Glass Harbour."),
               Turn(role=A, text="Glass Harbour is the second novel by the writer, published in 1961.")]
    said = form("how was it received?", history)
    assert said.startswith("how was Glass Harbour received"), said


def test_a_question_turn_is_no_title() -> None:
    history = [Turn(role=U, text="Where is the Glass Harbour lighthouse?"),
               Turn(role=A, text="On the north cape, a short walk from the ferry.")]
    said = form("when was it built?", history)
    assert "lighthouse" in said, said


def test_the_it_of_is_it_true_stays_as_typed() -> None:
    history = [Turn(role=U, text="Mara Quell. Glass Harbour."),
               Turn(role=A, text="She wrote most of the book in a rented room in Oslo.")]
    said = form("Is it true she burned the first draft?", history)
    assert said.startswith("Is it true Mara Quell burned"), said


def test_a_referential_it_is_still_resolved_after_is() -> None:
    history = [Turn(role=U, text="Tell me about the Varnel Bridge."),
               Turn(role=A, text="It crosses the river in three spans and opened in 1932.")]
    said = form("is it still open to traffic?", history)
    assert "Varnel Bridge" in said, said


def test_a_title_that_names_a_catalog_product_keeps_the_product() -> None:
    from querywise.catalog import Catalog, Entity
    from querywise.understand.followup import check_follow_up, standalone_form

    catalog = Catalog([Entity("x3", "Vela X3"), Entity("buds", "Pico Buds")])
    history = [Turn(role=U, text="Vela X3. Warranty."),
               Turn(role=A, text="The warranty runs for two years from the date of purchase.")]
    gate = check_follow_up("does it cover water damage?", history, catalog=catalog)
    said = standalone_form("does it cover water damage?", history, gate, catalog=catalog)
    assert "Vela X3" in said.text and [r.key for r in said.referents] == [("entity", "x3")], said


def test_the_section_follows_a_question_that_says_nothing_of_its_own() -> None:
    history = [Turn(role=U, text="Mara Quell — 1958 Winter Games"),
               Turn(role=A, text="She arrived as the youngest skater on the team.")]
    assert form("why did she withdraw?", history).endswith("1958 Winter Games")


def test_a_question_naming_someone_new_leaves_the_section_out() -> None:
    history = [Turn(role=U, text="Mara Quell — 1958 Winter Games"),
               Turn(role=A, text="She trained with Tom Brandt before the season began.")]
    said = form("Who was Tom Brandt to her?", history)
    assert "Brandt" in said and "Winter" not in said, said


def test_a_heading_an_answer_writes_as_a_name_follows_the_questions() -> None:
    history = [Turn(role=U, text="Harbour City F.C. Tolvik ferry disaster"),
               Turn(role=A, text="The ferry carrying the squad sank off the Tolvik coast in a storm.")]
    said = form("How many of the players survived?", history)
    assert "Tolvik ferry disaster" in said, said


def test_a_heading_no_answer_writes_as_a_name_stays_out() -> None:
    history = [Turn(role=U, text="Harbour City F.C. Early years"),
               Turn(role=A, text="Early on the club played on a field behind the docks, and in 1903 it joined a league.")]
    said = form("who was the first manager?", history)
    assert "Early" not in said and "years" not in said, said
