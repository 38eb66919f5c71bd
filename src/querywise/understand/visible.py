"""What one session may be shown: the index's words, identifiers and catalog as its access sees them.

A plan shows more than its hits: a spelling correction, a "Did you mean ZX-9001?", an exact
lookup, a catalog entry's description or price. Each is drawn from the whole index or catalog, so
without this view a session could learn words, identifiers and products it may not search (a
tenant enumerating another's part numbers). So, for a session with access constraints:

- a correction is kept only into a word some chunk of its access holds, and a near-miss identifier
  is offered, or an identifier looked up, only when such a chunk holds it. The question is asked of
  the index's engine (`Visible`: a BM25 query of the word's term with the access filter, k = 1);
  a deployment that cannot ask it withholds every suggestion rather than guess;
- the catalog is the entries whose own fields pass the access filter (`Where.matches`, the same
  interpreter as the filters'); an entry without the access field is not shown (fail closed).

A session without access constraints sees everything, and gets exactly the unfiltered moves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Protocol

from querywise.catalog import Catalog
from querywise.conditions import Where
from querywise.understand.spelling import Correction, Spelling

__all__ = ["SessionSpeller", "Speller", "Visible", "catalog_view"]


class Speller(Protocol):
    """What the moves read of a speller: the check, and the index's identifiers by `identifier_key`."""

    @property
    def identifiers(self) -> Mapping[str, str]: ...

    def check(self, text: str) -> Spelling: ...


#: Whether a chunk that the access filter lets through holds the word (`Index.holds`).
Visible = Callable[[str, Where], bool]

_REMEMBERED = 10_000  # words whose visibility one session's view remembers


def catalog_view(catalog: Catalog, access: Where) -> Catalog:
    """The entries of `catalog` a session with `access` may see (all of them without access)."""
    if not access:
        return catalog
    return Catalog(e for e in catalog.entities if access.matches(e.fields))


class _Shown(Mapping[str, str]):
    """The index's identifiers (by `identifier_key`) that the session's chunks hold."""

    def __init__(self, identifiers: Mapping[str, str], shown: Callable[[str], bool]) -> None:
        self._all, self._shown = identifiers, shown

    def __getitem__(self, key: str) -> str:
        form = self._all[key]
        if not self._shown(form):
            raise KeyError(key)
        return form

    def __iter__(self) -> Iterator[str]:
        return (k for k, form in self._all.items() if self._shown(form))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class SessionSpeller:
    """The index's speller as one session sees it: the same checks, with every correction, offer
    and identifier outside the session's access withheld. `visible` None (a deployment that cannot
    ask its index) withholds them all.

    The kept corrections' evidence (runner-up word, corpus context) and the words left alone are
    dropped from the result too: they are index words as well, and need not be the session's.
    """

    def __init__(self, speller: Speller, access: Where, visible: Visible | None) -> None:
        self.speller, self.access, self.visible = speller, access, visible
        self._known: dict[str, bool] = {}
        self.identifiers: Mapping[str, str] = _Shown(speller.identifiers, self.shown)

    def shown(self, word: str) -> bool:
        """Whether the session may be told the index holds `word`."""
        if self.visible is None:
            return False
        key = word.lower()
        if (known := self._known.get(key)) is None:
            known = self.visible(word, self.access)
            if len(self._known) < _REMEMBERED:
                self._known[key] = known
        return known

    def check(self, text: str) -> Spelling:
        result = self.speller.check(text)
        kept = tuple(_plain(c) for c in result.corrections if self.shown(c.replacement))
        offers = {typed: shown for typed, offered in result.identifier_candidates.items() if (shown := tuple(o for o in offered if self.shown(o)))}
        everything = len(kept) == len(result.corrections)
        corrected = result.corrected if everything else _corrected(text, kept) if kept else None
        parts = [f"corrected {c.original!r} -> {c.replacement!r}" for c in kept]
        parts += [f"offered {', '.join(found)} for unknown identifier {token!r}" for token, found in offers.items()]
        reason = "; ".join(parts) if parts else "nothing to correct within the session's access"
        return Spelling(corrected=corrected, corrections=kept, identifier_candidates=offers, reason=reason)


def _plain(c: Correction) -> Correction:
    """`c` without evidence that names other index words (its runner-up, its corpus context)."""
    return replace(c, context=(), runner_up=None, margin=None, why=f"a word of the session's documents, {c.distance} edit(s) away")


def _corrected(text: str, kept: tuple[Correction, ...]) -> str:
    """`text` with the kept corrections, each at its first place not yet corrected, in order."""
    out, at = [], 0
    for c in kept:
        found = re.compile(rf"(?<!\w){re.escape(c.original)}(?!\w)").search(text, at)
        if found is None:
            continue
        out += [text[at : found.start()], c.replacement]
        at = found.end()
    return "".join(out) + text[at:]
