"""The public data sets the benchmarks read, each loaded here and nowhere else.

Data live in ../shared/data (`QUERYWISE_BENCH_DATA` overrides; /work/shared/data/README.md says what
each folder holds) and are read at run time: nothing from them is stored in the repository.
Benchmarks import their loaders from this module, never from one another.

    from bench import datasets
    chunks, cases = datasets.scifact("test")          # BEIR, through the library's loader
    chunks, cases = datasets.doc2dial()               # the help centre cut by the default chunker
    rows, ids = datasets.cast2019()                   # TREC CAsT 2019 turns with human rewrites
    rows, ids, user_only = datasets.cast2020()        # TREC CAsT 2020 (and which rewrites need no answer)
    raw = datasets.clinc150()                         # {"train": [[text, intent], ...], ...}
    settings, chunks, cases = datasets.cast_rewrites("2020")()   # a deployment to ask: see the last section
    ref = datasets.helpcentre()                       # the reference help centre (../shared/reference)

Splits are by a hash, so that a split never depends on the order of a file: doc2dial by document
(`doc2dial_split`), CAsT by topic (`cast2019_split`), 60 / 20 / 20 train / val / test.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import DATA, WORK

SCIFACT = DATA / "scifact"
DOC2DIAL = DATA / "doc2dial"
CAST2019 = DATA / "trec_cast_2019" / "evaluation"
CLINC150 = DATA / "clinc150" / "data_full.json"
HELPCENTRE = DATA.parent / "reference" / "helpcentre.json"
SPLITS = ("train", "val", "test")
#: CLINC150's keys in data_full.json: in-scope and out-of-scope messages per split.
CLINC150_SPLITS = ("train", "val", "test", "oos_train", "oos_val", "oos_test")


def _hash_split(key: str) -> str:
    bucket = int(hashlib.sha1(key.encode()).hexdigest(), 16) % 10
    return "train" if bucket < 6 else "val" if bucket < 8 else "test"


# --------------------------------------------------------------------------- SciFact (BEIR)


def beir(folder: Path, split: str = "test") -> tuple[list[Any], list[Any]]:
    """Chunks (one per document) and judged cases of a BEIR folder, through the library's loader."""
    from querywise.evaluation.cases import load_beir

    return load_beir(folder, split=split)


def scifact(split: str = "test") -> tuple[list[Any], list[Any]]:
    """SciFact's 5,183 abstracts and the judged claims of `split` (test: 300)."""
    return beir(SCIFACT, split)


def scifact_records() -> Iterator[dict[str, Any]]:
    """SciFact's abstracts as stored (`_id`, `title`, `text`, `metadata.sentences`)."""
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def scifact_test() -> tuple[list[tuple[str, str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """The raw test split, for engines outside the library: (id, title, text) per abstract, the
    judged queries by id and their judgements."""
    docs = [(str(r["_id"]), r.get("title", ""), r.get("text", "")) for r in scifact_records()]
    qrels: dict[str, dict[str, int]] = {}
    with open(SCIFACT / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            q, d, s = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[d] = int(s)
    queries = {}
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if str(r["_id"]) in qrels:
                queries[str(r["_id"])] = r["text"]
    return docs, queries, qrels


# --------------------------------------------------------------------------- doc2dial


def doc2dial(chunker: Any = None) -> tuple[list[Any], list[Any]]:
    """The 273 documents cut by `chunker` (the default Chunker) and the 3,972 validation user turns
    as cases (history kept; the gold chunk holds the grounding span's start)."""
    from querywise.chunking import Chunker
    from querywise.evaluation.cases import load_doc2dial

    return load_doc2dial(DOC2DIAL, chunker if chunker is not None else Chunker())


def doc2dial_documents() -> Iterator[dict[str, Any]]:
    """doc2dial's documents as stored (`doc_id`, `title`, `text`, `domain`)."""
    with open(DOC2DIAL / "documents.jsonl", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def doc2dial_turns() -> Iterator[dict[str, Any]]:
    """doc2dial's validation user turns as stored (`id`, `query`, `history`, `doc_id`, ...)."""
    with gzip.open(DOC2DIAL / "validation_turns.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def doc2dial_split(doc_id: str) -> str:
    """Train / val / test by document: 60 / 20 / 20 by a hash of the document id."""
    return _hash_split(doc_id)


def document_of(case: Any) -> str:
    """The document a doc2dial case's gold chunk belongs to."""
    return str(next(iter(case.relevant))).split("#")[0]


def changes_of_subject(cases: Sequence[Any], *, answered: bool = False) -> list[Any]:
    """Each dialogue's first turn placed after the first turn of a dialogue about another document,
    so that any follow-up flag on it is false. With `answered`, after that turn and the agent's
    answer to it (a change of subject after an answer; dialogues whose opener has no answer are
    left out)."""
    from querywise.conversation import Turn

    firsts = [c for c in cases if not c.history]
    opened: dict[str, tuple[Turn, ...]] = {}
    for c in cases:  # the opener and its answer, as the dialogue's second turn carries them
        if len(c.history) >= 2 and c.history[1].role == "assistant":
            opened.setdefault(c.history[0].text, tuple(c.history[:2]))
    moved = []
    for i, c in enumerate(firsts):
        others = [o for o in firsts[i + 1 :] + firsts[:i] if document_of(o) != document_of(c) and (not answered or o.message in opened)]
        if others:
            history = opened[others[0].message] if answered else (Turn(text=others[0].message),)
            moved.append(c.model_copy(update={"history": history}))
    return moved


def doc2dial_faq_folder() -> Path:
    """doc2dial's documents and dialogue openers as a BEIR folder (corpus, queries, qrels/test.tsv)
    under bench/work: a FAQ box sees one question, not a conversation."""
    out = WORK / "first_contact" / "faq-beir"
    if (out / "qrels" / "test.tsv").exists():
        return out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as c:
        for d in doc2dial_documents():
            c.write(json.dumps({"_id": d["doc_id"], "title": d["title"], "text": d["text"], "domain": d["domain"]}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as q, (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        for t in doc2dial_turns():
            if t["history"]:  # openers only
                continue
            q.write(json.dumps({"_id": t["id"], "text": t["query"]}) + "\n")
            r.write(f"{t['id']}\t{t['doc_id']}\t1\n")
    return out


# --------------------------------------------------------------------------- the reference help centre


def helpcentre(path: Path = HELPCENTRE) -> dict[str, Any]:
    """The reference help centre (../shared/reference/helpcentre.json): its chunks, catalog, route
    examples, follow-ups with their standalone rewrites and the typo rows."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --------------------------------------------------------------------------- TREC CAsT 2019


def cast2019(data: Path = DATA) -> tuple[list[Any], list[str]]:
    """Rewrite rows in topic and turn order (raw utterance = message, the topic's earlier raw
    utterances = history, the manual rewrite = standalone), and each row's `topic_turn` id."""
    from querywise.evaluation.rewrites import RewriteRow

    folder = data / "trec_cast_2019" / "evaluation"
    topics = json.loads((folder / "evaluation_topics_v1.0.json").read_text(encoding="utf-8"))
    manual: dict[str, str] = {}
    for line in (folder / "evaluation_topics_annotated_resolved_v1.0.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip():
            key, text = line.split("\t", 1)
            manual[key] = text
    rows, ids = [], []
    for topic in topics:
        history: list[str] = []
        for turn in topic["turn"]:
            key = f"{topic['number']}_{turn['number']}"
            rows.append(RewriteRow(history=tuple(history), message=turn["raw_utterance"], standalone=manual[key]))
            ids.append(key)
            history.append(turn["raw_utterance"])
    return rows, ids


def cast2019_split(topic_turn: str) -> str:
    """Train / val / test by topic (never by turn): 60 / 20 / 20 of the topics by a hash of the number."""
    return _hash_split(topic_turn.split("_")[0])


# --------------------------------------------------------------------------- TREC CAsT 2020


def cast2020(data: Path = DATA) -> tuple[list[Any], list[str], list[bool]]:
    """Rewrite rows of CAsT 2020 in topic and turn order, as `cast2019` reads 2019, from the
    annotated topics (v1.1: raw utterance, manual rewrite and what each rewrite depends on), each
    row's `topic_turn` id, and whether its rewrite draws only on the user's own turns (no
    `result_turn_dependence`: the answer passages a rewrite may quote are not in the data). A
    first turn without a rewrite (five topics) stands as typed."""
    from querywise.evaluation.rewrites import RewriteRow

    path = data / "trec_cast_2020" / "automatic_evaluation_topics_annotated_v1.1.json"
    topics = json.loads(path.read_text(encoding="utf-8"))
    rows, ids, user_only = [], [], []
    for topic in topics:
        history: list[str] = []
        for turn in topic["turn"]:
            rows.append(RewriteRow(history=tuple(history), message=turn["raw_utterance"], standalone=turn.get("manual_rewritten_utterance", turn["raw_utterance"])))
            ids.append(f"{topic['number']}_{turn['number']}")
            user_only.append("result_turn_dependence" not in turn)
            history.append(turn["raw_utterance"])
    return rows, ids, user_only


# --------------------------------------------------------------------------- CLINC150


def clinc150(path: Path = CLINC150) -> dict[str, list[list[Any]]]:
    """CLINC150's full split: {split: [[text, intent], ...]} for `CLINC150_SPLITS`."""
    data: dict[str, list[list[Any]]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def clinc150_texts(raw: dict[str, list[list[Any]]], *splits: str) -> tuple[list[str], list[str]]:
    """The messages and intents of some splits, in file order."""
    rows = [r for s in splits for r in raw[s]]
    return [str(t) for t, _ in rows], [str(lab) for _, lab in rows]


# --------------------------------------------------------------------------- deployments: (settings, chunks, cases)


def demo_deployment() -> tuple[Any, list[Any], list[Any]]:
    """The demo shop: its own config, corpus and labelled cases (EU session where a case has none)."""
    from querywise.config import load_settings
    from querywise.demo import demo_corpus, demo_file
    from querywise.evaluation.cases import load_cases

    cases = [c if c.session else c.model_copy(update={"session": {"market": "eu"}}) for c in load_cases(demo_file("eval_cases.jsonl"))]
    return load_settings(demo_file("querywise.toml")), demo_corpus(), cases


def helpcentre_deployment() -> tuple[Any, list[Any], list[Any]]:
    """The reference help centre as a deployment: its catalog and router, the default moves."""
    import re

    from querywise.config import DeploymentSettings, RouteSpec, RoutingSettings, Settings
    from querywise.corpus import Chunk
    from querywise.evaluation.cases import Case, derive_slices

    ref = helpcentre()
    WORK.mkdir(parents=True, exist_ok=True)
    catalog = WORK / "gate-helpcentre-catalog.jsonl"
    catalog.write_text("".join(json.dumps({**e, "id": str(e["id"])}) + "\n" for e in ref["catalog"]), encoding="utf-8")
    routes = [RouteSpec(name=name, examples=examples, search=name == "kb_search") for name, examples in ref["route_examples"].items()]
    settings = Settings(routing=RoutingSettings(routes=routes, classifier="centroid", min_margin=0.05, default_route="kb_search"),
                        deployment=DeploymentSettings(catalog=catalog))
    chunks = [Chunk(id=k, text=v) for k, v in ref["chunks"].items()]
    words = {w for text in ref["chunks"].values() for w in re.findall(r"[a-z0-9]+", text.lower())}
    cases = []
    for i, f in enumerate(ref["follow_ups"]):
        history = list(f["history"])
        cases.append(Case(id=f"follow-{i}", message=f["message"], history=history, relevant={f["relevant"]: 1},
                          slices=derive_slices(f["message"], history)))
        cases.append(Case(id=f"rewrite-{i}", message=f["standalone"], relevant={f["relevant"]: 1}, slices=derive_slices(f["standalone"], [])))
    rows = ref["expected"]["typo_ranks_bm25_dense"]["rows"]
    unknown = [set(re.findall(r"[a-z0-9]+", query.lower())) - words for query, *_ in rows]
    for i, (query, gold, _bm25, _dense) in enumerate(rows):
        # a typo: a word the corpus lacks that no other row about the same chunk has ("how to" is in both forms)
        typo = ["typo"] if unknown[i] - set().union(*(u for j, u in enumerate(unknown) if j != i and rows[j][1] == gold)) else []
        cases.append(Case(id=f"typo-{i}", message=query, relevant={gold: 1}, slices=derive_slices(query, [], typo)))
    return settings, chunks, cases


def cast_rewrites(year: str) -> Callable[[], tuple[Any, list[Any], list[Any]]]:
    """A CAsT year with the human rewrites as the corpus: each turn must find its own rewrite."""

    def load() -> tuple[Any, list[Any], list[Any]]:
        from querywise.config import Settings
        from querywise.corpus import Chunk
        from querywise.evaluation.cases import Case, derive_slices

        rows, ids = cast2019() if year == "2019" else cast2020()[:2]
        chunks = [Chunk(id=key, text=row.standalone) for row, key in zip(rows, ids, strict=True)]
        cases = [Case(id=key, message=row.message, history=list(row.history), relevant={key: 1}, slices=derive_slices(row.message, row.history))
                 for row, key in zip(rows, ids, strict=True)]
        return Settings(), chunks, cases

    return load
