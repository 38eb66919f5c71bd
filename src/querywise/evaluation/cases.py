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

`read_cases` and `read_beir` are the same loaders with `skip_invalid`: they load what they can
and return every bad row (`BadRow`, file:line: reason) beside the cases. A corpus record that
is skipped takes its judgements with it (each listed at its qrels line), and a query left with
no judgement is dropped (listed too), so `eval` runs on what the index could hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from querywise.catalog import Catalog
from querywise.chunking import Chunker
from querywise.conversation import Turn, TurnError, Turns, as_turns
from querywise.corpus import MAX_RECORD_CHARS, SKIP_HINT, BadRow, Chunk, beir_corpus_file, read_corpus
from querywise.files import InputError, parse_jsonl_line, read_jsonl, read_lines
from querywise.understand.slices import FORM_SLICES, TURN_SLICES, form_slice, turn_slices

__all__ = ["Case", "CaseError", "LoadedCases", "cases_from_beir_rows", "cases_from_rows", "derive_slices", "load_beir", "load_cases", "load_doc2dial", "read_beir", "read_case_source", "read_cases"]

ActionType = Literal["answer", "assume", "ask", "cover"]



class CaseError(InputError):
    """A malformed case file or data folder; the message names the file and line."""


class Case(BaseModel):
    """One labelled message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    message: str = Field(min_length=1)
    history: Turns = ()  # earlier turns, oldest first (strings are user turns)
    relevant: dict[str, int] = Field(default_factory=dict)  # chunk id -> grade (> 0)
    slices: list[str] = Field(default_factory=list)
    route: str | None = None
    filters: dict[str, Any] | None = None
    action: ActionType | None = None
    session: dict[str, str] = Field(default_factory=dict)


class LoadedCases(BaseModel):
    """Cases as loaded, the corpus chunks that came with them (BEIR), and the rows left out."""

    cases: list[Case]
    chunks: list[Chunk] = Field(default_factory=list)
    skipped: list[BadRow] = Field(default_factory=list)


class _Rows:
    """Collects bad rows when skipping, else raises the first (with the way to skip)."""

    def __init__(self, skip_invalid: bool) -> None:
        self.skip_invalid = skip_invalid
        self.skipped: list[BadRow] = []

    def bad(self, exc: InputError, record_id: str | None = None) -> None:
        if not self.skip_invalid:
            raise type(exc)(exc.path, exc.line, exc.problem + SKIP_HINT)
        self.skipped.append(BadRow.of(exc, record_id))


def _jsonl_rows(path: Path, rows: _Rows) -> Iterator[tuple[int, dict[str, Any]]]:
    """The objects of a JSONL file; a line that is not one is a bad row."""
    for n, line in read_lines(path, error=CaseError):
        try:
            rec = parse_jsonl_line(path, n, line, error=CaseError)
        except CaseError as exc:
            rows.bad(exc)
            continue
        if rec is not None:
            yield n, rec


def _canonical(tag: str) -> str:
    return tag.strip().lower().replace("-", "_")


def derive_slices(
    message: str, history: Sequence[str | Turn], given: Iterable[str] = (), *, catalog: Catalog | None = None
) -> list[str]:
    """`given` tags, plus the turn and form slices when `given` names none of their values.

    >>> derive_slices("does HC-3471 fit?", [])
    ['standalone', 'identifier']
    """
    tags = list(dict.fromkeys(_canonical(t) for t in given if t.strip()))
    if not set(tags) & set(TURN_SLICES):
        tags += turn_slices(message, history, catalog=catalog)  # weak_cue: topic continuity only, the move adds a query
    if not set(tags) & set(FORM_SLICES):
        tags.append(form_slice(message))
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
    if not isinstance(history, list):
        raise CaseError(path, line, "'history' must be a list of earlier turns, oldest first (strings, or {\"role\", \"text\"})")
    try:
        history = rec["history"] = as_turns(history)
    except TurnError as exc:
        raise CaseError(path, line, str(exc)) from None
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
    return read_cases(path, catalog=catalog).cases


def read_cases(path: Path | str, *, catalog: Catalog | None = None, skip_invalid: bool = False) -> LoadedCases:
    """`load_cases`, and with `skip_invalid` every bad line is skipped and listed instead of
    stopping the load (a repeated id: the later line).

    >>> loaded = read_cases("cases.jsonl", skip_invalid=True)  # doctest: +SKIP
    """
    path = Path(path)
    rows = _Rows(skip_invalid)
    return _read_cases(_jsonl_rows(path, rows), path, rows, catalog)


def cases_from_rows(records: Iterable[dict[str, Any]], *, catalog: Catalog | None = None, source: str = "rows") -> list[Case]:
    """`load_cases` of case objects already in memory (a service's posted JSON): a bad one is named
    `source:N`, N its number from 1."""
    return _read_cases(enumerate(records, start=1), Path(source), _Rows(False), catalog).cases


def cases_from_beir_rows(queries: Iterable[dict[str, Any]], qrels: str, *, source: str = "rows") -> list[Case]:
    """The judged queries of a BEIR set already in memory (a service's posted queries.jsonl rows and
    its qrels file's text), judged against the served index: one case per query with a judgement
    > 0, in qrels order; a query row's "session", as a case row's, is the case's. A bad query row is
    named `source:N`, a bad qrels line `qrels:N`."""
    texts: dict[str, str] = {}
    sessions: dict[str, Any] = {}
    for n, rec in enumerate(queries, start=1):
        qid, text = rec.get("_id", rec.get("id")), rec.get("text")
        if qid is None or not isinstance(text, str) or not text.strip():
            raise CaseError(Path(source), n, "expected {\"_id\": ..., \"text\": \"...\"}")
        texts[str(qid)] = text
        if rec.get("session") is not None:
            sessions[str(qid)] = rec["session"]
    cases = []
    for qid, judged in _parse_qrels(enumerate(qrels.splitlines(), start=1), Path("qrels")).items():
        if not judged:
            continue
        if qid not in texts:
            raise CaseError(Path("qrels"), min(n for _, n in judged.values()), f"query {qid!r} is judged but not among the queries")
        rel = {doc: grade for doc, (grade, _) in judged.items()}
        try:
            cases.append(Case(id=qid, message=texts[qid], relevant=rel, slices=derive_slices(texts[qid], []), session=sessions.get(qid, {})))
        except ValidationError as exc:
            raise CaseError(Path(source), None, f"query {qid!r}: {exc.errors()[0]['msg']}") from None
    if not cases:
        raise CaseError(Path("qrels"), None, "no query has a relevant document")
    return cases


def _read_cases(numbered: Iterable[tuple[int, dict[str, Any]]], path: Path, rows: _Rows, catalog: Catalog | None) -> LoadedCases:
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for line, rec in numbered:
        try:
            case = _case_from(rec, path, line, catalog)
            if case.id in seen:
                raise CaseError(path, line, f"duplicate id {case.id!r} (first at line {seen[case.id]})")
        except CaseError as exc:
            rows.bad(exc)
            continue
        seen[case.id] = line
        cases.append(case)
    if not cases:
        raise CaseError(path, None, "no cases" + (f" ({len(rows.skipped):,} bad lines skipped, the first {rows.skipped[0]})" if rows.skipped else ""))
    return LoadedCases(cases=cases, skipped=rows.skipped)


def read_case_source(source: Path | str, *, catalog: Catalog | None = None, split: str = "test", skip_invalid: bool = False,
                     max_record_chars: int = MAX_RECORD_CHARS) -> LoadedCases:
    """What `querywise eval` reads: a JSONL case file (`read_cases`) or a BEIR folder (`read_beir`)."""
    source = Path(source)
    if source.is_dir():
        return read_beir(source, split=split, skip_invalid=skip_invalid, max_record_chars=max_record_chars)
    return read_cases(source, catalog=catalog, skip_invalid=skip_invalid)


# --- BEIR ------------------------------------------------------------------------------------


def _first_existing(folder: Path, names: Sequence[str]) -> Path:
    for name in names:
        if (folder / name).exists():
            return folder / name
    raise CaseError(folder, None, f"no {' or '.join(names)} in this folder")


def _read_qrels(path: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """query id -> {corpus id: (grade, line)} for grades > 0; a judged query with none is kept empty."""
    return _parse_qrels(read_lines(path, error=CaseError), path)


def _parse_qrels(numbered: Iterable[tuple[int, str]], path: Path) -> dict[str, dict[str, tuple[int, int]]]:
    qrels: dict[str, dict[str, tuple[int, int]]] = {}
    for n, raw in numbered:
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
            qrels[parts[0]][parts[1]] = (grade, n)
    return qrels


def load_beir(folder: Path | str, split: str = "test") -> tuple[list[Chunk], list[Case]]:
    """The corpus and the judged queries of a BEIR-format folder.

    Reads `corpus.jsonl[.gz]` (`_id`, `title`, `text`), `queries.jsonl[.gz]` (`_id`, `text`) and
    `qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`, with BEIR's header). One case per
    query with at least one judgement > 0, in qrels order; every qrel must name a corpus id.
    Records are kept whole, one chunk each: BEIR judges documents (`querywise index` cuts long
    ones, and the harness then scores those cases per document).

    >>> chunks, cases = load_beir("scifact", split="test")  # doctest: +SKIP
    """
    loaded = read_beir(folder, split)
    return loaded.chunks, loaded.cases


def read_beir(
    folder: Path | str, split: str = "test", *, skip_invalid: bool = False, max_record_chars: int = MAX_RECORD_CHARS
) -> LoadedCases:
    """`load_beir`, and with `skip_invalid` a bad corpus record, query line or judgement is
    skipped and listed: a judgement of a skipped (or absent) record is dropped at its qrels line,
    and a query whose judgements are all dropped is dropped too.

    >>> loaded = read_beir("trec-covid", skip_invalid=True)  # doctest: +SKIP
    """
    root = Path(folder)
    if not root.is_dir():
        raise CaseError(root, None, "not a folder (expected corpus.jsonl, queries.jsonl, qrels/)")
    if beir_corpus_file(root) is None:
        raise CaseError(root, None, "no corpus.jsonl or corpus.jsonl.gz in this folder")
    corpus = read_corpus(root, max_record_chars=max_record_chars, skip_invalid=skip_invalid, whole_records=True)
    rows = _Rows(skip_invalid)
    rows.skipped.extend(corpus.skipped)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        available = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        raise CaseError(qrels_path, None, f"no such qrels file (splits here: {', '.join(available) or 'none'})")
    qrels = _read_qrels(qrels_path)
    queries_path = _first_existing(root, ["queries.jsonl", "queries.jsonl.gz"])
    queries: dict[str, str] = {}
    for line, rec in _jsonl_rows(queries_path, rows):
        qid, text = rec.get("_id", rec.get("id")), rec.get("text")
        if qid is None or not isinstance(text, str) or not text.strip():
            rows.bad(CaseError(queries_path, line, "expected {\"_id\": ..., \"text\": \"...\"}"), str(qid) if qid is not None else None)
            continue
        queries[str(qid)] = text
    # A judgement may name a record or (chunked elsewhere) one of its chunks' documents.
    ids = {c.id for c in corpus.chunks} | {c.doc_id for c in corpus.chunks}
    skipped_at = {b.record_id: b.where for b in corpus.skipped if b.record_id is not None}
    cases: list[Case] = []
    for qid, judged in qrels.items():
        if not judged:
            continue
        first_line = min(n for _, n in judged.values())
        if qid not in queries:
            rows.bad(CaseError(qrels_path, first_line, f"query {qid!r} is judged but not in {queries_path.name}"), qid)
            continue
        rel: dict[str, int] = {}
        for doc, (grade, n) in judged.items():
            if doc in ids:
                rel[doc] = grade
            elif doc in skipped_at:
                rows.bad(CaseError(qrels_path, n, f"query {qid!r} judges {doc!r}, a corpus record skipped at {skipped_at[doc]}: judgement dropped"), qid)
            else:
                rows.bad(CaseError(qrels_path, n, f"query {qid!r} judges corpus id {doc!r}, which is not in the corpus"), qid)
        if not rel:
            rows.bad(CaseError(qrels_path, first_line, f"query {qid!r} dropped: none of its judgements is left"), qid)
            continue
        cases.append(Case(id=qid, message=queries[qid], relevant=rel, slices=derive_slices(queries[qid], [])))
    if not cases:
        raise CaseError(qrels_path, None, "no query has a relevant document")
    return LoadedCases(cases=cases, chunks=corpus.chunks, skipped=rows.skipped)


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
        history = as_turns(turns)  # the agent's turns too: real follow-ups point into the answers
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
