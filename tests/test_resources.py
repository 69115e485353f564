"""The packaged data (profpipe/resources.py): the cached YAML of sql/ equals the files, a change or a damaged cache
is parsed anew, and every JSON Schema is itself valid (runs validate against it without checking it)."""
from __future__ import annotations

import json
import pickle
import shutil

import jsonschema
import pytest

from profpipe import resources


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of the packaged sql/'s YAML files, and a cache folder of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = resources.data_dir("sql")
    for path in [*root.glob("*.yml"), *root.glob("*/*.yml")]:
        copy = tmp_path / "sql" / path.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
    return tmp_path / "sql"


def _caches(tree):
    return sorted((tree.parent / "cache" / "profpipe").iterdir())


def test_the_cached_yaml_is_the_parsed_files_and_is_written_once(tree):
    files = sorted([*tree.glob("*.yml"), *tree.glob("*/*.yml")])
    first = resources.cached_yaml_tree(tree)
    assert first == {p.relative_to(tree).as_posix(): resources._parse_yaml(p) for p in files}
    [cache] = _caches(tree)
    with open(cache, "rb") as handle:
        assert pickle.load(handle) == first
    (tree / "columns.yml").write_text("not: what the cache holds\n")  # same size and time? no: a new key
    assert resources.cached_yaml_tree(tree)["columns.yml"] == {"not": "what the cache holds"}
    assert len(_caches(tree)) == 2  # no temporary file left beside them


def test_the_cache_is_read_when_its_key_matches(tree):
    resources.cached_yaml_tree(tree)
    [cache] = _caches(tree)
    with open(cache, "wb") as handle:
        pickle.dump({"columns.yml": "from the cache"}, handle)
    assert resources.cached_yaml_tree(tree) == {"columns.yml": "from the cache"}


def test_a_damaged_cache_is_parsed_anew(tree):
    expected = resources.cached_yaml_tree(tree)
    [cache] = _caches(tree)
    cache.write_bytes(b"\x80\x05 not a pickle")
    assert resources.cached_yaml_tree(tree) == expected


def test_an_unwritable_cache_folder_costs_nothing_but_time(tree, monkeypatch):
    blocker = tree.parent / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder should be
    assert resources.cached_yaml_tree(tree)["columns.yml"] == resources._parse_yaml(tree / "columns.yml")
    assert sorted(p.name for p in tree.parent.iterdir()) == ["file", "sql"]


def test_the_packaged_files_are_read_through_the_cache():
    root = resources.data_dir("sql")
    assert resources.read_yaml(root / "marts" / "kernel_stats.yml") == resources._parse_yaml(root / "marts" / "kernel_stats.yml")
    assert resources.read_yaml(root / "marts" / "no_such_model.yml") is None


@pytest.mark.parametrize("name", sorted(p.name for p in resources.data_dir("schemas").glob("*.schema.json")))
def test_every_json_schema_is_valid(name):
    schema = json.loads((resources.data_dir("schemas") / name).read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema).check_schema(schema)
