"""Where the packaged data lives (`schemas/` and `sql/`), and reading it fast.

In a wheel they are copied to `profpipe/_data/`; in a source checkout or an editable
install they stay at the repository root. Every other module asks here instead of
building paths itself.

Every run loads the model library and the advisor rules of sql/ (~300 SQL and YAML files). Reading and checking
them costs about 0.3 s even with libyaml, more than a small input's whole analysis, so the loaded library is kept
(`cached`) in one pickle in the user's cache folder ($XDG_CACHE_HOME/profpipe, else ~/.cache/profpipe), under a
key made of every file's path, size and modification time, the code that loads them included: a changed file
loads anew, and a cache that cannot be read or written is only slower. The JSON Schemas are compiled once per
process.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("schemas" or "sql") wherever this install keeps it."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"profpipe data folder {name!r} is missing from this install")


def read_yaml(path: Path) -> Any:
    """A YAML file, parsed by libyaml where PyYAML has it (its wheels do; ten times the pure-Python loader)."""
    import yaml

    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def cached(name: str, files: list[Path], build: Callable[[], T]) -> T:
    """What `build()` returns, kept in the user's cache folder under a key made of `name` and every one of `files`'
    path, size and modification time (list the code that builds it among them): a changed file builds it anew.
    A cache that cannot be read or written costs only the time of `build`."""
    cache = _cache_path(name, files, ".pickle")
    try:
        with open(cache, "rb") as handle:
            return pickle.load(handle)
    except Exception:  # noqa: BLE001 - a missing, partial or stale cache is built anew
        pass
    value = build()
    _keep(cache, lambda partial: partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))
    return value


def cached_copy(name: str, files: list[Path], build: Callable[[Path], None], destination: Path) -> None:
    """Copy to `destination` the file `build(path)` writes, kept in the user's cache folder under a key made as for
    `cached`; where it cannot be kept, `build` writes `destination` itself."""
    cache = _cache_path(name, files, "")
    if cache.is_file() or _keep(cache, build):
        shutil.copyfile(cache, destination)
    else:
        build(destination)


def _cache_path(name: str, files: list[Path], suffix: str) -> Path:
    stamp = hashlib.sha256(name.encode())
    for path in sorted(files):
        status = path.stat()
        stamp.update(f"\0{path}\0{status.st_size}\0{status.st_mtime_ns}".encode())
    return _cache_dir() / f"{name}-{stamp.hexdigest()[:32]}{suffix}"


def _keep(cache: Path, write: Callable[[Path], None]) -> bool:
    """Write `cache` with `write(path)` into a partial file beside it, renamed into place; False where it cannot be."""
    partial = cache.with_name(f".{cache.name}.{os.getpid()}.partial")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial.unlink(missing_ok=True)
        write(partial)
        os.replace(partial, cache)
        return True
    except OSError:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass
        return False


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
