"""Whether a message leans on the assistant's last answer, and whether it leaves a question of the
assistant unanswered: what decides, in the plan, that the answer's words are not searched beside it.

An assistant that ends by asking ("Would you like to know how to order personalized plates?") and
a user who does not take it up ("How much is the renewal fee?") is a change of subject: the
answer's words would drag the result back to the passage just answered (doc2dial, changes of
subject after an answer: bench/results/subject_probe.md, section 4).
"""

from __future__ import annotations

import re

from querywise.text import analyze

__all__ = ["asks_unanswered", "leans_on_answer"]

#: A message that opens by replying to what the assistant said ("yes, ...", "not", "that's right")
#: or by continuing it ("and ...", "what about ...", "if ...").
_REPLY = re.compile(r"^\W*(?:yes|yeah|yea|yep|no|nope|not|ok|okay|sure|thanks|thank you|great|alright|all right|right|i see|got it|"
                    r"of course|i do|i don't|do not|i am|i'm not|i have|i haven't|oh|correct|that's|that is|that sounds|that would|"
                    r"perfect|good|cool|and|but|so|then|also|what about|how about|what if|if)\b", re.IGNORECASE)
#: Content words at or under which a message cannot stand without what was said before it.
_SHORT = 2


def leans_on_answer(message: str, answer: str) -> bool:
    """`message` replies to `answer` or continues it (an opening such as "yes", "that's", "and",
    "what about"), uses a content word of it, or is too short (two content words or fewer) to
    stand without it.

    >>> leans_on_answer("Yes, please.", "Would you like to know the fees?")
    True
    >>> leans_on_answer("What does renewing a vehicle registration cost?", "Would you like to know about plates?")
    False
    """
    words = set(analyze(message))
    return bool(_REPLY.search(message)) or bool(words & set(analyze(answer))) or len(words) <= _SHORT


def asks_unanswered(message: str, answer: str) -> bool:
    """The assistant's last words (`answer`) ask the user something and `message` does not lean on
    them (`leans_on_answer`): a question left unanswered, so not what the message is about.

    >>> asks_unanswered("What does renewing a vehicle registration cost?", "Would you like to know about plates?")
    True
    """
    return answer.rstrip().endswith("?") and not leans_on_answer(message, answer)
