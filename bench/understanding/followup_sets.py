"""The team's own conversation sets for `followup_gate` (answers in the history): the question-answer
dialogues and the passage and QA conversation files, scored and rendered into their pages.

Split from followup_gate.py, which keeps the CAsT years and the command: see its docstring for what
each file is and which of them are held out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import ROOT
from querywise.evaluation.rewrites import RewriteRow, evaluate_rewrites, load_rewrite_rows, plan_rewriter, subject_rewriter

if TYPE_CHECKING:
    from querywise.service import QueryWise


def rounded(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


DIALOGUES = {"read": "read while the answer rules were chosen", "heldout": "written before them, not read since"}
#: A CAsT 2021/22 canonical passage runs to 100-250 words; a QuAC answer is a sentence or two.
PASSAGE_WORDS = 80
PASSAGES = {
    "all": "pooled",
    "passages": "CAsT 2021/22-style: a passage as each answer",
    "qa": "QuAC-style: 'Title. Section', sentence answers",
}


def dialogue_figures(rows: Sequence[RewriteRow], deployment: QueryWise, role: str) -> dict[str, Any]:
    """Gate, guard and added terms on dialogue rows, with the 'subject + message' baseline beside."""
    rep = evaluate_rewrites(rows, rewriter=plan_rewriter(deployment), baseline=subject_rewriter())
    return {"role": role, "rows": rep.n, "rewritten": rep.n_rewritten, "gate_recall": rounded(rep.gate_recall),
            "gate_precision": rounded(rep.gate_precision), "guard_false_alarm_rate": rounded(rep.guard_false_alarm_rate),
            "added_term_recall": rounded(rep.added_term_recall), "added_term_precision": rounded(rep.added_term_precision),
            "token_f1": rounded(rep.token_f1), "baseline_added_term_recall": rounded(rep.baseline_added_term_recall),
            "baseline_added_term_precision": rounded(rep.baseline_added_term_precision)}


def dialogues_result() -> dict[str, Any]:
    """Gate, guard and added terms on the team's question-answer dialogues (answers in the history)."""
    from querywise.config import Settings
    from querywise.service import QueryWise

    with QueryWise(Settings()) as qw:
        return {name: dialogue_figures(load_rewrite_rows(Path(__file__).with_name(f"dialogues_{name}.jsonl")), qw, role)
                for name, role in DIALOGUES.items()}


def is_passage_row(row: RewriteRow) -> bool:
    """The row follows a CAsT-style passage answer (any assistant turn of `PASSAGE_WORDS` words or more)."""
    return any(t.role == "assistant" and len(t.text.split()) >= PASSAGE_WORDS for t in row.history)


def passages_result(name: str = "passages") -> dict[str, Any]:
    """The passage and QA conversations of `dialogues_<name>.jsonl`, pooled and per kind."""
    from querywise.config import Settings
    from querywise.service import QueryWise

    rows = load_rewrite_rows(Path(__file__).with_name(f"dialogues_{name}.jsonl"))
    parts = {"all": rows, "passages": [r for r in rows if is_passage_row(r)], "qa": [r for r in rows if not is_passage_row(r)]}
    with QueryWise(Settings()) as qw:
        out: dict[str, Any] = {name: dialogue_figures(parts[name], qw, role) for name, role in PASSAGES.items()}
    # The set is re-scored as the follow-up move changes: the page names the code each run scored.
    out["code_commit"] = _last_commit(ROOT / "src" / "querywise")
    return out


def _last_commit(folder: Path) -> str | None:
    """The last commit that changed `folder` (None outside a git checkout)."""
    import subprocess

    try:
        done = subprocess.run(["git", "log", "-1", "--format=%h %cs", "--", str(folder)], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return done.stdout.strip() or None


DIALOGUE_COLUMNS = [
    "| file | rows (rewritten) | gate recall | gate precision | guard false alarms | added-term recall | added-term precision "
    "| token F1 | subject + message: recall | precision |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def dialogue_row(label: str, r: dict[str, Any]) -> str:
    return (f"| {label} | {r['rows']} ({r['rewritten']}) | {r['gate_recall']} | {r['gate_precision']} | "
            f"{r['guard_false_alarm_rate']} | {r['added_term_recall']} | {r['added_term_precision']} | {r['token_f1']} | "
            f"{r['baseline_added_term_recall']} | {r['baseline_added_term_precision']} |")


def dialogues_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Follow-up forms on question-answer dialogues (answers in the history)",
        "",
        f"Command: `{result['machine']['command']} --year dialogues` (from the repository root).",
        "",
        "Dialogues the team wrote (bench/understanding/dialogues_*.jsonl): a person, a band, a place, a product or a science "
        "topic, opening with a title turn (\"Marie Curie. Later life\") or a question, the assistant's answers in the history, "
        "each follow-up with the standalone question a person would write. CAsT 2019 and 2020 have no answers in their files; "
        "these do. No catalog. Targets (#34's re-check on conversations with answers): added terms >= 0.50 / 0.50, guard false "
        "alarms <= 0.05, gate recall >= 0.90. Also: the passage and QA conversations, `rewrite_passages.md` (a development "
        "set since session 21) and `rewrite_passages_2.md` (held out).",
        "",
        *DIALOGUE_COLUMNS,
        *(dialogue_row(f"{name} ({result[name]['role']})", result[name]) for name in DIALOGUES),
    ]
    return "\n".join(lines) + "\n"


def target_line(r: dict[str, Any]) -> str:
    """#34's re-check targets against the pooled figures, each said to hold or not."""
    def held(ok: bool) -> str:
        return "holds" if ok else "missed"

    recall, precision = r["added_term_recall"] or 0.0, r["added_term_precision"] or 0.0
    alarms, gate = r["guard_false_alarm_rate"], r["gate_recall"] or 0.0
    return (f"Pooled, against the targets: added terms {recall} / {precision} (>= 0.50 / 0.50: "
            f"{held(recall >= 0.5 and precision >= 0.5)}; the 'subject + message' baseline "
            f"{r['baseline_added_term_recall']} / {r['baseline_added_term_precision']}); guard false alarms {alarms} "
            f"(<= 0.05: {held(alarms is not None and alarms <= 0.05)}); gate recall {gate} (>= 0.90: {held(gate >= 0.9)}).")


def passages_table(result: dict[str, Any]) -> list[str]:
    """The code scored, the pooled and per-kind figures, and the targets' verdict."""
    return [
        f"Scored on the code of `src/querywise` as of commit {result.get('code_commit') or 'unknown'} (its last change).",
        "",
        *(line.replace("| file |", "| conversations |", 1) for line in DIALOGUE_COLUMNS),
        *(dialogue_row(result[name]["role"], result[name]) for name in PASSAGES),
        "",
        target_line(result["all"]),
    ]


def passages_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Follow-up forms on the passage and QA conversations of #34's re-check (a development set since session 21)",
        "",
        f"Command: `{result['machine']['command']} --year passages` (from the repository root).",
        "",
        "**A development set since session 21; held out before.** From session 21 on (the `subject-3` branch) its rows are "
        "read while the follow-up rules are written, as the lead decided: it had been scored many times while rules were chosen "
        "(the history below), so its figures no longer say how the move does on conversations nobody looked at. The held-out "
        "figures are `rewrite_passages_2.md` (`dialogues_passages_2.jsonl`, still unread). The history as a held-out set: "
        "`bench/understanding/dialogues_passages.jsonl` was written for #34's re-check on the conversations the "
        "maintainers named, before any follow-up code ran on its rows, by an engineer who had not read the follow-up code; "
        "its figures were then computed once (0.404 / 0.581 added terms, guard false alarms 0.051) and committed as they came. "
        "Until session 21 its rows were not read while changing the follow-up move. What was seen then: its author's error categories (no rows), which named the guard's misreading "
        "of a name before 'F.C.' (fixed from that category); and its pooled figure with and without one rule (an 'it' taking "
        "the name an answer gave: 0.382 / 0.538 with it, 0.400 / 0.568 without), which was dropped -- for that rule the set "
        "is no longer held out. Then the author's guessed categories for the rules that fired on none of its rows (prose "
        "series in an answer, terms only an answer names; no rows), from which the `prose-refs` branch wrote its own "
        "development conversations (`rewrite_passages_dev.md`) and rules; this set was scored once, at that branch's end "
        "(0.400 / 0.570). Then the `heldout-3` author's error categories on the second held-out set (person pronouns, titles, "
        "answer fragments, 'they'; no rows), from which the `person-refs` branch wrote development rows and rules; this set "
        "was scored once more when that branch was merged, decided before the run (0.404 / 0.573; passage rows 0.292 / 0.385). "
        "Then session 21 read its rows (the subject, pointer, 'there' and answer-subject rules of `subject-3`): the figures "
        "below are a development set's.",
        "",
        "Two kinds of conversation, 15 of each, all text the team's own: CAsT 2021/22-style, where each assistant turn is a "
        "whole web or encyclopaedia passage of 95-250 words (health, cooking, history, finance, science, travel, technology) "
        "and the user's next turn points at something only the passage names (\"the second one\", \"its side effects\", "
        "\"why is the first one error-prone?\"), asks for a comparison, or corrects the system (\"No, I meant ...\"); and "
        "QuAC-style, opening with a \"Title. Section\" turn (people, bands, sports teams, places) and answered with article "
        "sentences or \"I don't know.\". Each row's standalone is the minimal question a careful person would write; a "
        "few turns stand alone or change the subject and are kept as typed. A row counts as a passage row when its history "
        f"holds an assistant turn of {PASSAGE_WORDS} words or more. No catalog. Targets (#34's re-check on conversations with "
        "answers): added terms >= 0.50 / 0.50, guard false alarms <= 0.05, gate recall >= 0.90.",
        "",
        *passages_table(result),
        "",
        "Gate recall: of the rows a person rewrote, the share the gate flags; guard false alarms: of those, the share whose "
        "human rewrite the guard rejects; added terms: of the content terms the person's rewrite adds to the message, the "
        "share the searched text holds (recall) and of those it adds, the share the person's holds (precision), pooled over "
        "the rows (`querywise.evaluation.rewrites`).",
    ]
    return "\n".join(lines) + "\n"


def passage_page(year: str, title: str, about: str) -> Callable[[dict[str, Any]], str]:
    """A page for one file of passage and QA conversations: its title, command, what it is, its figures."""
    def render(result: dict[str, Any]) -> str:
        lines = [f"# {title}", "", f"Command: `{result['machine']['command']} --year {year}` (from the repository root).", "",
                 about, "", *passages_table(result)]
        return "\n".join(lines) + "\n"

    return render


passages_dev_markdown = passage_page(
    "passages_dev", "Follow-up forms on the development passage conversations (#34: referents only an answer names)",
    "**Development set, read while the rules were written.** `bench/understanding/dialogues_passages_dev.jsonl`: 24 "
    "conversations the team wrote for #34's answer referents before any code ran on them -- answers that list options "
    "(numbered, bulleted, an inline series) followed by \"the third one\", \"number 2\", \"the latter\", and passages "
    "that alone name a drug, a reaction, a city or a person the next turn points at (\"that drug\", \"this reaction\", "
    "\"the city\", \"he\"), beside turns whose pointer still means the user's own subject (the first 16, 36 rows); "
    "then 8 more (17 rows), written before the rules for them: series told in prose (after a colon, \"first ... second "
    "... finally\", a series before \"are the main causes\"), a condition and a treaty only the answer names (\"what "
    "causes that?\", \"the treaty\", \"this condition\"), and pointers that still mean the user's subject. The rules of "
    "`understand/followup/answer_refs.py` were chosen on it; `rewrite_passages.md`'s set was held out then and has been a "
    "development set too since session 21: the held-out figures are `rewrite_passages_2.md`.")
passages_2_markdown = passage_page(
    "passages_2", "Follow-up forms on a second held-out set of passage and QA conversations (#34's re-check)",
    "**Held out.** `bench/understanding/dialogues_passages_2.jsonl` was written on 2026-12-05 by the `heldout-3` session, an engineer who had "
    "read neither the follow-up code nor the earlier dialogue files beyond their first row (`dialogues_passages.jsonl` had been read since its "
    "first run); it was committed (f4d3b17) before any code ran on its rows, and its figures were computed once and committed as they came (0.359 / 0.528 added terms, on the code of c100134). "
    "It was scored again once when the `prose-refs` branch (prose lists, terms an answer defines; chosen on the development set) was "
    "merged, with that branch decided before the run (0.357 / 0.515). The set's author then reported error categories in their own "
    "words (no rows): list items, person pronouns, part-title subjects, answer fragments, 'they' for people; the `person-refs` branch "
    "wrote its own development rows for them and was merged, decided before this set was scored once more (0.367 / 0.507; passage "
    "rows 0.303 / 0.397). Then session 21's `subject-3` branch (the conversation's subject, pointers, 'there', an answer's carried-on "
    "subject; chosen on `dialogues_passages.jsonl`, a development set from then on) was decided and committed before this set was "
    "scored once, at that branch's end (0.370 / 0.509; passage rows 0.308 / 0.401). Then session 22's `gate-answers` branch (an "
    "implicit follow-up that takes up a word of the last answer; the topic-shift check also reading the answer's sentences; chosen on "
    "the development set) was merged, decided before this set was scored once (0.370 / 0.503; passage rows 0.308 / 0.393). "
    "Then session 23's `ans-heads` (a definite phrase whose head only an answer's compound names: \"the lagoon\") and `ans-pred` (a "
    "pronoun in the slot the answer's predicate fills: \"seeing them\") branches, chosen on the development set (its passage rows "
    "0.474 / 0.631 -> 0.518 / 0.676), were merged, decided before this set was scored once (0.372 / 0.510). Session 24's learnt phrase "
    "choice (cross-validated on training rows) scored 0.382 / 0.505. Session 25's rules (the first turn's subject read from how people "
    "open a conversation; a person pronoun taking the person the last answer named; both chosen on blind training files) and the "
    "choice's refit on five more blind training files were committed before this set was scored once: the figures below. "
    "35 conversations, 162 rows, 39 of them standalone turns kept as typed: 17 CAsT 2021/22-style (72 rows; every answer a passage of 90-250 "
    "words: prose lists followed by \"the second one\" or \"the last\", a disease, a treaty, a drug or a person only the passage names, changes "
    "of subject, \"which one ...?\" after a comparison of two, ellipsis such as \"and in Canada?\") and 18 QuAC-style (90 rows; a \"Title. "
    "Section\" turn, sentence or \"I don't know.\" answers; people, bands, places, events, diseases, companies; pronoun chains; the subject "
    "moving to an entity an answer named). All text is the author's own. A row is a passage row when its history holds an assistant turn of "
    f"{PASSAGE_WORDS} words or more. Read the pooled and per-kind figures only, or the set stops being held out.")

passages_3_markdown = passage_page(
    "passages_3", "Follow-up forms on a third held-out set of passage and QA conversations (#34's re-check)",
    "**Held out.** `bench/understanding/dialogues_passages_3.jsonl` was written on 2026-12-06 (session 23, branch `heldout-4`, d3f4049) "
    "by a writer blind to the rewriter: it read the issue, the first row of `dialogues_passages.jsonl` for the format and the "
    "row schema, nothing of `understand/`, `checks/`, the results or the other sets' rows, and ran no querywise code on its "
    "rows. Its rewrites follow TREC CAsT's manual guidelines (change as little as possible, the conversation's own words, "
    "nothing the user did not ask about). Scored first on the code of session 22's end (the shipped follow-up move, none of "
    "whose rules were written on it; aa11914): pooled 0.484 / 0.513, passage rows 0.500 / 0.490, QA rows 0.470 / 0.535; then "
    "once when session 23's `ans-heads` and `ans-pred` branches were merged, decided before that run (0.481 / 0.511); with session 24's "
    "learnt phrase choice 0.513 / 0.486; then with session 25's rules (the first turn's subject, a person pronoun taking the person "
    "the last answer named; chosen on blind training files) and the choice's refit, committed before this run: the figures below. "
    "40 conversations, 207 rows, 145 rewritten: 20 CAsT 2021/22-style (96 rows; every answer one 120-170-word passage, "
    "sometimes only partly on point; pronouns, \"the second one\", \"and during the race?\", corrections, returns to an "
    "earlier subject, changes of subject) and 20 QReCC / TopiOCQA-style (111 rows; one-to-three-sentence answers, subjects "
    "drifting to a related entity, five conversations with an \"I don't know.\" answer). 63 of the 145 rewrites use a term "
    "only an answer gave. Topics differ from every earlier set's. A row is a passage row when its history holds an "
    f"assistant turn of {PASSAGE_WORDS} words or more. Read the pooled and per-kind figures only, or the set stops being held out.")

passages_4_markdown = passage_page(
    "passages_4", "Follow-up forms on a fourth held-out set of passage and QA conversations (#34's re-check)",
    "**Held out.** `bench/understanding/dialogues_passages_4.jsonl` was written on 2026-12-06 (session 25, branch `heldout-4`, 6ab6805) "
    "by a writer blind to the rewriter, as passages_3 was: it read the issue, the first row of `dialogues_passages.jsonl` and the row "
    "schema, nothing of `understand/`, `checks/`, the results or any other set's rows, and ran no querywise code on its rows. It was "
    "written while the phrase choice's refit on five more blind training files was under way, and scored first once that refit was "
    "committed (decided on cross-validation alone, before any report set was scored; 0.539 / 0.599), and once more after a "
    "fix decided before that run (a person's name with accented letters read whole, \"Antoni Gaud\u00ed\"): the figures below. "
    "40 conversations, 261 rows, 199 rewritten: 20 CAsT 2021/22-style (121 rows; every answer one 124-157-word passage; users pick up "
    "its terms, ask why and how, compare two options, narrow, correct the system, change the subject) and 20 QReCC / TopiOCQA-style "
    "(140 rows; one-to-three-sentence answers, subjects drifting to a related person, work or place, five \"I don't know\" / \"I'm not "
    "sure\" answers). 57 of the 199 rewrites use a term only an answer gave (the writer's count). A row is a passage row when its history "
    f"holds an assistant turn of {PASSAGE_WORDS} words or more. Read the pooled and per-kind figures only, or the set stops being held out.")

#: The passage and QA conversation files: `dialogues_<year>.jsonl` scored into `rewrite_<year>.{json,md}`.
PASSAGE_PAGES = {"passages": passages_markdown, "passages_dev": passages_dev_markdown, "passages_2": passages_2_markdown,
                 "passages_3": passages_3_markdown, "passages_4": passages_4_markdown}
