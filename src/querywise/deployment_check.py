"""A deployment checked against its index before it answers anyone.

A field named by the settings that no chunk of the index carries does not fail: it empties
results, silently. A required access field nobody's chunks carry makes every search return
nothing; a filter field nobody's chunks carry empties every result that filters on it; an enum
whose values should come from a catalog key no entry carries rejects every value; a route with
no example that nothing else names is never chosen. `check_deployment` finds these from the
settings, the catalog, the routes that have examples and what the index's chunks carry
(`FieldPresence`, recorded in the index manifest at build time), and says each one as a
`Problem`: an *error* when the deployment cannot answer at all, a *warning* when some answers
will be empty or some route unreachable. `QueryWise` runs it at start-up, raises the errors as a
`DeploymentError` and keeps the warnings (`QueryWise.warnings`); the CLI prints them.

`judged_id_problems` does the same for an evaluation: judged ids that are neither a chunk id nor a
document id of the index (the wrong index for the case file, or ids that changed since).

Pure functions of their arguments: no file, index or model is read here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from querywise.catalog import Catalog
from querywise.config import RoutingSettings, Settings

__all__ = [
    "DeploymentCheck",
    "DeploymentError",
    "FieldPresence",
    "Problem",
    "check_deployment",
    "check_index_fields",
    "field_root",
    "judged_id_problems",
    "payload_field_counts",
]

Severity = Literal["error", "warning"]

# Every point of the index carries these (the engine stores them next to the payload).
_ALWAYS_CARRIED = ("id", "text", "title")
_LISTED = 12  # fields named in a message; more are counted, not listed
_EXAMPLES = 3  # ids quoted as examples in a message


class Problem(BaseModel):
    """One thing wrong with a deployment. `subject` is the setting it is about (`access.fields.tenant`,
    `filters.fields.price`, `routing.routes.refunds`, `eval.relevant`); `message` stands alone."""

    model_config = ConfigDict(frozen=True)
    severity: Severity
    subject: str
    message: str

    def __str__(self) -> str:
        return self.message


class DeploymentError(ValueError):
    """A deployment that cannot answer with this index (every search would return nothing, or no
    message could be routed); the message names the setting and what the index has instead."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(p.message for p in self.problems))


class DeploymentCheck(BaseModel):
    """Every problem found, errors first."""

    model_config = ConfigDict(frozen=True)
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def raise_errors(self) -> None:
        """Raise the errors as one `DeploymentError`; nothing when there are none."""
        if errors := self.errors:
            raise DeploymentError(errors)


def _carries(value: Any) -> bool:
    """Whether a payload value can meet a condition: a null or an empty list meets none."""
    return value is not None and not (isinstance(value, list | tuple | dict) and not value)


def payload_field_counts(payloads: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many payloads carry a value for each top-level field (null and empty lists do not count).

    >>> payload_field_counts([{"a": 1, "b": []}, {"a": None, "c": "x"}])
    {'a': 1, 'c': 1}
    """
    counts: dict[str, int] = {}
    for payload in payloads:
        for key, value in payload.items():
            if _carries(value):
                counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def field_root(field: str) -> str:
    """The top-level payload key of a condition's key path (`shop.tags[]` -> `shop`)."""
    return re.split(r"[.\[]", field, maxsplit=1)[0]


class FieldPresence(BaseModel):
    """What the chunks of an index carry: how many chunks hold a value for each top-level payload field.
    A key path (`shop.tags`) is judged by its top-level key: a chunk without `shop` cannot match it."""

    model_config = ConfigDict(frozen=True)
    n_chunks: int
    counts: dict[str, int]

    def count(self, field: str) -> int:
        """Chunks that carry `field` (its top-level key)."""
        root = field_root(field)
        return self.n_chunks if root in _ALWAYS_CARRIED else self.counts.get(root, 0)

    def carries(self, field: str) -> bool:
        return self.count(field) > 0

    def listing(self) -> str:
        """The payload fields chunks carry, most common first: `category, price, markets` (or `none`)."""
        names = sorted(self.counts, key=lambda f: (-self.counts[f], f))
        if not names:
            return "none but id, text and title"
        more = len(names) - _LISTED
        return ", ".join(names[:_LISTED]) + (f" and {more} more" if more > 0 else "")


def check_deployment(
    settings: Settings,
    *,
    catalog: Catalog | None = None,
    routes_with_examples: Collection[str] = (),
    fields: FieldPresence | None = None,
) -> DeploymentCheck:
    """The problems of a deployment: its settings and catalog against each other, and, when
    `fields` (what the index's chunks carry) is given, against its index.

    `routes_with_examples`: the routes the classifier was fitted on (inline examples and the
    examples file). Severity follows the consequence: an error when no search or no routing can
    work, a warning when some answers will be empty or some route is never reached.
    """
    problems = check_index_fields(settings, fields) if fields is not None else []
    problems += _catalog_problems(settings, catalog)
    problems += _route_problems(settings.routing, set(routes_with_examples))
    problems.sort(key=lambda p: p.severity != "error")  # stable: errors first, each group in order found
    return DeploymentCheck(problems=tuple(problems))


def check_index_fields(settings: Settings, fields: FieldPresence) -> list[Problem]:
    """The access and filter fields of the settings that the index's chunks do not carry: the part
    of `check_deployment` that needs neither the catalog nor the router (so a deployment can stop
    on it before any model loads)."""
    return _access_problems(settings, fields) + _filter_field_problems(settings, fields)


def _access_problems(settings: Settings, fields: FieldPresence) -> list[Problem]:
    out: list[Problem] = []
    access = settings.access
    for key, payload in access.fields.items():
        subject = f"access.fields.{key}"
        n = fields.count(payload)
        optional = key in access.optional
        if n == 0:
            named = f"access field {payload!r}" + (f" (session key {key!r})" if key != payload else "")
            if optional:
                out.append(Problem(severity="warning", subject=subject, message=(
                    f"{named}: no chunk of the index carries it, so a session that gives {key!r} finds nothing "
                    f"(chunks carry: {fields.listing()})")))
            else:
                out.append(Problem(severity="error", subject=subject, message=(
                    f"{named}: no chunk of the index carries it, so every search would return nothing "
                    f"(chunks carry: {fields.listing()}); index the field, or map the session key to a field the chunks carry")))
        elif n < fields.n_chunks and not optional:
            out.append(Problem(severity="warning", subject=subject, message=(
                f"access field {payload!r}: {fields.n_chunks - n:,} of {fields.n_chunks:,} chunks do not carry it, "
                "so no session ever finds them")))
    return out


def _filter_field_problems(settings: Settings, fields: FieldPresence) -> list[Problem]:
    access_payloads = set(settings.access.fields.values())
    out: list[Problem] = []
    for name, spec in settings.filters.fields.items():
        if name in access_payloads or fields.carries(name):
            continue  # an access field is checked (and never filtered on) as one
        via = f" (values from catalog key {spec.catalog_field!r})" if spec.catalog_field and spec.catalog_field != name else ""
        out.append(Problem(severity="warning", subject=f"filters.fields.{name}", message=(
            f"filter field {name!r}{via}: no chunk of the index carries it, so a filter on it would empty every result "
            f"(chunks carry: {fields.listing()})")))
    return out


def _catalog_problems(settings: Settings, catalog: Catalog | None) -> list[Problem]:
    """Enum filter fields whose values must come from the catalog, and cannot."""
    out: list[Problem] = []
    for name, spec in settings.filters.fields.items():
        if spec.type != "enum" or spec.values:
            continue
        key = spec.catalog_field or name
        if catalog is None:
            why = "no `values` and no [deployment] catalog"
        elif not _catalog_strings(catalog, key):
            keys = sorted({k for e in catalog.entities for k in e.fields})
            why = f"no `values`, and no catalog entry carries a text value for {key!r} (catalog fields: {', '.join(keys) or 'none'})"
        else:
            continue
        out.append(Problem(severity="warning", subject=f"filters.fields.{name}", message=(
            f"enum filter field {name!r} has no allowed values ({why}), so every filter on it is dropped")))
    return out


def _catalog_strings(catalog: Catalog, key: str) -> bool:
    return any(isinstance(v, str) for v in catalog.values(key))


def _route_problems(routing: RoutingSettings, with_examples: set[str]) -> list[Problem]:
    """Routes nothing can send a message to; and a router that cannot route at all."""
    names = [r.name for r in routing.routes]
    if not names:  # no routes, or routes declared by the examples file (each has examples)
        return []
    if not with_examples and routing.default_route is None:
        return [Problem(severity="error", subject="routing", message=(
            "no route has examples ([[routing.routes]] examples or routing.examples_file) and routing.default_route is not set, "
            "so a message that no identifier rule matches cannot be routed"))]
    named = {r.route for r in routing.rules} | {n for n in (routing.default_route, routing.out_of_scope_route) if n is not None}
    out: list[Problem] = []
    for name in names:
        if name in with_examples or name in named:
            continue
        out.append(Problem(severity="warning", subject=f"routing.routes.{name}", message=(
            f"route {name!r} has no examples, and no identifier rule, default_route or out_of_scope_route names it, "
            "so no message is ever routed to it (add examples to it or to routing.examples_file)")))
    return out


def judged_id_problems(judged: Sequence[str], known: Collection[str], *, index: str) -> list[Problem]:
    """Judged (relevant) ids of an evaluation that the index does not hold. `known`: the chunk ids
    and document ids (`doc_id`) of the index. None known is an error (the wrong index, or ids that
    changed); some unknown, a warning: those judgements can never be met, so they cap the scores."""
    unique = list(dict.fromkeys(judged))
    unknown = [j for j in unique if j not in known]
    if not unique or not unknown:
        return []
    examples = ", ".join(repr(j) for j in unknown[:_EXAMPLES]) + (", ..." if len(unknown) > _EXAMPLES else "")
    if len(unknown) == len(unique):
        return [Problem(severity="error", subject="eval.relevant", message=(
            f"none of the {len(unique):,} judged ids is in the index {index} (e.g. {examples}): wrong index? "
            "Judged ids must be chunk ids or document ids (doc_id) of the index"))]
    return [Problem(severity="warning", subject="eval.relevant", message=(
        f"{len(unknown):,} of {len(unique):,} judged ids are not in the index {index} (e.g. {examples}); "
        "cases judged on them can never find them"))]
