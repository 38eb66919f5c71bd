"""Splitting documents into chunks that keep their context.

How a document is cut (the defaults are `Chunker()`):

1. Markdown is split into sections at headings; a `.txt` file is one section.
2. A section's body is cut at blank lines into paragraphs; paragraphs are packed in order
   into chunks of at most `max_chars` characters. A longer paragraph is cut at sentence ends,
   and a longer sentence at whitespace.
3. `overlap` trailing units (paragraphs or sentences) of a chunk are repeated at the start of
   the next one in the same section (0 by default: the heading already carries the context
   that overlap usually tries to save).
4. Every chunk keeps a `context` line, searched with its text: the document title and the
   heading path, plus the document's identifiers (matches of `identifier_pattern`) that
   the chunk's own text lacks, so that "the part number is on the previous page" cannot
   separate an answer from the product it is about.
5. A chunk's text is exactly `source[start:end]`, so offsets can be traced back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Chunker", "Piece"]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Piece:
    """A chunk cut from one document, with its provenance."""

    chunk_id: str
    text: str
    start: int
    end: int
    heading: str
    context: str
    identifiers: list[str]


def _spans(text: str, start: int, end: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
    """Non-empty, whitespace-trimmed spans of text[start:end] between separators."""
    out, pos = [], start
    for m in sep.finditer(text, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, end))
    trimmed = []
    for a, b in out:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            trimmed.append((a, b))
    return trimmed


@dataclass(frozen=True)
class Chunker:
    """Cuts documents into chunks; see the module docstring for the rules.

    >>> [p.text for p in Chunker(max_chars=20).split("# Pairing\\nHold it.\\n\\nThen pick it.", doc_id="d")]
    ['Hold it.\\n\\nThen pick it.']
    """

    max_chars: int = 1000
    overlap: int = 0
    identifier_pattern: str = r"\b[A-Z]{2,}-\d{3,}\b"
    max_context_identifiers: int = 8

    def __post_init__(self) -> None:
        if self.max_chars < 50:
            raise ValueError("max_chars must be at least 50")
        if self.overlap < 0:
            raise ValueError("overlap must be >= 0")
        re.compile(self.identifier_pattern)

    def _units(self, text: str, a: int, b: int) -> list[tuple[int, int]]:
        units: list[tuple[int, int]] = []
        for pa, pb in _spans(text, a, b, _PARAGRAPH_BREAK):
            if pb - pa <= self.max_chars:
                units.append((pa, pb))
                continue
            for sa, sb in _spans(text, pa, pb, _SENTENCE_END):
                while sb - sa > self.max_chars:  # one very long sentence: cut at whitespace
                    cut = text.rfind(" ", sa, sa + self.max_chars)
                    cut = cut if cut > sa else sa + self.max_chars
                    units.append((sa, cut))
                    sa = cut
                    while sa < sb and text[sa].isspace():
                        sa += 1
                if sb > sa:
                    units.append((sa, sb))
        return units

    def _pack(self, units: list[tuple[int, int]]) -> list[tuple[int, int]]:
        chunks: list[tuple[int, int]] = []
        group: list[tuple[int, int]] = []
        for unit in units:
            if group and unit[1] - group[0][0] > self.max_chars:
                chunks.append((group[0][0], group[-1][1]))
                kept = group[-self.overlap :] if self.overlap else []
                group = [u for u in kept if unit[1] - u[0] <= self.max_chars]
            group.append(unit)
        if group:
            chunks.append((group[0][0], group[-1][1]))
        return chunks

    def split(self, text: str, *, doc_id: str, markdown: bool = True) -> list[Piece]:
        """Cut one document into pieces, in reading order."""
        id_re = re.compile(self.identifier_pattern, re.IGNORECASE)
        identifiers = list(dict.fromkeys(m.group(0).upper() for m in id_re.finditer(text)))
        headings = list(_HEADING.finditer(text)) if markdown else []
        title = doc_id.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ").strip()
        if headings and len(headings[0].group(1)) == 1:
            title = headings[0].group(2).strip()

        # (heading path, body start, body end) for each section
        sections: list[tuple[list[str], int, int]] = []
        path: list[tuple[int, str]] = []
        pos = 0
        for h in headings:
            sections.append(([p[1] for p in path], pos, h.start()))
            level = len(h.group(1))
            path = [p for p in path if p[0] < level] + [(level, h.group(2).strip())]
            pos = h.end()
        sections.append(([p[1] for p in path], pos, len(text)))

        pieces: list[Piece] = []
        for heads, a, b in sections:
            # The H1 is the title already; don't repeat it in the path.
            trail = [h for h in heads if h != title]
            for start, end in self._pack(self._units(text, a, b)):
                body = text[start:end]
                missing = [i for i in identifiers if i.lower() not in body.lower()]
                context = " > ".join([title, *trail])
                if missing:
                    context += " (" + ", ".join(missing[: self.max_context_identifiers]) + ")"
                pieces.append(
                    Piece(
                        chunk_id=f"{doc_id}#{len(pieces)}",
                        text=body,
                        start=start,
                        end=end,
                        heading=trail[-1] if trail else "",
                        context=context,
                        identifiers=identifiers,
                    )
                )
        return pieces
