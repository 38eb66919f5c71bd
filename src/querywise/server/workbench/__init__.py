"""The triage workbench: the service's pages at `/`, for people (the API is under `/v1`).

Server-rendered pages (Jinja2 templates in this package) with one small script
(`static/workbench.js`) and one stylesheet; nothing is fetched from anywhere else, so it works
offline. The same app and the same authentication as the API (`server.guard`: a browser signs in
with its token once and carries it in a cookie). Triage pages need the `[server] jobs_scope`
grant, like the jobs they show (they read passages whatever a session may see); the plan
inspector plans with the signed-in credentials' own session.

    /                          home; /ui/signin, /ui/signout
    /triage                    start a triage job (a failures file) or open a report (`triage --json`)
    /triage/{job}              the bucket chart and table, ?bucket=B its cases; a progress bar while it runs
    /triage/{job}/case/{id}    one case: history, the gold in its chunk and neighbours, ranks, evidence, the label form
    /triage/{job}/export.json, .html   the labelled report
    /eval, /eval/{job}         an evaluation job's slices and ablations; ?against={job} compares two runs
    /plan                      the plan inspector
    /ui/labels/{job}           POST a label (JSON), DELETE /ui/labels/{job}/{case}: saved at once, recounted
"""

from __future__ import annotations

from querywise.server.workbench.pages import install

__all__ = ["install"]
