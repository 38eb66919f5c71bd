"""The follow-up move: does a message lean on the conversation, and what does it stand for alone?

- `gate.py`: the detectors that say which words need the history (pass-through otherwise);
- `standalone.py`: the deterministic standalone form, read turn by turn, and the conversation's subject;
- `tracker.py`: salience tracking (what each turn mentions, the conversation's subject);
- `referent.py`: the deterministic standalone form (pronouns, ellipsis, readings of two candidates);
- `answer_refs.py`: referents only the assistant's answer names (an item of its list, a person, a kind, a term it defined);
- `answer_people.py`: a "he"/"she"/"they" only the answer's people can take;
- `people.py`: the people an answer names and the gender its pronouns give each;
- `message.py`: the closed word classes and the tokenised message the detectors read;
- `shift.py`: the topic-shift check and its hedge;
- `choice.py`: the learnt choice's candidates and model (`[understanding] phrase_choice`);
- `words.py`: the words it chooses among, what it reads of each, and the text the kept ones make;
- `move.py`: the move as a plan runs it.
"""

from querywise.understand.followup.gate import ANSWER_QUERY_CHARS, WEAK_FORM_WEIGHT, FollowUp, answer_words, check_follow_up, flag_kind, points_back
from querywise.understand.followup.standalone import Standalone, concat_standalone, conversation_subject, names_its_subject, standalone_form

__all__ = ["ANSWER_QUERY_CHARS", "WEAK_FORM_WEIGHT", "FollowUp", "Standalone", "answer_words", "check_follow_up", "concat_standalone", "conversation_subject", "flag_kind", "names_its_subject", "points_back", "standalone_form"]
