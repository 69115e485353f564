"""A damage campaign over every fixture: any file of any format, any damage, through the whole set of readers.

The per-format suites (tests/test_fuzz_*.py) check what each reader makes of each damage; this one
checks the promise that holds for all of them, on damage nobody wrote a test for: a damaged file
costs at most its own source, named in an InputError or counted in trace_health, never a
traceback, never a changed input, never a scratch folder left; and the sources beside it are read
exactly as without the damage.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from profpipe.discover import discover
from fuzzing import BAD_NUMBERS, FUZZ, byte_flips, line_edits, read_damaged, truncations

#: Every fixture family folder (fixtures/<family>), each holding one or more runs.
_ROOTS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "generators")


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix not in (".md", ".py"))


def _damages(data: bytes) -> st.SearchStrategy[bytes]:
    numbers = st.sampled_from(BAD_NUMBERS)
    digits = [i for i, b in enumerate(data) if 0x30 <= b <= 0x39]
    replace_number = st.just(data) if not digits else st.tuples(st.sampled_from(digits), numbers).map(
        lambda args: data[: args[0]] + args[1] + data[args[0] + 1:])
    return st.one_of(truncations(data), byte_flips(data), line_edits(data), replace_number,
                     st.sampled_from([b"", b"   \n\t\n", b"\xff\xfe\x00garbage", b"[" * 100_000, b"{\"a\":" * 50_000]))


@pytest.mark.parametrize("root", _ROOTS, ids=[r.name for r in _ROOTS])
@FUZZ
@given(data=st.data())
def test_any_damage_costs_at_most_its_own_source(tmp_path_factory, root, data):
    folder = tmp_path_factory.mktemp("campaign") / root.name
    shutil.copytree(root, folder)
    target = data.draw(st.sampled_from(_files(folder)), label="file")
    owners = {s.rank for s in discover(folder)  # a reader may read files of its folder it does not list
              if target in {p for _, p in s.all_files()} or s.directory in target.parents}
    target.write_bytes(data.draw(_damages(target.read_bytes()), label="damage"))
    outcome = read_damaged(folder)  # asserts: no reader bug, input unchanged, no scratch left
    for table, clean in _clean_rows_by_rank(root).items():
        damaged = _rows_by_rank(outcome.tables.get(table))
        for rank, rows in clean.items():
            if rank not in owners:
                assert damaged.get(rank, 0) == rows, f"{table}: rank {rank} changed by damage to another source"


_CLEAN: dict[Path, dict[str, dict[int, int]]] = {}


def _rows_by_rank(table: pa.Table | None) -> dict[int, int]:
    if table is None or table.num_rows == 0:
        return {}
    return dict(Counter(table.column("rank").to_pylist()))


def _clean_rows_by_rank(root: Path) -> dict[str, dict[int, int]]:
    if root not in _CLEAN:
        outcome = read_damaged(root)
        _CLEAN[root] = {name: _rows_by_rank(table) for name, table in outcome.tables.items()}
    return _CLEAN[root]
