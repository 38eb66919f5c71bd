"""Finding the gold passage in the index, and recording how it was found.

Order of methods: the chunk id; else the gold text in a chunk (exact, then with whitespace and
ligatures normalised, then ignoring whitespace altogether so that "specifi c" meets "specific");
else the gold text split across two neighbouring chunks of one document (a chunk-boundary
candidate); else, when the source documents are given and one holds the text, absent from the
index; else the best BM25 hit if it holds most of the gold's terms. A document id plus a
character offset picks the chunk whose span holds the offset (the chunker's `start`/`end`).

A document id without an offset (a case judged per document) is the whole document: every chunk
of it answers. The location lists them all (`chunk_ids`) and picks as `chunk_id` the one that
ranks best for the question (`question_ranked`, see `prefer_ranked`), else the one sharing most
terms with the question; it never crosses chunks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from querywise.corpus import Chunk
from querywise.failures import FailureRow
from querywise.text import analyze

__all__ = ["ChunkTable", "LocateMethod", "Location", "compact", "locate", "norm_ws", "prefer_ranked"]

LocateMethod = Literal["chunk_id", "exact", "normalised", "split", "offset", "document", "bm25", "source_only", "not_found"]

#: Share of the gold text's distinct terms the best BM25 hit must hold to count as found.
BM25_MIN_COVERAGE = 0.6
_WS = re.compile(r"\s+")
_SUFFIX = re.compile(r"#(\d+)$")


def norm_ws(text: str) -> str:
    """Ligatures and other compatibility characters folded (NFKC), lower case, whitespace runs
    collapsed to one space."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def compact(text: str) -> str:
    """`norm_ws` with no whitespace at all: broken words ("confi guration") join again."""
    return _WS.sub("", unicodedata.normalize("NFKC", text).lower())


class Location(BaseModel):
    """Where the gold passage is: the chunk holding it (or its start), every chunk it touches,
    how it was found, and whether it is missing from the index."""

    method: LocateMethod
    chunk_id: str | None = None
    chunk_ids: list[str] = []
    doc_id: str | None = None
    absent: bool = False
    crosses: bool = False
    # The gold text met the chunk only once whitespace was ignored altogether: words that the
    # extractor ran together or split ("warrantycovers", "specifi c"); evidence for the noise rule.
    whitespace_only: bool = False
    detail: str = ""


@dataclass
class ChunkTable:
    """The indexed chunks by id and by document, with their normalised texts computed once."""

    chunks: dict[str, Chunk]
    order: dict[str, int]
    by_doc: dict[str, list[str]]
    _norm: dict[str, str] = field(default_factory=dict, repr=False)
    _compact: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, chunks: Iterable[Chunk]) -> ChunkTable:
        """Index `chunks` by id and group them by document (`Chunk.doc_id`), ordered by `start`
        offset when the chunker recorded one, else by a `#n` suffix, else as given."""
        table: dict[str, Chunk] = {}
        order: dict[str, int] = {}
        docs: dict[str, list[str]] = {}
        for i, c in enumerate(chunks):
            table[c.id] = c
            order[c.id] = i
            docs.setdefault(c.doc_id, []).append(c.id)

        def key(cid: str) -> tuple[float, int]:
            c = table[cid]
            start = c.payload.get("start")
            if isinstance(start, int | float):
                return (float(start), order[cid])
            m = _SUFFIX.search(cid)
            return (float(m.group(1)) if m else float(order[cid]), order[cid])

        return cls(table, order, {d: sorted(ids, key=key) for d, ids in docs.items()})

    def norm(self, cid: str) -> str:
        if cid not in self._norm:
            self._norm[cid] = norm_ws(self.chunks[cid].text)
        return self._norm[cid]

    def compact(self, cid: str) -> str:
        if cid not in self._compact:
            self._compact[cid] = compact(self.chunks[cid].text)
        return self._compact[cid]

    def neighbours(self, cid: str) -> list[str]:
        """The chunks just before and after `cid` in its document."""
        ids = self.by_doc.get(self.chunks[cid].doc_id, [])
        i = ids.index(cid)
        return [ids[j] for j in (i - 1, i + 1) if 0 <= j < len(ids)]


def _in_chunks(gold: str, table: ChunkTable) -> Location | None:
    hits = [cid for cid, c in table.chunks.items() if gold in c.text]
    if hits:
        return Location(method="exact", chunk_id=hits[0], chunk_ids=hits, doc_id=table.chunks[hits[0]].doc_id)
    g = norm_ws(gold)
    hits = [cid for cid in table.chunks if g in table.norm(cid)]
    detail = "whitespace and ligatures normalised"
    if not hits:
        g = compact(gold)
        hits = [cid for cid in table.chunks if g and g in table.compact(cid)]
        detail = "matched ignoring whitespace (broken words)"
    if hits:
        return Location(method="normalised", chunk_id=hits[0], chunk_ids=hits, doc_id=table.chunks[hits[0]].doc_id,
                        whitespace_only=detail.startswith("matched ignoring"), detail=detail)
    return None


def _split(gold: str, table: ChunkTable) -> Location | None:
    """The gold's head ends one chunk and its rest starts the next chunk of the same document."""
    g = compact(gold)
    m = min(12, len(g) // 2)
    if m < 4:
        return None
    for cid in table.chunks:
        t = table.compact(cid)
        p = t.find(g[:m])
        while p != -1:
            tail = t[p:]
            if len(tail) < len(g) and g.startswith(tail):
                rest = g[len(tail):]
                ids = table.by_doc.get(table.chunks[cid].doc_id, [])
                nxt = ids[ids.index(cid) + 1] if ids.index(cid) + 1 < len(ids) else None
                if nxt is not None and table.compact(nxt).startswith(rest):
                    return Location(
                        method="split", chunk_id=cid, chunk_ids=[cid, nxt], doc_id=table.chunks[cid].doc_id,
                        crosses=True, detail=f"{len(tail)} characters in {cid}, {len(rest)} in {nxt}",
                    )
            p = t.find(g[:m], p + 1)
    return None


def _in_sources(gold: str, sources: Mapping[str, str]) -> str | None:
    g, c = norm_ws(gold), compact(gold)
    for doc_id, text in sources.items():
        if gold in text or g in norm_ws(text) or (c and c in compact(text)):
            return doc_id
    return None


def _doc_absent(doc: str, sources: Mapping[str, str]) -> Location:
    where = "it is in the sources" if doc in sources else "no source given for it"
    return Location(method="source_only" if doc in sources else "not_found", doc_id=doc, absent=True,
                    detail=f"no chunk of document {doc!r} in the index ({where})")


def _by_document(failure: FailureRow, table: ChunkTable, sources: Mapping[str, str], question_ranked: Sequence[str]) -> Location:
    """A whole document as the gold: all its chunks, the best one for the question first."""
    doc = str(failure.gold_doc)
    ids = table.by_doc.get(doc, [])
    if not ids:
        return _doc_absent(doc, sources)
    ranked = prefer_ranked(Location(method="document", chunk_id=ids[0], chunk_ids=ids, doc_id=doc), question_ranked)
    if ranked.detail:
        return ranked
    # No chunk of it among the question's results: the one sharing most of the question's terms
    # (ties: the earlier chunk), which is the chunk a reader would look at first.
    want = set(analyze(failure.question))
    best = max(ids, key=lambda cid: (len(want & set(analyze(table.chunks[cid].search_text))), -ids.index(cid)))
    return Location(method="document", chunk_id=best, chunk_ids=ids, doc_id=doc,
                    detail=f"document gold ({len(ids)} chunks); none in the question's results, {best} shares most of its terms")


def prefer_ranked(location: Location, question_ranked: Sequence[str]) -> Location:
    """A document gold re-pointed at its chunk that ranks best for the question (ids in rank
    order); any other location, or one with no chunk in `question_ranked`, is returned as is."""
    if location.method != "document":
        return location
    mine = set(location.chunk_ids)
    for rank, cid in enumerate(question_ranked, start=1):
        if cid in mine:
            return location.model_copy(update={
                "chunk_id": cid,
                "detail": f"document gold ({len(mine)} chunks); {cid} ranks best for the question (rank {rank})"})
    return location


def _by_offset(failure: FailureRow, table: ChunkTable, sources: Mapping[str, str]) -> Location | None:
    doc, off = str(failure.gold_doc), int(failure.gold_offset or 0)
    ids = table.by_doc.get(doc, [])
    if not ids:
        return _doc_absent(doc, sources)
    offsets = [(cid, table.chunks[cid].payload.get("start"), table.chunks[cid].payload.get("end")) for cid in ids]
    spans = [(cid, a, b) for cid, a, b in offsets if isinstance(a, int) and isinstance(b, int)]
    if len(spans) == len(offsets):  # every chunk records its offsets
        for cid, a, b in spans:
            if a <= off < b:
                return Location(method="offset", chunk_id=cid, chunk_ids=[cid], doc_id=doc)
        after = [cid for cid, a, _ in spans if a > off]
        if after:
            return Location(method="offset", chunk_id=after[0], chunk_ids=[after[0]], doc_id=doc,
                            detail=f"offset {off} falls between chunks; took the next one")
        return Location(method="offset", doc_id=doc, absent=True, detail=f"offset {off} lies after the last chunk of {doc!r}")
    if doc in sources:  # no offsets recorded: locate the text that starts at the offset
        snippet = sources[doc][off : off + 300]
        cut = re.search(r"(?<=[.!?])\s", snippet[40:])
        snippet = snippet[: 40 + cut.start()] if cut else snippet
        sub = ChunkTable.of(table.chunks[cid] for cid in ids)
        found = _in_chunks(snippet.strip(), sub)
        if found:
            return found.model_copy(update={"method": "offset", "detail": "chunks carry no offsets; matched the source text at the offset"})
    return None


def locate(
    failure: FailureRow,
    table: ChunkTable,
    *,
    sources: Mapping[str, str] | None = None,
    bm25: Callable[[str], list[Chunk]] | None = None,
    question_ranked: Sequence[str] = (),
) -> Location:
    """Find the gold passage of `failure` in the indexed chunks.

    `bm25(text)` returns the index's best BM25 chunks for a text (the last resort for gold
    text found nowhere verbatim); `question_ranked` the chunk ids the index returns for the
    question, best first (picks the chunk of a document gold).
    """
    sources = sources or {}
    if failure.gold_chunk:
        if failure.gold_chunk in table.chunks:
            c = table.chunks[failure.gold_chunk]
            return Location(method="chunk_id", chunk_id=c.id, chunk_ids=[c.id], doc_id=c.doc_id)
        if not failure.gold_text and failure.gold_doc is None:
            return Location(method="not_found", absent=True, detail=f"chunk {failure.gold_chunk!r} is not in the index")
    if failure.gold_doc is not None and failure.gold_offset is None:
        return _by_document(failure, table, sources, question_ranked)
    if failure.gold_doc is not None:
        found = _by_offset(failure, table, sources)
        if found is not None:
            return found
    if failure.gold_text:
        gold = failure.gold_text.strip()
        found = _in_chunks(gold, table) or _split(gold, table)
        if found is not None:
            return found
        doc = _in_sources(gold, sources)
        if doc is not None:
            return Location(method="source_only", doc_id=doc, absent=True,
                            detail=f"gold text is in source document {doc!r} but in no chunk")
        if bm25 is not None:
            want = set(analyze(gold))
            for c in bm25(gold)[:1]:
                have = set(analyze(c.search_text))
                cover = len(want & have) / len(want) if want else 0.0
                if cover >= BM25_MIN_COVERAGE:
                    return Location(method="bm25", chunk_id=c.id, chunk_ids=[c.id], doc_id=c.doc_id,
                                    detail=f"best BM25 hit holds {cover:.0%} of the gold's terms")
                return Location(method="not_found", absent=True,
                                detail=f"gold text in no chunk; best BM25 hit {c.id!r} holds only {cover:.0%} of its terms")
    return Location(method="not_found", absent=True, detail="gold passage not found in the index")
