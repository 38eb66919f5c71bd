"""A definite noun phrase whose head only the answer names, inside a longer noun phrase ("the
railway" after "... the Flam mountain railway ..."): the standalone form names it in full, and
leaves the message alone when the answer builds two compounds on the head, the user said the
head, or the numbers disagree."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.text import analyze
from querywise.understand.followup.answer_heads import answer_head, compounds

U, A = "user", "assistant"

NORWAY = [
    Turn(role=U, text="What should I see on a road trip through western Norway?"),
    Turn(role=A, text="Most itineraries start in Bergen and follow the coast north. Highlights include the Flam mountain railway, "
                      "which climbs 860 metres in twenty kilometres, and the Trolltunga rock ledge, a full day's hike from Odda. "
                      "The railway is busiest in July."),
]


def test_a_head_only_the_answer_names_takes_the_answers_modifiers() -> None:
    # The subject the tracker gives stays beside it: the compound describes, the talk is about western Norway.
    assert form("How long does the railway take?", NORWAY) == "How long does the Flam mountain railway take? western Norway"
    assert form("Is the ledge safe for children?", NORWAY) == "Is the Trolltunga rock ledge safe for children? western Norway"


def test_the_messages_own_modifiers_must_end_the_answers_compound() -> None:
    assert form("Is the mountain railway open in winter?", NORWAY) == "Is the Flam mountain railway open in winter? western Norway"
    assert answer_head("Is the coast railway open in winter?", [NORWAY[1].text], set()) is None
    # A phrase with its own "of" complement is anchored by it, not by the answer.
    assert answer_head("Who owns the railway of Bergen?", [NORWAY[1].text], set()) is None


def test_two_compounds_on_the_head_leave_the_message_alone() -> None:
    answer = "The fjords most people visit are the Naeroy fjord, narrow and steep, and the Geiranger fjord, with its waterfalls."
    assert answer_head("How deep is the fjord?", [answer], set()) is None
    history = [Turn(role=U, text="Which fjords in Norway are worth a visit?"), Turn(role=A, text=answer)]
    assert "Geiranger" not in form("How deep is the fjord?", history)
    assert "Naeroy" not in form("How deep is the fjord?", history)


def test_a_head_the_user_said_is_the_users_own_thing() -> None:
    asked = set(analyze("Which railway lines in Norway are scenic?"))
    assert answer_head("How long is the railway?", [NORWAY[1].text], asked) is None
    # ... and a head the message itself said before its phrase has its antecedent there.
    answer = "You may also qualify for Social Security benefits through your spouse's record."
    assert answer_head("I already get disability benefits. Will my wife get those benefits?", [answer], set()) is None
    found = answer_head("Will my wife get those benefits?", [answer], set())
    assert found is not None and found[2] == "the Social Security benefits"


def test_the_x_one_takes_the_one_noun_x_modifies_in_the_answer() -> None:
    answer = "For a slow braise, choose cuts with plenty of connective tissue, such as beef chuck or lamb shank, and cook them for hours."
    found = answer_head("How long does the lamb one take?", [answer], set())
    assert found is not None and found[2] == "the lamb shank"
    two = "For a slow braise, choose beef chuck, beef brisket or lamb shank."
    assert answer_head("How long does the beef one take?", [two], set()) is None


def test_a_name_keeps_its_capitalised_adjectives_and_a_possessive_stands_for_the_article() -> None:
    answer = "The best glacier hikes are on New Zealand's South Island, where the Fox and Franz Josef glaciers reach the rainforest."
    found = answer_head("Is the island warmer in March?", [answer], set())
    assert found is not None and found[2] == "New Zealand's South Island"
    # "the Fox and Franz Josef glaciers" are two: "the glaciers" is not one of them.
    assert answer_head("How fast do the glaciers move?", [answer], set()) is None


def test_numbers_must_agree() -> None:
    answer = "You can call a DMV service center or book an appointment online."
    assert answer_head("Where are the centers?", [answer], set()) is None
    assert answer_head("Where is the center?", [answer], set()) is not None


def test_a_run_of_words_opening_a_sentence_or_holding_an_adjective_is_no_compound() -> None:
    found = [c.text for c in compounds("Controllers spread writes evenly across the flash cells. It is a new tool for the thermal design.")]
    assert found == ["flash cells"]


def test_an_earlier_answer_is_read_only_when_the_latest_does_not_use_the_head() -> None:
    history = [*NORWAY, Turn(role=U, text="Do I need to book ahead?"),
               Turn(role=A, text="In summer, yes: seats sell out weeks ahead, and hotels in Flam fill up early.")]
    assert form("Can I take a bike on the railway?", history) == "Can I take a bike on the Flam mountain railway? western Norway"
    later = [*history, Turn(role=U, text="And in winter?"), Turn(role=A, text="In winter the railway runs four times a day.")]
    assert "mountain" not in form("Is the railway heated?", later)  # the latest answer says "the railway" alone
    # An adverb after the head ("your application electronically") still leaves the head a head there.
    older, latest = "You can submit online, or print a paper application for submission by mail.", "Did you submit your application electronically?"
    assert answer_head("Yes, I have submitted the application.", [older, latest], set()) is None
    assert answer_head("Yes, I have submitted the application.", [older], set()) is not None


def test_the_messages_modifiers_may_be_fewer_than_the_compounds_and_it_may_open_a_sentence() -> None:
    answer = "Hardware security keys, small USB or NFC devices, hold a private key that never leaves them."
    found = answer_head("How do the hardware keys work?", [answer], set())
    assert found is not None and found[2] == "the hardware security keys"
    # At a sentence's start before a word that is no auxiliary, a run is as often a subject and its verb.
    assert answer_head("Can I temper the compound stuff?", ["Compound chocolate sets at a lower temperature."], set()) is None


def test_thing_and_stuff_stand_for_a_noun_as_one_does() -> None:
    answer = "For a dog travelling to Ireland, a vet must give a tapeworm treatment between one and five days before arrival."
    found = answer_head("What about the tapeworm thing, do we need it?", [answer], set())
    assert found is not None and found[2] == "the tapeworm treatment"
    grout = "For a shower floor, many tilers now choose an epoxy grout, which resists stains better."
    found = answer_head("Is the grout thing hard to apply?", [grout], set())
    assert found is not None and found[2] == "the epoxy grout"


def test_the_x_one_repeats_the_answers_adjectives_before_its_noun() -> None:
    answer = "Several native species are in decline, and the rusty patched bumblebee, once common in the Midwest, is now endangered."
    found = answer_head("Is the rusty patched one recovering?", [answer], set())
    assert found is not None and found[2] == "the rusty patched bumblebee"
    # Before an article the run's last word is its verb, not part of the name.
    verb = "In 2019 the spotted marsh orchid became the first plant on the list."
    assert (found := answer_head("Is the spotted marsh one protected?", [verb], set())) is not None and found[2] == "the spotted marsh orchid"
    # An ordinal points into a list (`answer_refs`), and a name is no noun "one" stands for.
    assert answer_head("Is the first one recovering?", ["The first bumblebee surveys began in 1990."], set()) is None
    assert answer_head("Is the Ferber one safe?", ["Methods such as the one by Richard Ferber use timed checks."], set()) is None


def test_a_list_after_including_holds_compounds() -> None:
    answer = "Colony losses come from a combination of stresses, including Varroa mites, viruses and poor forage."
    found = answer_head("How do beekeepers fight the mites?", [answer], set())
    assert found is not None and found[2] == "the Varroa mites"


def test_a_run_after_a_modal_opens_on_its_verb() -> None:
    answer = "If stretching does not help, doctors may offer corticosteroid injections, though relief is often short."
    found = answer_head("Are the injections risky?", [answer], set())
    assert found is not None and found[2] == "the corticosteroid injections"
    # After "be" the run is a noun phrase of its own: no word of it is dropped as a verb.
    assert [c.text for c in compounds("The usual treatment is heel pad taping.")] == []
