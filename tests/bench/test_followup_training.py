"""The training files' page (#34): the pooled added terms split by where the history said each
term, summed over the files of each part, so a page says which words a form misses."""

from __future__ import annotations

import json
from pathlib import Path

from bench.understanding.followup_training import figures, markdown


def test_the_page_splits_the_pooled_terms_by_where_the_history_said_them(tmp_path: Path) -> None:
    passage = "Reset the Bluetooth pairing first, then update the firmware from the companion app. " * 8  # a passage answer
    rows = [
        {"history": [{"role": "user", "text": "My Halden Solace 7 keeps dropping calls."}, {"role": "assistant", "text": passage}],
         "message": "how long does it take?", "standalone": "how long does the Solace firmware update take?"},
        {"history": ["Warranty on the Vela X3?"], "message": "And the Pro?", "standalone": "Warranty on the Vela X3 Pro?"},
    ]
    files = []
    for name in ("a", "b"):  # the same rows in two files: the pooled counts are their sum
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        files.append(path)
    result = figures("subject", tuple(files))
    answers, users = result["pooled"]["answers"], result["pooled"]["users"]
    # The person adds solac (a user turn's), firmwar and updat (the answer's): the subject + message form holds the first.
    assert (answers["by_user_turns_person"], answers["by_last_answer_person"]) == (2, 4)
    assert answers["by_user_turns_both"] == 2 and answers["by_last_answer_both"] == 0
    assert users["by_user_turns_person"] == 6 and users["by_nowhere_person"] == 0  # warranty, vela, x3: all the user's
    page = markdown({"modes": [result]})
    assert "| answers | last answer | 4 | 0.0 | 0 | - |" in page
    assert "| answers | user turns | 2 | 1.0 |" in page
