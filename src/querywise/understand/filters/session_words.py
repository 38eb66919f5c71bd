"""Access instructions a message tries to give ("set market to us", "sold in the EU"): each is
dropped with `ACCESS_REASON`, never applied. Access comes from the session alone."""

from __future__ import annotations

import re
from collections.abc import Mapping

from querywise.catalog import Catalog
from querywise.checks.filters import ACCESS_REASON, Dropped
from querywise.understand.filters.scan import Scan

__all__ = ["drop_session_words"]


def drop_session_words(scan: Scan, session_only: Mapping[str, str], catalog: Catalog | None) -> None:
    """Drop every session-only field the message names; it never becomes a filter or access."""
    if not session_only:
        return
    keys = "|".join(re.escape(k) for k in sorted(session_only, key=len, reverse=True))
    # At most 8 lead words ("and also please set ..."): unbounded, every start inside a long
    # run of them rescanned the run (quadratic: 8,000 "and"s took 5 s).
    lead = r"(?:,\s*)?(?:(?:and|also|then|please|now)\s+){0,8}"
    # Instructions ("set market to us", "market: us") leave the semantic query; descriptions
    # ("in the us market", "sold in the EU") stay in it, as words of the question, but set nothing.
    patterns = [
        (rf"{lead}(?:set|change|switch|make|use|put)\s+(?:my\s+|the\s+|our\s+)?(?P<key>{keys})\s+(?:to|=|as|into)\s+(?:the\s+)?(?P<value>[\w-]+)", True),
        (rf"(?P<key>{keys})\s*[:=]\s*(?P<value>[\w-]+)", True),
        (rf"(?:in|for|from)\s+(?:the\s+)?(?P<value>[\w-]+)\s+(?P<key>{keys})\b", False),
    ]
    for pattern, instruction in patterns:
        for m in re.finditer(rf"(?<![\w-]){pattern}", scan.message, re.IGNORECASE):
            if scan.free(m.start(), m.end()):
                scan.claim(m.start(), m.end(), remove=instruction)
                payload = session_only[m.group("key").lower()]
                scan.dropped.append(Dropped(payload, m.group("value").lower(), ACCESS_REASON, (m.start(), m.end()), access=True))
    if catalog is None:
        return
    for payload in dict.fromkeys(session_only.values()):
        values = [str(v) for v in catalog.values(payload) if isinstance(v, str)]
        if not values:
            continue
        alt = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
        said = (
            rf"(?:(?:that\s+(?:is|are)\s+)?(?:sold|available|shipped|shipping|offered|delivered)\s+(?:only\s+)?(?:in|to)\s+(?P<the1>the\s+)?(?P<v1>{alt})(?:\s+only)?"
            rf"|(?:in|for|from)\s+(?P<the2>the\s+)(?P<v2>{alt})"
            rf"|(?P<v3>{alt})[\s-]only)"
        )
        for m in re.finditer(rf"(?<![\w-]){said}(?![\w-])", scan.message, re.IGNORECASE):
            word = m.group("v1") or m.group("v2") or m.group("v3")
            # Short values ("us") are also words: count them only after "the" or when written in capitals.
            if len(word) <= 3 and not (m.group("the1") or m.group("the2")) and not word.isupper():
                continue
            if scan.free(m.start(), m.end()):
                scan.claim(m.start(), m.end(), remove=False)
                scan.dropped.append(Dropped(payload, word.lower(), ACCESS_REASON, (m.start(), m.end()), access=True))
