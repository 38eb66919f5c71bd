// The workbench's only script: forms that call the API, the job progress poll, the label form,
// keyboard navigation and the plan inspector. Calls that change something send X-Querywise-UI
// (the cookie is honoured only with it: see querywise.server.guard).
"use strict";

const UI = { "Content-Type": "application/json", "X-Querywise-UI": "1" };

async function call(method, url, body) {
  const response = await fetch(url, { method, headers: UI, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!response.ok) throw new Error((data && (data.detail || data.error)) || `${response.status}`);
  return data;
}

function fail(id, error) { const el = document.getElementById(id); if (el) el.textContent = error.message || String(error); }

async function readJsonl(input) {
  const file = input.files[0];
  if (!file) throw new Error("choose a file");
  const rows = [];
  (await file.text()).split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    try { rows.push(JSON.parse(line)); } catch (e) { throw new Error(`${file.name}:${i + 1}: not JSON (${e.message})`); }
  });
  return rows;
}

async function readJson(input) {
  const file = input.files[0];
  if (!file) throw new Error("choose a file");
  try { return JSON.parse(await file.text()); } catch (e) { throw new Error(`${file.name}: not JSON (${e.message})`); }
}

function intOrNull(id) { const v = document.getElementById(id).value; return v === "" ? null : parseInt(v, 10); }

function on(id, event, handler) { const el = document.getElementById(id); if (el) el.addEventListener(event, handler); }

on("signin", "submit", async (e) => {
  e.preventDefault();
  try {
    await call("POST", "/ui/signin", { token: document.getElementById("token").value });
    location.assign(e.target.dataset.next || "/");
  } catch (error) { fail("signin-error", error); }
});

on("signout", "click", async () => { await call("POST", "/ui/signout"); location.assign("/ui/signin"); });

// The failures file states the rule that made it (`made_by`): its context is the form's default, so the
// workbench cuts generation from ranking where the CLI does. Empty fields are left to the server's rule.
on("failures", "change", async () => {
  const ctx = document.getElementById("context_k");
  const note = document.getElementById("context-from");
  ctx.placeholder = "by the file's rule"; if (note) note.textContent = "";
  try {
    const rows = await readJsonl(document.getElementById("failures"));
    const made = rows.map((r) => r.made_by).find((m) => m && m.context_k);
    if (made) { ctx.value = made.context_k; if (note) note.textContent = `from the file: ${made.acceptable_if}`; }
  } catch (error) { fail("start-error", error); }
});

on("start-triage", "submit", async (e) => {
  e.preventDefault();
  try {
    const body = { failures: await readJsonl(document.getElementById("failures")), seed: intOrNull("seed") ?? 0, k: intOrNull("k"),
                   context_k: intOrNull("context_k"), mode: document.getElementById("mode").value };
    const sample = intOrNull("sample");
    if (sample !== null) body.sample = sample;
    const job = await call("POST", "/v1/triage", body);
    location.assign(`/triage/${job.id}`);
  } catch (error) { fail("start-error", error); }
});

// A saved report or run opened as a finished job, then shown.
function openSaved(formId, fileId, url, errorId) {
  on(formId, "submit", async (e) => {
    e.preventDefault();
    try { const opened = await call("POST", url, { report: await readJson(document.getElementById(fileId)) }); location.assign(opened.location); }
    catch (error) { fail(errorId, error); }
  });
}
openSaved("open-report", "report-file", "/ui/reports", "open-error");
openSaved("open-run", "run-file", "/ui/runs", "run-error");

on("start-eval", "submit", async (e) => {
  e.preventDefault();
  try {
    const body = { cases: await readJsonl(document.getElementById("cases")), mode: document.getElementById("eval-mode").value };
    const qrels = document.getElementById("qrels");
    if (qrels && qrels.files[0]) body.qrels = await qrels.files[0].text();  // a BEIR set: the cases file is its queries
    if (document.getElementById("ablate").checked) body.ablate = [];
    const job = await call("POST", "/v1/eval", body);
    location.assign(`/eval/${job.id}`);
  } catch (error) { fail("eval-error", error); }
});

// A running job: poll its progress, then show the finished page.
const jobBox = document.getElementById("job");
if (jobBox && ["queued", "running"].includes(jobBox.dataset.status)) {
  const poll = async () => {
    const job = await call("GET", `/v1/jobs/${jobBox.dataset.job}`);
    document.getElementById("job-status").textContent = job.status;
    document.getElementById("job-phase").textContent = job.phase || "";
    const bar = document.getElementById("job-progress");
    bar.max = job.total || 1; bar.value = job.done;
    document.getElementById("job-count").textContent = job.total ? `${job.done}/${job.total}` : `${job.done}`;
    if (job.status === "done" || job.status === "failed") location.reload(); else setTimeout(poll, 500);
  };
  setTimeout(poll, 300);
}

// The label form: save at once, show what the report now says.
const labelForm = document.getElementById("label-form");
if (labelForm) {
  const status = document.getElementById("label-status");
  const show = (r) => {
    document.getElementById("case-bucket").textContent = r.bucket;
    document.getElementById("case-reason").textContent = r.reason;
    status.textContent = r.label ? `saved (${r.label.bucket || r.label.label})` : "cleared";
  };
  labelForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const picked = labelForm.querySelector("input[name=label]:checked");
    const body = { case_id: labelForm.dataset.case, label: picked ? picked.value : null, bucket: document.getElementById("override").value || null,
                   note: document.getElementById("note").value };
    try { show(await call("POST", `/ui/labels/${labelForm.dataset.job}`, body)); } catch (error) { status.textContent = error.message; }
  });
  on("clear-label", "click", async () => {
    try {
      show(await call("DELETE", `/ui/labels/${labelForm.dataset.job}/${encodeURIComponent(labelForm.dataset.case)}`));
      labelForm.querySelectorAll("input[name=label]").forEach((r) => { r.checked = false; });
      document.getElementById("override").value = ""; document.getElementById("note").value = "";
    } catch (error) { status.textContent = error.message; }
  });
}

// Keys: j / k between cases (or table rows), Enter opens a row, 1-4 pick a label, s saves.
document.addEventListener("keydown", (e) => {
  if (e.target.closest("input, textarea, select") || e.metaKey || e.ctrlKey || e.altKey) return;
  const rows = [...document.querySelectorAll("table[data-keyboard=rows] tr[data-href]")];
  if (rows.length) {
    let at = rows.findIndex((r) => r.classList.contains("focus"));
    if (e.key === "j" || e.key === "k") {
      if (at >= 0) rows[at].classList.remove("focus");
      at = Math.max(0, Math.min(rows.length - 1, at + (e.key === "j" ? 1 : -1)));
      rows[at].classList.add("focus"); rows[at].scrollIntoView({ block: "nearest" });
    } else if (e.key === "Enter" && at >= 0) location.assign(rows[at].dataset.href);
    return;
  }
  if (e.key === "j" && document.getElementById("next")) location.assign(document.getElementById("next").href);
  if (e.key === "k" && document.getElementById("prev")) location.assign(document.getElementById("prev").href);
  if (labelForm && /^[1-4]$/.test(e.key)) { const r = labelForm.querySelectorAll("input[name=label]")[parseInt(e.key, 10) - 1]; if (r) r.checked = true; }
  if (labelForm && e.key === "s") labelForm.requestSubmit();
});

// The plan inspector.
function cell(row, text, tag = "td") { const c = document.createElement(tag); c.textContent = text; row.appendChild(c); return c; }
function table(id, head, rows) {
  const t = document.getElementById(id); t.replaceChildren();
  const h = t.insertRow(); head.forEach((x) => cell(h, x, "th"));
  rows.forEach((r) => { const tr = t.insertRow(); r.forEach((x) => cell(tr, x)); });
}
function where(w) { return w && w.conditions && w.conditions.length ? JSON.stringify(w.conditions) : "(none)"; }

on("inspect", "submit", async (e) => {
  e.preventDefault();
  document.getElementById("inspect-error").textContent = "";
  const history = document.getElementById("history").value.split(/\r?\n/).filter((l) => l.trim()).map((l) => {
    const m = l.match(/^\s*(assistant|user)\s*:\s*(.*)$/i);
    return m ? { role: m[1].toLowerCase(), text: m[2] } : { role: "user", text: l.trim() };
  });
  const search = document.getElementById("search").checked;
  try {
    const r = await call("POST", search ? "/v1/ask" : "/v1/plan", { message: document.getElementById("message").value, history });
    const plan = r.plan;
    const route = plan.trace.find((s) => s.routing);
    const ev = route ? route.routing : null;
    document.getElementById("plan-route").textContent = `${plan.route}` + (ev ? ` (${ev.source}; margin ${ev.margin ?? "–"}; scores ${Object.entries(ev.scores).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(", ")})` : "")
      + ` · action ${plan.action.type}` + (plan.action.question ? `: ${plan.action.question}` : "");
    table("plan-queries", ["kind", "text", "weight", "mode"], plan.queries.map((q) => [q.kind, q.text, String(q.weight), q.mode || "(default)"]));
    document.getElementById("plan-filters").textContent = `filters ${where(plan.filters)} · inferred ${where(plan.inferred_filters)} · access ${where(plan.access)}`;
    table("plan-trace", ["move", "status", "reason", "changed", "ms"], plan.trace.map((s) => [s.move, s.status, s.reason, s.changed || "", s.latency_ms.toFixed(2)]));
    table("plan-hits", ["rank", "id", "score", "text"], (r.hits || []).map((h) => [String(h.rank), h.id, h.score.toFixed(4), (h.text || "").slice(0, 160)]));
    document.getElementById("plan-json").textContent = JSON.stringify(plan, null, 2);
    document.getElementById("plan-out").hidden = false;
  } catch (error) { fail("inspect-error", error); }
});
