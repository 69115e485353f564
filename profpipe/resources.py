"""Where the packaged data lives (`schemas/` and `sql/`), and reading it fast.

In a wheel they are copied to `profpipe/_data/`; in a source checkout or an editable
install they stay at the repository root. Every other module asks here instead of
building paths itself.

Every run reads the ~160 YAML files of sql/ (the models' and the advisor rules' documentation). Parsing them
costs about 0.3 s even with libyaml, more than a small input's whole analysis, so the parsed files of the packaged
sql/ are kept in one pickle in the user's cache folder ($XDG_CACHE_HOME/profpipe, else ~/.cache/profpipe), under a
key made of every file's path, size and modification time: a changed file is parsed again, and a cache that cannot
be read or written is only slower. The JSON Schemas are compiled once per process.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("schemas" or "sql") wherever this install keeps it."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"profpipe data folder {name!r} is missing from this install")


def read_yaml(path: Path) -> Any:
    """The YAML file at `path`, parsed (from the cache when it lies in the packaged sql/)."""
    packaged = data_dir("sql")
    if path.parent.parent == packaged or path.parent == packaged:
        return _packaged_yaml().get(path.relative_to(packaged).as_posix()) if path.is_file() else None
    return _parse_yaml(path)


def _parse_yaml(path: Path) -> Any:
    """A YAML file, parsed by libyaml where PyYAML has it (its wheels do; ten times the pure-Python loader)."""
    import yaml

    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=1)
def _packaged_yaml() -> dict[str, Any]:
    return cached_yaml_tree(data_dir("sql"))


def cached_yaml_tree(root: Path) -> dict[str, Any]:
    """Every YAML file of `root` (its top level and one folder down), parsed, by path relative to it: from the cache
    when its key matches, else parsed and cached."""
    files = sorted([*root.glob("*.yml"), *root.glob("*/*.yml")])
    stamp = hashlib.sha256(str(root).encode())
    for path in files:
        status = path.stat()
        stamp.update(f"\0{path.relative_to(root).as_posix()}\0{status.st_size}\0{status.st_mtime_ns}".encode())
    cache = _cache_dir() / f"sql-yaml-{stamp.hexdigest()[:32]}.pickle"
    try:
        with open(cache, "rb") as handle:
            documents = pickle.load(handle)
        if isinstance(documents, dict):
            return documents
    except Exception:  # noqa: BLE001 - a missing or unreadable cache is parsed anew
        pass
    documents = {path.relative_to(root).as_posix(): _parse_yaml(path) for path in files}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=cache.parent, prefix=".sql-yaml-", delete=False) as handle:
            pickle.dump(documents, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, cache)
    except OSError:
        try:
            os.unlink(handle.name)
        except (OSError, UnboundLocalError):
            pass
    return documents


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "profpipe"


@lru_cache(maxsize=None)
def json_schema_validator(name: str) -> Any:
    """A validator of schemas/`name` (its draft's class), built once per process; the schemas themselves are
    checked against their meta-schema by the tests, not on every run."""
    import jsonschema

    schema = json.loads((data_dir("schemas") / name).read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)
