"""Referents only the assistant's answer names: list items ("the second one"), a person the user
never named ("he"), a kind the answer introduced ("this reaction", "the city")."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up, standalone_form
from querywise.understand.followup.answer_refs import enumeration, list_pointer

U, A = "user", "assistant"

TEAS = Turn(role=A, text="Three teas suit the evening:\n1. Chamomile, which calms the stomach and helps sleep.\n"
               "2. Rooibos tea, a red bush from South Africa with no caffeine.\n3. Peppermint tea, which eases bloating.")


def test_the_second_one_after_numbered_lines_is_that_items_name_not_its_explanation() -> None:
    history = [Turn(role=U, text="Which herbal teas are good before bed?"), TEAS]
    assert form("Where does the second one come from?", history) == "Where does rooibos tea come from?"
    assert form("Is the last one safe for children?", history) == "Is peppermint tea safe for children?"


def test_bulleted_lines_and_a_named_ordinal_noun_point_into_the_list() -> None:
    answer = Turn(role=A, text="You have a few options:\n- Solar panels, which cut the bill most in sunny places.\n"
                     "- A heat pump that replaces the boiler.\n- Loft insulation.")
    history = [Turn(role=U, text="How can I lower my heating costs?"), answer]
    assert form("How much does the third option cost?", history) == "How much does loft insulation cost?"


def test_an_inline_series_after_include_gives_its_items() -> None:
    answer = "Common hard cheeses include parmesan, pecorino, gruyere, and manchego. They keep for months."
    assert enumeration(answer) == ("parmesan", "pecorino", "gruyere", "manchego")
    history = [Turn(role=U, text="What are some hard cheeses?"), Turn(role=A, text=answer)]
    assert form("How long does the third one age?", history) == "How long does gruyere age?"


def test_the_latter_and_the_former_name_one_of_two_items() -> None:
    answer = Turn(role=A, text="The two main kinds are arabica, which grows high up and tastes sweeter, and robusta, which has more caffeine.")
    history = [Turn(role=U, text="What kinds of coffee beans are there?"), answer]
    assert form("Where is the latter grown?", history) == "Where is robusta grown?"
    assert form("Is the former more expensive?", history) == "Is arabica more expensive?"


def test_an_ordinal_without_a_list_in_the_answer_is_left_as_it_is() -> None:
    history = [Turn(role=U, text="Tell me about the band Kraftwerk."), Turn(role=A, text="Kraftwerk are a German electronic band formed in Duesseldorf in 1970.")]
    made = form("What was the first album?", history)
    assert "first album" in made
    assert list_pointer("What was the first album?", ("Autobahn", "Radio-Activity")) is None  # a noun no list is made of


def test_a_list_the_answer_does_not_make_clear_is_not_pointed_into() -> None:
    two_runs = "Before:\n- wash\n- dry\nAfter:\n- fold\n- iron"
    assert enumeration(two_runs) == ()
    assert list_pointer("And the fifth one?", ("wash", "dry", "fold")) is None  # past the list's end
    assert list_pointer("Is the latter better?", ("wash", "dry", "fold")) is None  # "the latter" of three


def test_number_n_keeps_the_number_the_user_typed_beside_the_item() -> None:
    answer = Turn(role=A, text="Try these:\n1) Restart the router.\n2) Update the network driver.\n3) Reset the network settings.")
    history = [Turn(role=U, text="My wifi keeps dropping."), answer]
    gate = check_follow_up("How do I do number 2 on a Mac?", history)
    assert gate.needs_context and "list:number 2" in gate.cues
    assert standalone_form("How do I do number 2 on a Mac?", history, gate).text == "How do I do update the network driver (number 2) on a Mac?"


def test_a_list_two_answers_back_is_still_the_list_pointed_at() -> None:
    history = [Turn(role=U, text="Which herbal teas are good before bed?"), TEAS, Turn(role=U, text="Does chamomile have caffeine?"), Turn(role=A, text="No, it has none.")]
    assert form("And is the third one good for a cold?", history) == "And is peppermint tea good for a cold?"


def test_what_about_an_item_asks_the_previous_question_of_it() -> None:
    history = [Turn(role=U, text="Which herbal teas are good before bed?"), TEAS, Turn(role=U, text="Is the first one safe in pregnancy?"),
               Turn(role=A, text="Most doctors say a cup a day is fine.")]
    assert form("What about the second?", history) == "Is rooibos tea safe in pregnancy?"


def test_he_takes_the_person_the_answer_named_when_the_user_named_only_things() -> None:
    history = [Turn(role=U, text="Who invented the telephone?"),
               Turn(role=A, text="Alexander Graham Bell patented the telephone in 1876, after years of work on the harmonic telegraph.")]
    assert form("Where was he born?", history) == "Where was Alexander Graham Bell born?"
    history += [Turn(role=U, text="Where was he born?"), Turn(role=A, text="He was born in Edinburgh, Scotland, in 1847.")]
    assert form("When did he move to Canada?", history) == "When did Alexander Graham Bell move to Canada?"


def test_he_stays_with_the_person_the_user_named() -> None:
    history = [Turn(role=U, text="What did Thomas Edison invent?"), Turn(role=A, text="Edison and his team, with Lewis Latimer, improved the light bulb.")]
    assert "Thomas Edison" in form("When did he die?", history)


def test_a_kind_the_answer_introduced_takes_its_name() -> None:
    history = [Turn(role=U, text="Why does bread turn brown in the oven?"),
               Turn(role=A, text="The crust browns in a reaction called the Maillard reaction, between sugars and amino acids above 140 degrees.")]
    assert form("Who discovered this reaction?", history) == "Who discovered the Maillard reaction?"
    history = [Turn(role=U, text="Where does the Tour de France end?"), Turn(role=A, text="It has finished in Paris since 1975, on the Champs-Elysees.")]
    assert form("What else is there to see in the city?", history) == "What else is there to see in Paris?"


def test_a_kind_the_user_named_first_is_the_users_own() -> None:
    history = [Turn(role=U, text="Which city hosts the Tour de France finish?"), Turn(role=A, text="It has finished in Paris since 1975.")]
    assert "Paris" not in form("How big is the city?", history)


def test_his_becomes_the_answers_person_as_a_possessive() -> None:
    history = [Turn(role=U, text="Who invented the telephone?"), Turn(role=A, text="Alexander Graham Bell patented the telephone in 1876.")]
    assert form("What was his first invention?", history) == "What was Alexander Graham Bell's first invention?"


def test_a_series_after_a_colon_names_each_kind_with_what_it_is_a_kind_of() -> None:
    answer = Turn(role=A, text="Gardeners grow three kinds of tomatoes: cherry, plum and beefsteak. Cherry ones ripen first.")
    history = [Turn(role=U, text="Which tomatoes should I grow?"), answer]
    assert form("Why does the second kind suit sauces?", history) == "Why does plum tomatoes suit sauces?"
    asked = [*history, Turn(role=U, text="Why does the second kind suit sauces?"), Turn(role=A, text="They hold little water.")]
    assert form("What about the last?", asked) == "Why does beefsteak tomatoes suit sauces?"


def test_a_series_that_opens_its_sentence_is_a_list_to_point_into() -> None:
    answer = "Poor drainage, heavy clay and late frost are the main reasons young fruit trees fail. Most recover."
    assert enumeration(answer) == ("poor drainage", "heavy clay", "late frost")
    history = [Turn(role=U, text="Why did my apple tree die?"), Turn(role=A, text=answer)]
    assert form("How do I fix the second one?", history) == "How do I fix heavy clay?"


def test_steps_told_in_prose_are_the_items_of_first_second_and_last() -> None:
    answer = ("To repot an orchid, first, soak the roots in water for ten minutes. Second, trim any dead roots. "
              "Finally, set the plant in fresh bark. Water it a week later.")
    # a command is put in as the noun phrase a question holds (#34: a bare verb is never copied)
    assert enumeration(answer) == ("soaking the roots in water for ten minutes", "trimming any dead roots", "setting the plant in fresh bark")
    history = [Turn(role=U, text="How do I repot an orchid?"), Turn(role=A, text=answer)]
    assert form("Why is the second step needed?", history) == "Why is trimming any dead roots needed?"
    # "then" without a first step is a word of the story, not a step
    assert enumeration("We met in Oslo. Then, we flew home. Finally, we slept.") == ()


def test_that_is_the_term_the_answer_defined_as_it_brought_it_in() -> None:
    history = [Turn(role=U, text="Why are my toenails thick and yellow?"),
               Turn(role=A, text="That is often onychomycosis, a fungal infection that grows slowly under the nail. Injury can look the same.")]
    assert form("What causes that?", history) == "What causes onychomycosis?"
    assert form("How is this infection treated?", history) == "How is onychomycosis treated?"


def test_that_stays_the_users_when_the_answer_defines_nothing_or_two_things() -> None:
    plain = [Turn(role=U, text="Why does sourdough taste sour?"),
             Turn(role=A, text="Lactic and acetic acid, which the bacteria in the starter make, give the sour taste.")]
    assert "acid" not in form("How do I reduce that?", plain).lower()
    two = [Turn(role=U, text="Why is my skin itchy?"),
           Turn(role=A, text="It may be eczema, a condition of dry skin, or urticaria, a rash caused by an allergy.")]
    assert form("What causes that?", two) == form("What causes that?", [*two[:1], Turn(role=A, text="It may be many things.")])


def test_the_kind_a_name_of_the_answer_is_built_on_is_that_name() -> None:
    history = [Turn(role=U, text="How did the Seven Years' War end in Europe?"),
               Turn(role=A, text="It ended in 1763 with the Treaty of Hubertusburg between Prussia and Austria.")]
    assert form("Who signed the treaty?", history) == "Who signed the Treaty of Hubertusburg?"
    # the user's own noun stays theirs
    assert "Treaty" not in form("How long did the war last?", history)


def test_that_of_a_statement_is_not_the_defined_term() -> None:
    history = [Turn(role=U, text="Why are my toenails thick and yellow?"),
               Turn(role=A, text="That is often onychomycosis, a fungal infection that grows slowly under the nail.")]
    for message in ("Why is that?", "Is that true?", "What happened after that?", "Did anything else change besides that?"):
        gate = check_follow_up(message, history)
        assert "onychomycosis" not in standalone_form(message, history, gate).text


def test_both_is_the_two_items_of_the_answers_list() -> None:
    history = [Turn(role=U, text="What savings accounts help with a first home?"),
               Turn(role=A, text="The two usual choices are a Lifetime ISA, which adds a bonus, and a regular savings account, which pays interest.")]
    assert form("Can I open both at once?", history) == "Can I open both a Lifetime ISA and a regular savings account at once?"


def test_which_one_compares_the_items_of_the_answers_list() -> None:
    history = [Turn(role=U, text="Which grains are gluten free?"),
               Turn(role=A, text="Gluten-free grains include quinoa, buckwheat and millet. Oats are too when labelled so.")]
    assert form("Which one has the most protein?", history) == "Which one has the most protein? quinoa or buckwheat or millet"


def test_the_first_is_and_the_second_is_are_items_too() -> None:
    answer = ("Volcanoes come in several shapes. The first is the shield volcano, with gentle slopes. "
              "The second is the stratovolcano, steep and layered. The last is the cinder cone.")
    assert enumeration(answer) == ("the shield volcano", "the stratovolcano", "the cinder cone")
    history = [Turn(role=U, text="What shapes do volcanoes have?"), Turn(role=A, text=answer)]
    assert form("How does the second type form?", history) == "How does the stratovolcano form?"


def test_the_kind_the_answer_defined_a_term_as_is_that_term() -> None:
    history = [Turn(role=U, text="Why do my knees ache in the morning?"),
               Turn(role=A, text="Morning stiffness that eases within half an hour is typical of osteoarthritis, a condition in which cartilage wears down.")]
    assert form("Is the condition hereditary?", history) == "Is osteoarthritis hereditary?"


def test_the_first_with_its_name_between_commas_and_a_pair_after_a_colon() -> None:
    answer = "Doctors use two approaches. The first, watchful waiting, suits small stones. The second, lithotripsy, breaks them up."
    assert enumeration(answer) == ("watchful waiting", "lithotripsy")
    assert enumeration("Bees make two kinds of wax: comb wax and cappings wax. Both melt easily.") == ("comb wax", "cappings wax")
    assert enumeration("Season it with salt and pepper.") == ()


def test_an_ordinal_with_a_noun_the_answer_says_points_into_its_list() -> None:
    history = [Turn(role=U, text="Why do bridges rust?"),
               Turn(role=A, text="Salt spray, standing water and cracked paint are the main causes of rust on steel bridges.")]
    assert form("How can engineers stop the second cause?", history) == "How can engineers stop standing water?"
    album = [Turn(role=U, text="Tell me about the Kinks."), Turn(role=A, text="Their records include Face to Face, Something Else and Arthur.")]
    assert "Something Else" not in form("When did the second album chart?", album)


def test_an_ordinal_with_a_noun_the_answer_only_mentions_is_its_own() -> None:
    history = [Turn(role=U, text="Which vaccines do babies get?"),
               Turn(role=A, text="Babies get vaccines such as rotavirus, hepatitis B and polio. Most are injections.")]
    assert "rotavirus" not in form("When was the first vaccine invented?", history)


def test_both_before_its_own_noun_and_which_of_a_fact_are_no_pointers() -> None:
    history = [Turn(role=U, text="What savings accounts help with a first home?"),
               Turn(role=A, text="The two usual choices are a Lifetime ISA, which adds a bonus, and a regular savings account, which pays interest.")]
    gate = check_follow_up("Do both partners need to sign?", history)
    assert "Lifetime ISA" not in standalone_form("Do both partners need to sign?", history, gate).text
    gate = check_follow_up("Which is the oldest bank in the country?", history)
    assert not gate.needs_context or "Lifetime ISA" not in standalone_form("Which is the oldest bank in the country?", history, gate).text


def test_what_things_are_or_do_after_are_is_no_list_of_things() -> None:
    # "are much quieter, cheaper to run and easy to fit" says what the pumps are; "are cleaned,
    # sorted ... and stacked" what is done to the stones: neither is a list an ordinal points into.
    assert enumeration("Air source heat pumps suit most homes. These units are much quieter than boilers, cheaper to run "
                       "and easy to fit.") == ()
    assert enumeration("Dry stone walls need little care. The stones are cleaned, sorted by size and then stacked by hand.") == ()
    assert enumeration("The main risks of a loft conversion are damp, weak joists and poor insulation.") == ("damp", "weak joists",
                                                                                                          "poor insulation")
