"""The catalog matcher: longest name first, shared aliases, tolerant spelling, exact offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from querywise.catalog import Catalog, Entity
from querywise.files import InputError

DEMO_CATALOG = Path(__file__).resolve().parents[1] / "src" / "querywise" / "demo" / "catalog.jsonl"


@pytest.fixture(scope="module")
def demo() -> Catalog:
    return Catalog.load(DEMO_CATALOG)


def test_demo_catalog_loads_every_line(demo: Catalog) -> None:
    assert len(demo) == 32
    pro = next(e for e in demo.entities if e.id == "halden-solace-7-pro")
    assert pro.name == "Halden Solace 7 Pro"
    assert "S7 Pro" in pro.aliases and pro.part_numbers == ("HH-7300",)
    assert pro.fields["price_usd"] == 349 and "name" not in pro.fields


def test_longest_name_wins_over_its_prefix(demo: Catalog) -> None:
    [mention] = demo.mentions("is the Solace 7 Pro waterproof?")
    assert mention.text == "Solace 7 Pro"
    assert [e.id for e in mention.entities] == ["halden-solace-7-pro"]


def test_prefix_alone_is_the_shorter_product(demo: Catalog) -> None:
    [mention] = demo.mentions("is the Solace 7 waterproof?")
    assert [e.id for e in mention.entities] == ["halden-solace-7"]


def test_shared_alias_gives_an_ambiguous_mention(demo: Catalog) -> None:
    [mention] = demo.mentions("how many days does the Tide last on a charge?")
    assert mention.ambiguous
    assert {e.id for e in mention.entities} == {"corra-tide-4", "corra-tide-4-pro"}


def test_a_full_name_is_not_ambiguous(demo: Catalog) -> None:
    [mention] = demo.mentions("Corra Tide 4 Pro battery")
    assert not mention.ambiguous


@pytest.mark.parametrize("written", ["solace 7 pro", "SOLACE 7 PRO", "Solace-7 Pro", "solace  7-pro"])
def test_case_hyphens_and_spaces_are_tolerated(demo: Catalog, written: str) -> None:
    [mention] = demo.mentions(f"cushions for the {written}, please")
    assert mention.text == written
    assert [e.id for e in mention.entities] == ["halden-solace-7-pro"]


def test_part_numbers_are_mentions(demo: Catalog) -> None:
    [mention] = demo.mentions("is hc-3471 in stock")
    assert [e.id for e in mention.entities] == ["solace-7-pro-ear-cushions"]


def test_no_match_inside_a_longer_word_or_identifier(demo: Catalog) -> None:
    assert demo.mentions("the S70 and HC-34710 are not ours") == []


def test_offsets_point_into_the_original_text(demo: Catalog) -> None:
    # The ligature makes the normalised text shorter; offsets must still fit the original.
    for text in ["Café owner here: does the Knoll Max charge phones?", "ﬁne, but is the Knoll Max loud?"]:
        [mention] = demo.mentions(text)
        assert text[mention.start : mention.end] == mention.text == "Knoll Max"


def test_mentions_come_in_reading_order(demo: Catalog) -> None:
    found = demo.mentions("Compare the Reed 2 Pro with the Knoll Mini and HC-3417")
    assert [m.text for m in found] == ["Reed 2 Pro", "Knoll Mini", "HC-3417"]
    assert [m.start for m in found] == sorted(m.start for m in found)


def test_names_longest_first_and_values() -> None:
    cat = Catalog(
        [
            Entity("1", "Vela X3", fields={"category": "headphones"}),
            Entity("2", "Vela X3 Pro", fields={"category": "headphones", "markets": ["eu", "us"]}),
            Entity("3", "Pip", fields={"category": "earbuds", "markets": ["us"]}),
        ]
    )
    assert cat.names_longest_first() == ["Vela X3 Pro", "Vela X3", "Pip"]
    assert cat.values("category") == ["headphones", "earbuds"]
    assert cat.values("markets") == ["eu", "us"]


def test_empty_catalog_finds_nothing() -> None:
    assert Catalog([]).mentions("Vela X3") == []


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "catalog.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_error_names_the_line_of_a_missing_name(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"name": "Vela X3"}', '{"id": "x", "aliases": []}')
    with pytest.raises(InputError, match=r"catalog\.jsonl:2: missing 'name'"):
        Catalog.load(path)


def test_load_error_names_the_line_of_bad_json(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"name": "Vela X3"}', "", '{"name": "Vela X3 Pro"')
    with pytest.raises(InputError, match=r"catalog\.jsonl:3: invalid JSON"):
        Catalog.load(path)


def test_load_error_for_aliases_that_are_not_a_list(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"name": "Vela X3", "aliases": "X2"}')
    with pytest.raises(InputError, match=r"catalog\.jsonl:1: 'aliases' and 'part_numbers' must be lists"):
        Catalog.load(path)


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        Catalog.load(tmp_path / "absent.jsonl")


def test_an_entity_is_found_by_its_id() -> None:
    cat = Catalog([Entity("1", "Aero X2"), Entity("2", "Aero X2 Pro")])
    assert cat.get("2") == Entity("2", "Aero X2 Pro") and cat.get("3") is None
