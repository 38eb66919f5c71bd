"""The deterministic standalone form: the conversation's referent carried into a follow-up."""

from __future__ import annotations

import pytest

from querywise.catalog import Catalog
from querywise.checks.guard import check_rewrite
from querywise.conversation import Turn
from querywise.demo import demo_file
from querywise.understand.followup import check_follow_up, standalone_form
from querywise.understand.followup.message import Message
from querywise.understand.followup.referent import noun_phrases
from querywise.understand.followup.tracker import Tracker

CATALOG = Catalog.load(demo_file("catalog.jsonl"))


def form(message: str, history: list[str | Turn], catalog: Catalog | None = None) -> str:
    gate = check_follow_up(message, history, catalog=catalog)
    assert gate.needs_context, gate
    return standalone_form(message, history, gate, catalog=catalog).text


def test_a_pronoun_two_turns_later_is_the_entity_the_ellipsis_named() -> None:
    history: list[str | Turn] = ["How long is the warranty on the Halden Solace 7?", "And the Pro?"]
    # "the Pro" after the Solace 7 is the Solace 7 Pro: the catalog knows "Solace 7 Pro"
    assert form("does it cover water damage?", history, CATALOG) == "does the Halden Solace 7 Pro cover water damage?"
    history.append("does it cover water damage?")
    assert form("how do i do a firmwear update on it", history, CATALOG) == "how do i do a firmwear update on the Halden Solace 7 Pro"


def test_an_elliptical_opener_asks_the_previous_question_of_the_new_subject() -> None:
    made = standalone_form("And the Pro?", ["How long is the warranty on the Halden Solace 7?"],
                           check_follow_up("And the Pro?", ["x"], catalog=CATALOG), catalog=CATALOG)
    assert (made.method, made.text) == ("ellipsis", "How long is the warranty on the Halden Solace 7 Pro?")


def test_the_subject_of_the_first_turn_survives_a_chain_of_pronouns_without_a_catalog() -> None:
    history: list[str | Turn] = ["What is glacier calving?"]
    assert form("Is it dangerous?", history) == "Is glacier calving dangerous?"
    history.append("Is it dangerous?")
    assert form("What causes it?", history) == "What causes glacier calving?"
    history.append("What causes it?")
    assert form("What are its warning signs?", history) == "What are glacier calving's warning signs?"


def test_a_new_topic_takes_the_pronoun_and_the_number_must_agree() -> None:
    history: list[str | Turn] = ["Tell me about coral reefs.", "What is reef bleaching?"]
    assert form("How can it be stopped?", history) == "How can reef bleaching be stopped?"
    assert form("Where do they grow?", history) == "Where do coral reefs grow?"


def test_a_pair_joined_by_and_is_what_they_names() -> None:
    assert form("What did they discover?", ["Who were Watson and Crick?"]) == "What did Watson and Crick discover?"


def test_a_description_gets_the_topic_appended_and_of_complements_come_first() -> None:
    made = standalone_form("Where does the term come from?", ["Tell me about the history of lighthouses."],
                           check_follow_up("Where does the term come from?", ["Tell me about the history of lighthouses."]))
    assert (made.method, made.text) == ("appended", "Where does the term come from? lighthouses")


def test_a_turn_with_no_content_is_never_the_referent() -> None:
    tracker = Tracker()
    tracker.read("thanks!")
    tracker.read("ok")
    assert tracker.referents == {}
    made = standalone_form("is it waterproof?", ["thanks!"], check_follow_up("is it waterproof?", ["thanks!"]))
    assert (made.method, made.text) == ("previous_turn", "thanks! is it waterproof?")  # today's form, and the trace says so
    assert "no referent" in made.why


def test_an_answers_sentences_are_never_the_referent_without_a_catalog() -> None:
    # Without a catalog an answer's phrases are bits of its sentences: the pronoun keeps the
    # subject the user named, and the answer is searched beside the form instead.
    history = [Turn(text="Tell me about the Panama Canal."), Turn(role="assistant", text="Construction finished in 1914.")]
    assert form("Who designed it?", history) == "Who designed the Panama Canal?"
    history = [Turn(text="Frank Zappa. Early career"), Turn(role="assistant", text="Plants use sunlight and massive star collapses.")]
    assert "Frank Zappa" in form("What did he do next?", history) and "Plants" not in form("What did he do next?", history)


def test_she_is_a_person_not_the_institution_or_prize_an_answer_named() -> None:
    history = [Turn(text="Marie Curie. Later life"), Turn(text="Where did she work after the war?"),
               Turn(role="assistant", text="She headed the Radium Institute in Paris."), Turn(text="Did she win any awards?"),
               Turn(role="assistant", text="She received the Nobel Prize in Chemistry in 1911.")]
    assert form("What illness did she have?", history) == "What illness did Marie Curie have?"
    # a definite or plural name is no person either, even when the user said it
    assert form("When did he die?", ["Tell me about Brian Epstein.", "What did the Beatles record in 1967?"]).startswith("When did Brian Epstein die?")


@pytest.mark.parametrize(("text", "phrase"), [
    ("What is the Great Barrier Reef?", "Great Barrier Reef"),  # "great" is also a reaction ("Great!")
    ("Was it Brian Epstein?", "Brian Epstein"),  # not the verb after "it", nor the yes/no predicate
    ("Is it in Italy?", "Italy"),  # not an adverb in -ly
])
def test_a_capital_inside_a_sentence_keeps_its_word_in_the_name(text: str, phrase: str) -> None:
    assert [p.words for p in noun_phrases(Message(text, []))] == [phrase]


def test_a_year_is_never_what_a_pronoun_stands_for() -> None:
    history: list[str | Turn] = ["What is the Great Barrier Reef?", "What happened in 1998?"]
    assert form("How old is it?", history) == "How old is the Great Barrier Reef?"  # not "How old is 1998?"


def test_a_name_the_assistant_said_is_the_referent_and_its_answer_is_searched_beside() -> None:
    history = [Turn(text="Which headphones last longest?"), Turn(role="assistant", text="The Halden Solace 7 Pro lasts 50 hours.")]
    made = standalone_form("does it fold?", history, check_follow_up("does it fold?", history, catalog=CATALOG), catalog=CATALOG)
    assert made.text == "does the Halden Solace 7 Pro fold?"
    assert made.answer == "The Halden Solace 7 Pro lasts 50 hours."  # searched beside the form, never in it
    assert [r.text for r in made.referents] == ["Halden Solace 7 Pro"] and "answer searched beside" in made.why


def test_noun_phrases_leave_out_the_verbs_the_sentence_shape_gives_away() -> None:
    said = [p.words for p in noun_phrases(Message("What causes throat cancer?", []))]
    assert said == ["throat cancer"]
    assert [p.words for p in noun_phrases(Message("How does photosynthesis work?", []))] == ["photosynthesis"]
    assert [p.words for p in noun_phrases(Message("Is tap water drinkable?", []))] == ["tap water"]
    tied = noun_phrases(Message("How long is the warranty on the Vela X3 headphones?", []))
    assert tied[0].words == "warranty on the Vela X3 headphones"  # a common noun tied to a name


def test_greetings_and_the_words_of_asking_are_never_the_referent() -> None:
    history: list[str | Turn] = ["Good afternoon. I have questions about the return window."]
    assert form("how long is it?", history) == "how long is the return window?"
    assert [p.words for p in noun_phrases(Message("Hello, can you tell me something?", []))] == []


def test_a_predicate_adjective_is_no_noun_phrase() -> None:
    said = [p.words for p in noun_phrases(Message("I need to know if my family members are eligible for increased benefits", []))]
    assert said == ["increased benefits"]  # not "eligible"


# --- the conversation's subject kept (issue #34) ---------------------------------------------------


def test_the_subject_is_kept_when_the_message_names_nothing_of_its_own() -> None:
    history: list[str | Turn] = ["Can I have some information on the labor systems of the Ottoman Empire?", "What was the role of slavery?"]
    assert form("What was the culture like?", history) == "What was the culture like? the Ottoman Empire"


def test_a_person_pronoun_takes_the_person_not_what_they_own() -> None:
    history: list[str | Turn] = ["What is Melania Trump's religion?"]
    assert form("What did she do before she was married?", history) == "What did Melania Trump do before she was married?"


def test_a_referent_is_named_once_and_later_pronouns_of_it_stay_as_typed() -> None:
    history = [Turn(role="user", text="Who was Mahalia Jackson?"), Turn(role="assistant", text="Mahalia Jackson was a gospel singer from New Orleans.")]
    assert form("who gave her her first record deal", history) == "who gave Mahalia Jackson her first record deal"
    assert form("How was she received when she toured Europe?", history) == "How was Mahalia Jackson received when she toured Europe?"


def test_two_arguments_of_one_clause_never_take_the_same_referent() -> None:
    history = [Turn(role="user", text="Tell me about the Panama Canal."), Turn(role="assistant", text="The Panama Canal opened in 1914 after ten years of work.")]
    text = form("How did they dig it?", history)
    assert text.count("Panama Canal") == 1  # not "How did the Panama Canal dig the Panama Canal?"


def test_a_relative_that_is_no_pointer() -> None:
    history = [Turn(role="user", text="What was Pruitt-Igoe?"), Turn(role="assistant", text="Pruitt-Igoe was a housing project in St. Louis, finished in 1956.")]
    assert form("Were other projects like it that were demolished?", history) == "Were other projects like Pruitt-Igoe that were demolished?"


def test_a_question_s_verb_is_not_part_of_its_topic() -> None:
    history: list[str | Turn] = ["When did social security start in the US?"]
    assert form("Was it mandatory?", history) == "Was social security mandatory?"


def test_an_ellipsis_swaps_the_subject_of_the_previous_question() -> None:
    assert form("What about Venus flytraps in particular?", ["What do predator plants eat?"]) == "What do Venus flytraps eat?"
    assert form("And what about the cons?", ["What are the pros and cons of GMO food labeling?"]) == "What are the cons of GMO food labeling?"
    assert form("what about unopened ones?", ["What is the return window for earbuds?"]) == "What is the return window for unopened earbuds?"
    # more than an opener and a noun phrase: a question of its own, kept with the previous turn
    assert form("And what is the process?", ["How do I reset my router?"]) == "How do I reset my router? And what is the process?"


def test_assistant_filler_is_never_carried() -> None:
    history = [Turn(text="Where did Arthur Irwin coach?"), Turn(role="assistant", text="I don't know.")]
    made = standalone_form("Where did he attend school?", history, check_follow_up("Where did he attend school?", history))
    assert made.text == "Where did Arthur Irwin attend school?" and made.answer == ""
    history = [Turn(text="Is the Solace 7 waterproof?"), Turn(role="assistant", text="Sorry! It is rated IPX4 against splashes. Anything else?")]
    made = standalone_form("how about rain?", history, check_follow_up("how about rain?", history, catalog=CATALOG), catalog=CATALOG)
    assert made.answer == "It is rated IPX4 against splashes."


def test_two_candidates_give_one_reading_each() -> None:
    history: list[str | Turn] = ["Compare the Halden Solace 7 and the Halden Reed 2."]
    gate = check_follow_up("does it cover water damage?", history, catalog=CATALOG)
    made = standalone_form("does it cover water damage?", history, gate, catalog=CATALOG)
    assert (made.text, made.readings) == ("does the Halden Solace 7 cover water damage?", ("does the Halden Reed 2 cover water damage?",))
    assert [r.text for r in made.referents] == ["Halden Solace 7", "Halden Reed 2"]
    which = standalone_form("Which one charges faster?", history, check_follow_up("Which one charges faster?", history, catalog=CATALOG), catalog=CATALOG)
    assert which.text == "Which one charges faster? the Halden Solace 7 or the Halden Reed 2"


def test_an_interjection_starts_no_referent() -> None:
    assert Tracker().mentions("Oh almonds? Can you show me some recipes?")[0].text == "almonds"


def test_an_opener_before_a_question_of_its_own_resolves_its_owner_and_a_plain_it_keeps_the_turns() -> None:
    history: list[str | Turn] = ["What's the warranty on the Halden Solace 7?"]
    # "its battery": the owner is the product, not the warranty question joined in front
    assert form("And how long does its battery last?", history, CATALOG) == "And how long does the Halden Solace 7's battery last?"
    # "how fast is it?" after a question about a cradle: the cradle, which the joined turns still say
    history = ["Which cradle charges the Corra Tide 4 Pro?"]
    assert form("and how fast is it?", history, CATALOG) == "Which cradle charges the Corra Tide 4 Pro? and how fast is it?"


def test_a_participle_before_a_noun_modifies_it_and_a_clause_has_one_verb() -> None:
    def phrases(text: str) -> list[str]:
        return [p.words for p in noun_phrases(Message(text, []))]

    assert phrases("Can I return opened earbuds?") == ["opened earbuds"]  # not "opened": "return" was the verb
    assert phrases("does it cover water damage?") == ["water damage"]
    assert phrases("Do they sell replacement ear tips?") == ["replacement ear tips"]
    assert phrases("are refurbished units covered?") == ["refurbished units"]
    assert phrases("You must deliver the vehicle registration.") == ["vehicle registration"]  # a modal's verb names nothing
    assert phrases("How much does shipping to Norway cost?") == ["shipping", "Norway"]  # "to" before a name is no infinitive
    assert phrases("When did social security start in the US?") == ["social security"]  # the verb still left out


@pytest.mark.parametrize("message", ["What about unopened ones?", "and unopened ones?", "how about for unopened ones?", "same for unopened ones?",
                                     "What about unopened earbuds?", "And unopened ones, then?"])
def test_an_ellipsis_asks_the_previous_question_about_the_new_subject(message: str) -> None:
    assert form(message, ["What is the return window for opened earbuds?"], CATALOG) == "What is the return window for unopened earbuds?"


@pytest.mark.parametrize("message", ["And the Pro?", "what about the Pro?", "how about for the Pro?", "same for the Pro"])
def test_an_ellipsis_names_the_new_product_in_the_previous_question(message: str) -> None:
    assert form(message, ["How long is the warranty on the Halden Solace 7?"], CATALOG) == "How long is the warranty on the Halden Solace 7 Pro?"


@pytest.mark.parametrize(("previous", "message", "expected"), [
    ("How much does shipping to Norway cost?", "and to Sweden?", "How much does shipping to Sweden cost?"),
    ("How much does shipping to Norway cost?", "what about Sweden?", "How much does shipping to Sweden cost?"),
    ("Do you sell wireless charging cases?", "what about wired ones?", "Do you sell wired charging cases?"),
    ("Can I return opened earbuds?", "and used ones?", "Can I return used earbuds?"),
])
def test_an_ellipsis_swaps_what_the_new_subject_replaces(previous: str, message: str, expected: str) -> None:
    made = form(message, [previous], CATALOG)
    assert made == expected
    assert check_rewrite(message, made, [previous], catalog=CATALOG).ok  # the guard accepts it: nothing invented, nothing lost


def test_he_or_she_takes_a_person_and_it_does_not() -> None:
    # a band named with "the" is no person: "he" stays as typed rather than becoming "the Dead"
    history: list[str | Turn] = ["Why were the Dead such an influential live band?"]
    assert "the Dead lose" not in form("How did he lose his finger?", history)
    # a noun of a person class is one
    assert form("How did he start?", ["Who was the leader of the expedition?"]).startswith("How did the leader start?")
    # once "he" took Ben Franklin, "it" takes the thing, not him
    history = ["Where are turkeys from?", "Why did Ben Franklin want them to be the national symbol?", "How did he cook them?"]
    assert form("Why is it eaten on Thanksgiving?", history).startswith("Why is turkeys eaten")


def test_a_do_question_s_verb_ends_its_subject() -> None:
    def phrases(text: str) -> list[str]:
        return [p.words for p in noun_phrases(Message(text, []))]

    assert phrases("Why did Dali choose surrealism?") == ["Dali", "surrealism"]  # the name ends where the verb starts
    assert phrases("How did the Dead lose his finger?")[0] == "Dead"  # the verb before a determiner
    assert phrases("Why did the A380 stop being produced?")[0] == "A380"
    assert phrases("What do Spanish people eat for dinner?")[0] == "Spanish people"  # agreement: the verb after the plural
    assert phrases("When did the Black Lives Matter campaign begin?") == ["Black Lives Matter campaign"]  # a name's head noun stays
    assert phrases("Why did the band break up?") == ["band"]  # a phrasal verb's particle


def test_there_is_the_place_named_before() -> None:
    history: list[str | Turn] = ["What are the best ramen restaurants in Osaka?"]
    assert form("What is the cost of living there?", history) == "What is the cost of living in Osaka?"
    assert form("Tell me other things to do there.", history).startswith("Tell me other things to do in Osaka.")
    # no place named: "there" stays as typed
    assert "there" in form("What is the cost of living there?", ["What are the best ramen restaurants?"])


def test_the_speaker_s_ranking_is_no_part_of_the_referent() -> None:
    assert form("What did they work on?", ["Who are some of the well-known marine biologists?"]) == "What did the marine biologists work on?"
    assert form("How expensive are they?", ["What are the best ramen restaurants?"]) == "How expensive are the ramen restaurants?"
    # alone it is no referent at all: "the first" needs its noun
    assert [p.words for p in noun_phrases(Message("Where and when was the first invented?", []))] == []


def test_a_name_reads_before_its_complement() -> None:
    # "facts about bees" is about bees, but "Is Cassidy about Jack Casady?" is about Cassidy
    assert noun_phrases(Message("Is Cassidy about Jack Casady?", []))[0].words == "Cassidy"
    assert form("Who wrote it?", ["Is Cassidy about Jack Casady?"]) == "Who wrote Cassidy?"
    assert noun_phrases(Message("Tell me facts about bees.", []))[0].words == "bees"


def test_a_name_ending_in_s_is_one_person() -> None:
    # "Williams" ends in -s like a plural; a name without "the" is not one ("the Beatles" may be).
    assert form("When did she turn professional?", ["Serena Williams. Career"]) == "When did Serena Williams turn professional?"


def test_an_ellipsis_without_evidence_keeps_the_message_with_the_subject_beside_it() -> None:
    # nothing says "the turbines" stand where "workers" stood: no "How many turbines died?"
    history: list[str | Turn] = ["Tell me about the Hoover Dam.", "How many workers died?"]
    assert form("What about the turbines?", history) == "What about the turbines? the Hoover Dam"
    # a word both share, or a proper name, is evidence: the previous question about the new subject
    assert form("What about carnivorous plants?", ["What do predator plants eat?"]) == "What do carnivorous plants eat?"
    assert form("What about Venus flytraps?", ["What do predator plants eat?"]) == "What do Venus flytraps eat?"


def test_it_takes_a_thing_not_a_person_class_noun() -> None:
    history: list[str | Turn] = ["Was she the first woman to climb Everest?", "What equipment did she carry?"]
    assert form("How heavy was it?", history).startswith("How heavy was equipment?")


def test_it_after_an_answer_keeps_what_the_user_asked_about_not_the_name_the_answer_gave() -> None:
    # Measured both ways: the answer's name gained on the dialogues it was chosen on and lost on
    # held-out ones (the referent module's docstring); the user's own words stay the referent.
    single = [Turn(text="What was the band's first single?"), Turn(role="assistant", text="Blue Harbour came out in 1971 on Lantern Records.")]
    assert form("Did it chart?", single) == "Did the band's first single chart?"
    defined = [Turn(text="What is the Hoover Dam?"), Turn(role="assistant", text="It is a concrete dam on the Colorado River in Nevada.")]
    assert form("How tall is it?", defined) == "How tall is the Hoover Dam?"
    made = [Turn(text="The Wire. Production"), Turn(text="Who created the show?"), Turn(role="assistant", text="David Simon created it.")]
    assert form("Where was it filmed?", made) == "Where was the Wire filmed?"


def test_a_second_verb_is_no_referent() -> None:
    def phrases(text: str) -> list[str]:
        return [p.words for p in noun_phrases(Message(text, []))]

    assert phrases("Do knee braces help recover from an injury?") == ["knee braces", "injury"]
    assert phrases("Does stretching help prevent cramps?") == ["stretching", "cramps"]
    assert phrases("What pigment absorbs the light?") == ["pigment", "light"]  # the verb agrees with the wh-word's noun
    assert phrases("What causes throat cancer?") == ["throat cancer"]


def test_the_subject_moves_to_what_the_last_turns_keep_naming() -> None:
    history: list[str | Turn] = ["What is the climate like in Oregon?", "How does Portland differ?", "What is its main industry?"]
    assert form("What are the best museums?", history).endswith("Portland")
    # what a form appended is not what a turn named: the first turn's topic stays the subject
    history = ["How did surfing begin?", "What are fins?", "What are the best beaches?"]
    assert form("How can I teach myself?", history).endswith("surfing")


def test_a_final_particle_after_a_clause_with_a_pronoun_resolves_it_in_place() -> None:
    history: list[str | Turn] = ["Where does photosynthesis happen?", "Why are leaves green then?"]
    assert form("Do algae do it too?", history) == "Do algae do photosynthesis too?"


def test_an_ellipsis_in_place_of_the_subject_moves_the_conversation_on() -> None:
    history: list[str | Turn] = ["How much does a used motorbike cost?", "How does it compare to a scooter?"]
    message = "Interesting. What about for a converted camper van?"
    assert form(message, history) == "How does converted camper van compare to a scooter?"
    # from then on the camper van is the subject, not the motorbike
    history.append(message)
    assert form("What permits are needed?", history).endswith("converted camper van")


def test_what_about_with_words_of_its_own_keeps_the_message_with_the_subject_beside_it() -> None:
    history: list[str | Turn] = ["How do search engines rank pages?", "What are the important parts of a test collection?"]
    # the previous question's frame would bury the new subject
    assert form("What about benchmarks for music?", history) == "What about benchmarks for music? search engines"
    # "and" with a question of its own and no new noun phrase still asks within the previous one
    assert form("And what is the process?", ["How do I reset my router?"]) == "How do I reset my router? And what is the process?"


def test_there_after_a_where_question_is_the_place_the_answer_gave() -> None:
    history = [Turn(text="The Wire. Production"), Turn(text="Where was it filmed?"), Turn(role="assistant", text="It was filmed in Baltimore, Maryland.")]
    assert form("Why there?", history) == "Where was the Wire filmed? Why in Baltimore?"
    assert form("What is the weather like there?", history) == "What is the weather like in Baltimore?"


def test_two_names_without_a_catalog_are_two_readings_and_a_request_s_verb_is_no_part_of_them() -> None:
    history: list[str | Turn] = ["Compare Python and Rust for web servers."]
    assert form("Which one is faster?", history) == "Which one is faster? Python or Rust"
    made = standalone_form("Is it memory safe?", history, check_follow_up("Is it memory safe?", history))
    assert (made.text, made.readings) == ("Is Python memory safe?", ("Is Rust memory safe?",))


def test_the_second_one_after_a_first_thing_asks_of_the_second() -> None:
    history: list[str | Turn] = [Turn(role="user", text="Tell me about the Kinks."), Turn(role="assistant", text="The Kinks were a London rock band."),
                                 Turn(role="user", text="What was their first single?"), Turn(role="assistant", text="Their first single was a cover.")]
    assert form("And the second one?", history) == "What was the Kinks' second single?"


def test_it_is_never_the_person_he_took_though_the_turn_named_two_names() -> None:
    history: list[str | Turn] = [
        Turn(role="user", text="Who discovered insulin?"),
        Turn(role="assistant", text="Insulin was isolated in 1921 by Frederick Banting, a Canadian surgeon working in Toronto."),
        Turn(role="user", text="Did he win a Nobel Prize for it?"),
        Turn(role="assistant", text="Yes. Banting shared the 1923 Nobel Prize with John Macleod."),
    ]
    gate = check_follow_up("Why is it so expensive today?", history)
    form_ = standalone_form("Why is it so expensive today?", history, gate)
    assert "Banting" not in form_.text and not any("Banting" in r for r in form_.readings)


def test_topic_continuity_alone_puts_the_subject_beside_the_message_not_the_last_focus() -> None:
    history: list[str | Turn] = [
        Turn(role="user", text="How is gout treated?"),
        Turn(role="assistant", text="Gout is treated in three ways:\n1. Colchicine, which calms an attack.\n2. Allopurinol, which lowers uric acid.\n"
                                    "3. Diet changes, such as less red meat."),
        Turn(role="user", text="How fast does the first one work?"),
        Turn(role="assistant", text="It usually eases the pain within a day."),
    ]
    gate = check_follow_up("Is cherry juice useful?", history)
    assert gate.strength == "weak"
    assert standalone_form("Is cherry juice useful?", history, gate).text == "Is cherry juice useful? gout"
