"""Evaluation cases: a message, its conversation, the chunks that answer it, and its slices.

A case file is JSONL, one case a line:

    {"id": "q1", "message": "and the Pro?", "history": ["Warranty on the Solace 7?"],
     "relevant": {"solace-7-pro-warranty": 2, "warranty-overview": 1},
     "slices": ["policy"], "route": "kb_search", "filters": {"category": "headphones"},
     "action": "answer", "session": {"market": "eu"}}

- `relevant` is a list of chunk ids (grade 1 each) or an object of id -> grade (graded nDCG).
- `slices` (or `tags`) name the slices the case belongs to. Two families are derived when the
  file names none of their values: the turn (`follow_up` when the follow-up gate says the message
  leans on its history, else `standalone`) and the form (`identifier` when the message holds a
  part-number-like code, else `prose`). Other tags (policy, typo, ...) are kept as written.
  "follow-up" is read as "follow_up".
- `route`, `filters`, `action` (answer|assume|ask|cover) are optional expectations, scored by
  the component report; `session` is the authenticated session the case runs under.

Loaders for public formats: `load_beir` (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv)
and `load_doc2dial` (documents.jsonl + a turns file, gold chunk = the one holding the grounding
span's start).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from querywise.catalog import Catalog
from querywise.checks.guard import DEFAULT_IDENTIFIER_PATTERNS
from querywise.chunking import Chunker
from querywise.corpus import Chunk, load_corpus
from querywise.files import InputError, read_jsonl, read_lines
from querywise.understand.followup import check_follow_up

__all__ = ["Case", "CaseError", "derive_slices", "load_beir", "load_cases", "load_doc2dial"]

ActionType = Literal["answer", "assume", "ask", "cover"]

TURN_SLICES = ("follow_up", "standalone")
FORM_SLICES = ("identifier", "prose")
_IDENTIFIER = re.compile("|".join(DEFAULT_IDENTIFIER_PATTERNS))


class CaseError(InputError):
    """A malformed case file or data folder; the message names the file and line."""


class Case(BaseModel):
    """One labelled message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    message: str = Field(min_length=1)
    history: list[str] = Field(default_factory=list)  # earlier user turns, oldest first
    relevant: dict[str, int] = Field(default_factory=dict)  # chunk id -> grade (> 0)
    slices: list[str] = Field(default_factory=list)
    route: str | None = None
    filters: dict[str, Any] | None = None
    action: ActionType | None = None
    session: dict[str, str] = Field(default_factory=dict)


def _canonical(tag: str) -> str:
    return tag.strip().lower().replace("-", "_")


def derive_slices(
    message: str, history: Sequence[str], given: Iterable[str] = (), *, catalog: Catalog | None = None
) -> list[str]:
    """`given` tags, plus the turn and form slices when `given` names none of their values.

    >>> derive_slices("does HC-3471 fit?", [])
    ['standalone', 'identifier']
    """
    tags = list(dict.fromkeys(_canonical(t) for t in given if t.strip()))
    if not set(tags) & set(TURN_SLICES):
        gate = check_follow_up(message, history, catalog=catalog)
        tags.append("follow_up" if gate.needs_context else "standalone")
        if gate.strength == "weak":  # topic continuity only: the move adds a query, replaces none
            tags.append("weak_cue")
    if not set(tags) & set(FORM_SLICES):
        tags.append("identifier" if _IDENTIFIER.search(message) else "prose")
    return tags


def _relevant(raw: Any, path: Path, line: int) -> dict[str, int]:
    if isinstance(raw, list) and all(isinstance(x, str | int) and not isinstance(x, bool) for x in raw):
        return {str(x): 1 for x in raw}
    if isinstance(raw, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        return {str(k): v for k, v in raw.items() if v > 0}
    raise CaseError(path, line, "'relevant' must be a list of chunk ids or an object of chunk id -> integer grade")


def _case_from(rec: dict[str, Any], path: Path, line: int, catalog: Catalog | None) -> Case:
    rec = dict(rec)
    if "tags" in rec:
        if "slices" in rec:
            raise CaseError(path, line, "give 'slices' or 'tags', not both")
        rec["slices"] = rec.pop("tags")
    message, history = rec.get("message"), rec.get("history", [])
    if not isinstance(message, str) or not message.strip():
        raise CaseError(path, line, "missing 'message' (a non-empty string)")
    if not isinstance(history, list) or not all(isinstance(h, str) for h in history):
        raise CaseError(path, line, "'history' must be a list of strings (earlier user turns, oldest first)")
    slices = rec.get("slices", [])
    if not isinstance(slices, list) or not all(isinstance(s, str) for s in slices):
        raise CaseError(path, line, "'slices' must be a list of strings")
    rec["relevant"] = _relevant(rec.get("relevant", []), path, line)
    rec["slices"] = derive_slices(message, history, slices, catalog=catalog)
    rec.setdefault("id", f"line-{line}")
    if isinstance(rec["id"], int) and not isinstance(rec["id"], bool):
        rec["id"] = str(rec["id"])
    try:
        return Case.model_validate(rec)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'case'}: {e['msg']}" for e in exc.errors())
        raise CaseError(path, line, problems) from None


def load_cases(path: Path | str, *, catalog: Catalog | None = None) -> list[Case]:
    """Every case of a JSONL case file (see the module docstring), slices derived where missing.

    `catalog` lets the follow-up gate see product names ("and the Pro?") when deriving slices.

    >>> cases = load_cases("cases.jsonl")  # doctest: +SKIP
    """
    path = Path(path)
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for line, rec in read_jsonl(path, error=CaseError):
        case = _case_from(rec, path, line, catalog)
        if case.id in seen:
            raise CaseError(path, line, f"duplicate id {case.id!r} (first at line {seen[case.id]})")
        seen[case.id] = line
        cases.append(case)
    if not cases:
        raise CaseError(path, None, "no cases")
    return cases


# --- BEIR ------------------------------------------------------------------------------------


def _first_existing(folder: Path, names: Sequence[str]) -> Path:
    for name in names:
        if (folder / name).exists():
            return folder / name
    raise CaseError(folder, None, f"no {' or '.join(names)} in this folder")


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for n, raw in read_lines(path, error=CaseError):
        line = raw.strip()
        if not line:
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if n == 1 and parts[0].lower() in ("query-id", "query_id", "qid"):
            continue  # the header BEIR writes
        if len(parts) == 4:  # TREC form: qid 0 docid grade
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise CaseError(path, n, f"expected 'query-id<TAB>corpus-id<TAB>score', got {len(parts)} fields")
        try:
            grade = int(float(parts[2]))
        except (ValueError, OverflowError):  # not a number, NaN, or infinite
            raise CaseError(path, n, f"score {parts[2][:40]!r} is not a finite number") from None
        qrels.setdefault(parts[0], {})
        if grade > 0:  # BEIR: 0 marks judged non-relevant
            qrels[parts[0]][parts[1]] = grade
    return qrels


def load_beir(folder: Path | str, split: str = "test") -> tuple[list[Chunk], list[Case]]:
    """The corpus and the judged queries of a BEIR-format folder.

    Reads `corpus.jsonl[.gz]` (`_id`, `title`, `text`), `queries.jsonl[.gz]` (`_id`, `text`) and
    `qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`, with BEIR's header). One case per
    query with at least one judgement > 0, in qrels order; every qrel must name a corpus id.

    >>> chunks, cases = load_beir("scifact", split="test")  # doctest: +SKIP
    """
    root = Path(folder)
    if not root.is_dir():
        raise CaseError(root, None, "not a folder (expected corpus.jsonl, queries.jsonl, qrels/)")
    chunks = load_corpus(_first_existing(root, ["corpus.jsonl", "corpus.jsonl.gz"]))
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        available = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        raise CaseError(qrels_path, None, f"no such qrels file (splits here: {', '.join(available) or 'none'})")
    qrels = _read_qrels(qrels_path)
    queries_path = _first_existing(root, ["queries.jsonl", "queries.jsonl.gz"])
    queries: dict[str, str] = {}
    for line, rec in read_jsonl(queries_path, error=CaseError):
        qid, text = rec.get("_id", rec.get("id")), rec.get("text")
        if qid is None or not isinstance(text, str) or not text.strip():
            raise CaseError(queries_path, line, "expected {\"_id\": ..., \"text\": \"...\"}")
        queries[str(qid)] = text
    ids = {c.id for c in chunks}
    cases: list[Case] = []
    for qid, rel in qrels.items():
        if not rel:
            continue
        if qid not in queries:
            raise CaseError(qrels_path, None, f"query {qid!r} is judged but not in {queries_path.name}")
        unknown = sorted(set(rel) - ids)
        if unknown:
            raise CaseError(qrels_path, None, f"query {qid!r} judges corpus ids not in the corpus: {unknown[:5]}")
        cases.append(Case(id=qid, message=queries[qid], relevant=rel, slices=derive_slices(queries[qid], [])))
    if not cases:
        raise CaseError(qrels_path, None, "no query has a relevant document")
    return chunks, cases


# --- doc2dial-style conversations --------------------------------------------------------------


def _gold_chunk(pieces: Sequence[Chunk], start: int) -> Chunk | None:
    """The chunk holding character `start`; in the blank between two chunks, the next one."""
    for chunk in pieces:
        if start < int(chunk.payload["end"]):
            return chunk
    return None


def load_doc2dial(folder: Path | str, chunker: Chunker) -> tuple[list[Chunk], list[Case]]:
    """Chunks of `documents.jsonl` and one case per user turn of `validation_turns.jsonl[.gz]`.

    Documents are `{"doc_id", "title", "text", "domain"?}`; turns are `{"id", "query",
    "history": [{"role", "text"}], "doc_id", "answer_start", "domain"?}`. Each document is cut
    by `chunker` (plain text: paragraphs at blank lines); a chunk's title is the document title,
    its payload holds `doc_id`, `domain`, `start`, `end`. The relevant chunk of a turn is the
    chunk holding its grounding span's start. A case's history is the earlier *user* turns, as
    the understander takes them. Slices: follow_up/standalone by the follow-up gate, plus
    `first_turn` for dialogue openers and `domain:<name>`.

    >>> chunks, cases = load_doc2dial("doc2dial", Chunker())  # doctest: +SKIP
    """
    root = Path(folder)
    docs_path = _first_existing(root, ["documents.jsonl", "documents.jsonl.gz"])
    turns_path = _first_existing(root, ["validation_turns.jsonl.gz", "validation_turns.jsonl", "turns.jsonl", "turns.jsonl.gz"])
    chunks: list[Chunk] = []
    by_doc: dict[str, list[Chunk]] = {}
    for line, rec in read_jsonl(docs_path, error=CaseError):
        doc_id, text, title = rec.get("doc_id"), rec.get("text"), rec.get("title", "")
        if not isinstance(doc_id, str) or not doc_id or not isinstance(text, str) or not isinstance(title, str):
            raise CaseError(docs_path, line, 'expected {"doc_id": "...", "title": "...", "text": "..."}')
        if doc_id in by_doc:
            raise CaseError(docs_path, line, f"duplicate doc_id {doc_id!r}")
        domain = rec.get("domain")
        pieces = [
            Chunk(
                id=p.chunk_id,
                text=p.text,
                title=title.strip(),
                payload={"doc_id": doc_id, **({"domain": domain} if isinstance(domain, str) else {}), "start": p.start, "end": p.end},
            )
            for p in chunker.split(text, doc_id=doc_id, markdown=False)
        ]
        by_doc[doc_id] = pieces
        chunks.extend(pieces)
    cases: list[Case] = []
    for line, rec in read_jsonl(turns_path, error=CaseError):
        query, doc_id, start, turns = rec.get("query"), rec.get("doc_id"), rec.get("answer_start"), rec.get("history", [])
        if not isinstance(query, str) or not query.strip():
            raise CaseError(turns_path, line, "missing 'query' (a non-empty string)")
        if doc_id not in by_doc:
            raise CaseError(turns_path, line, f"doc_id {doc_id!r} is not in {docs_path.name}")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise CaseError(turns_path, line, "'answer_start' must be a character offset (integer >= 0)")
        if not isinstance(turns, list) or not all(isinstance(t, dict) and isinstance(t.get("text"), str) for t in turns):
            raise CaseError(turns_path, line, "'history' must be a list of {\"role\", \"text\"}")
        gold = _gold_chunk(by_doc[doc_id], start)
        if gold is None:
            raise CaseError(turns_path, line, f"answer_start {start} is past the end of document {doc_id!r}")
        history = [t["text"] for t in turns if t.get("role", "user") == "user"]
        extra = ["first_turn"] if not turns else []
        if isinstance(rec.get("domain"), str):
            extra.append(f"domain:{rec['domain']}")
        cases.append(
            Case(
                id=str(rec.get("id", f"line-{line}")),
                message=query,
                history=history,
                relevant={gold.id: 1},
                slices=derive_slices(query, history, extra),
            )
        )
    if not cases:
        raise CaseError(turns_path, None, "no turns")
    return chunks, cases
