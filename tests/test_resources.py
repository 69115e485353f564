"""The packaged data (profpipe/resources.py): a cached value is what its build returns, built anew when a file it is
keyed on changes or the cache is damaged or unwritable; the loaded model library and advisor rules come through the
cache unchanged; every JSON Schema is itself valid (runs validate against it without checking it)."""
from __future__ import annotations

import json
import pickle

import jsonschema
import pytest

from profpipe import advisor, models, resources


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "profpipe"


def _counting(value):
    calls = []

    def build():
        calls.append(1)
        return value
    return build, calls


def test_a_value_is_built_once_and_anew_when_a_file_changes(cache_home, tmp_path):
    source = tmp_path / "source.yml"
    source.write_text("a: 1\n")
    build, calls = _counting({"a": 1})
    assert resources.cached("thing", [source], build) == {"a": 1}
    assert resources.cached("thing", [source], build) == {"a": 1} and len(calls) == 1
    [cache] = cache_home.iterdir()
    with open(cache, "rb") as handle:
        assert pickle.load(handle) == {"a": 1}
    source.write_text("a: 22\n")  # another size: another key
    assert resources.cached("thing", [source], build) == {"a": 1} and len(calls) == 2
    assert len(list(cache_home.iterdir())) == 2  # no temporary file left beside them


def test_a_damaged_cache_is_built_anew(cache_home, tmp_path):
    source = tmp_path / "source.yml"
    source.write_text("")
    build, calls = _counting([1, 2])
    resources.cached("thing", [source], build)
    [cache] = cache_home.iterdir()
    cache.write_bytes(b"\x80\x05 not a pickle")
    assert resources.cached("thing", [source], build) == [1, 2] and len(calls) == 2


def test_an_unwritable_cache_folder_costs_nothing_but_time(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder should be
    build, calls = _counting("value")
    assert resources.cached("thing", [blocker], build) == "value"
    assert resources.cached("thing", [blocker], build) == "value" and len(calls) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_the_packaged_library_and_rules_come_through_the_cache_unchanged(cache_home):
    for packaged in (models._packaged_models, advisor._packaged_rules):
        packaged.cache_clear()
    try:
        built = (models.load_models(), advisor.load_rules())  # built and cached
        for packaged in (models._packaged_models, advisor._packaged_rules):
            packaged.cache_clear()
        assert (models.load_models(), advisor.load_rules()) == built  # read back
        assert built == (list(models._load_models(resources.data_dir("sql"))),
                         list(advisor._load_rules(resources.data_dir("sql"))))
        assert sorted(p.name.split("-")[0] for p in cache_home.iterdir()) == ["advisor", "models"]
    finally:
        for packaged in (models._packaged_models, advisor._packaged_rules):
            packaged.cache_clear()


@pytest.mark.parametrize("name", sorted(p.name for p in resources.data_dir("schemas").glob("*.schema.json")))
def test_every_json_schema_is_valid(name):
    schema = json.loads((resources.data_dir("schemas") / name).read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_a_damaged_profile_template_in_the_cache_costs_only_time(cache_home, tmp_path):
    from conftest import FIXTURES, query, run

    good = run(FIXTURES / "mindspore_cpu" / "lenet_graph", tmp_path / "good")
    [template] = cache_home.glob("profile-template-*")
    template.write_bytes(b"not a DuckDB database" * 100)
    again = run(FIXTURES / "mindspore_cpu" / "lenet_graph", tmp_path / "again")
    assert again.exit_code == good.exit_code == 0
    sql = "SELECT * FROM op_type_stats ORDER BY ALL"
    assert query(tmp_path / "again", sql) == query(tmp_path / "good", sql) != []
    assert query(tmp_path / "again", "SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL") == \
        query(tmp_path / "good", "SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL")
