"""The catalog: named entities (products, plans, parts) with their fields, matched in text
longest name first, and linked from partial mentions ("X2" -> Aero X2, Aero X2 Pro).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from querywise.files import InputError, read_jsonl
from querywise.text import identifier_key, normalize

__all__ = ["Catalog", "Entity", "Mention"]


@dataclass(frozen=True)
class Entity:
    """One catalog entry. `fields` holds everything else (category, brand, price_usd...)."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    part_numbers: tuple[str, ...] = ()
    description: str = ""
    fields: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def surface_forms(self) -> tuple[str, ...]:
        """Every way the text may name it: name, aliases, part numbers."""
        return (self.name, *self.aliases, *self.part_numbers)


@dataclass(frozen=True)
class Mention:
    """A span of text that names one or more entities (several when an alias is shared)."""

    text: str
    start: int
    end: int
    entities: tuple[Entity, ...]

    @property
    def ambiguous(self) -> bool:
        return len(self.entities) > 1


def _key(text: str) -> str:
    """Normalised form for matching: folded case, hyphens and spaces collapsed."""
    return re.sub(r"[\s\-]+", " ", normalize(text)).strip()


class Catalog:
    """Entities and a longest-first matcher over their names, aliases and part numbers.

    >>> cat = Catalog([Entity("1", "Aero X2"), Entity("2", "Aero X2 Pro")])
    >>> [m.text for m in cat.mentions("is the aero x2 pro foldable?")]
    ['aero x2 pro']
    """

    def __init__(self, entities: Iterable[Entity]) -> None:
        self.entities = list(entities)
        self._by_id = {e.id: e for e in self.entities}
        self._by_form: dict[str, list[Entity]] = {}
        for e in self.entities:
            # A part number is also matched without its separators ("WS4402" for "WS-4402").
            joined = [identifier_key(p).lower() for p in e.part_numbers]
            for form in (*e.surface_forms, *joined):
                bucket = self._by_form.setdefault(_key(form), [])
                if e not in bucket:
                    bucket.append(e)
        # One tuple per form, shared by every mention of it (a long message may repeat a name).
        self._named: dict[str, tuple[Entity, ...]] = {form: tuple(bucket) for form, bucket in self._by_form.items()}
        # Longest first, so "Aero X2 Pro" is found before "Aero X2" can claim its first words.
        forms = sorted(self._by_form, key=lambda f: (-len(f), f))
        alternation = "|".join(re.escape(f).replace(r"\ ", r"[\s\-]+") for f in forms if f)
        self._pattern = re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])") if alternation else None
        self._values: dict[str, tuple[Any, ...]] = {}  # per field, on first use (every plan's filters ask)

    @classmethod
    def load(cls, path: Path | str) -> Catalog:
        """Read a catalog JSONL: `name` required; `id`, `aliases`, `part_numbers`, `description`
        optional; every other key becomes a field."""
        entities = []
        for line, rec in read_jsonl(path):
            name = rec.get("name")
            if not isinstance(name, str) or not name.strip():
                raise InputError(path, line, "missing 'name'")
            aliases, parts = rec.get("aliases", []), rec.get("part_numbers", [])
            if not isinstance(aliases, list) or not isinstance(parts, list):
                raise InputError(path, line, "'aliases' and 'part_numbers' must be lists")
            known = {"id", "name", "aliases", "part_numbers", "description"}
            entities.append(
                Entity(
                    id=str(rec.get("id", name)),
                    name=name.strip(),
                    aliases=tuple(str(a) for a in aliases),
                    part_numbers=tuple(str(p) for p in parts),
                    description=str(rec.get("description", "")),
                    fields={k: v for k, v in rec.items() if k not in known},
                )
            )
        return cls(entities)

    def get(self, entity_id: str) -> Entity | None:
        """The entity with this id, if any."""
        return self._by_id.get(entity_id)

    def names_longest_first(self) -> list[str]:
        return sorted((e.name for e in self.entities), key=lambda n: (-len(n), n))

    def mentions(self, text: str) -> list[Mention]:
        """Non-overlapping mentions in `text`, longest match first, in reading order."""
        if self._pattern is None:
            return []
        # Match on a normalised copy of the same length, so offsets point into `text`.
        folded = normalize(text)
        if len(folded) != len(text):
            folded = text.lower()
        keys: dict[str, tuple[Entity, ...]] = {}  # matched text -> entities (each spelling normalised once)
        out = []
        for m in self._pattern.finditer(folded):
            said = m.group(0)
            if (entities := keys.get(said)) is None:
                entities = keys[said] = self._named[_key(said)]
            out.append(Mention(text[m.start() : m.end()], m.start(), m.end(), entities))
        return out

    def values(self, field_name: str) -> list[Any]:
        """Distinct values of a field across entities (list fields are flattened), in order seen."""
        if (found := self._values.get(field_name)) is None:
            out: dict[Any, None] = {}
            for e in self.entities:
                v = e.fields.get(field_name)
                for item in v if isinstance(v, list) else [v]:
                    if item is not None:
                        out[item] = None
            found = self._values[field_name] = tuple(out)
        return list(found)

    def __len__(self) -> int:
        return len(self.entities)
