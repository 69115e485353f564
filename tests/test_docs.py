"""The documentation (README.md and docs/): the generated pages are current, every link resolves, the README stays a
front door with the commands CI runs, and the lists the hand-written pages share with the code (trace-health checks
and actions, advisor rules, exit codes, the models table, the commands) name what the code has."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from profpipe import docs_pages

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
#: The pages of docs/ (hand-written and generated) that the README and docs/README.md link to.
PAGES = ("formats.md", "sources.md", "commands.md", "cli.md", "output.md", "health.md", "batch.md", "python.md",
         "models.md", "tables.md", "report.md", "mindspore.md", "performance.md", "development.md")
_LINK = re.compile(r"!?\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (a `# comment` there is no heading, a `[x](y)` no link)."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of `path`: lower case, punctuation dropped, spaces as hyphens, a
    repeated one suffixed -1, -2, ..."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(path), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def _table_column(text: str, header: str) -> list[str]:
    """The first cells of the Markdown table whose first header cell is `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\|\s*{re.escape(header)}\s*\|", line))
    cells = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells.append(line.split("|")[1].strip())
    return cells


@pytest.mark.parametrize("name", sorted(docs_pages.PAGES))
def test_generated_page_is_current(name: str) -> None:
    """tables.md and cli.md are what the models' YAML and the typer app give now; rerun the generator otherwise."""
    path = DOCS / name
    assert path.is_file(), f"docs/{name} is missing: run `{docs_pages.COMMAND}`"
    assert path.read_text(encoding="utf-8") == docs_pages.PAGES[name](), (
        f"docs/{name} is stale (a model's YAML, schemas/tables.json or a command's help changed): "
        f"run `{docs_pages.COMMAND}` and commit the result")


def test_stale_pages_are_found_and_rewritten(tmp_path: Path) -> None:
    """The generator's --check fails on a stale page and names it; a plain run rewrites it."""
    for name in docs_pages.PAGES:
        (tmp_path / name).write_text("stale\n")
    assert docs_pages.stale_pages(tmp_path) == sorted(docs_pages.PAGES, key=list(docs_pages.PAGES).index)
    assert docs_pages.main(["--docs", str(tmp_path), "--check"]) == 1
    assert docs_pages.main(["--docs", str(tmp_path)]) == 0
    assert docs_pages.stale_pages(tmp_path) == []
    assert docs_pages.main(["--docs", str(tmp_path), "--check"]) == 0


def test_generated_tables_page_documents_every_table_model_and_column() -> None:
    from profpipe.models import documentation

    text = (DOCS / "tables.md").read_text(encoding="utf-8")
    for name, entry in documentation().items():
        section = text.split(f"\n### {name}\n", 1)
        assert len(section) == 2, f"docs/tables.md has no section for {name}"
        body = section[1].split("\n### ", 1)[0]
        for column in entry["columns"]:
            assert f"| `{column['name']}` | {column['type']} |" in body, (name, column["name"])
        for invariant in entry["invariants"]:
            assert invariant["expression"] in body, (name, invariant["expression"])


def test_generated_cli_page_lists_every_command_and_option() -> None:
    import typer

    from profpipe.cli import app

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        if command.hidden:
            continue
        assert f"\n## profpipe {name}\n" in text, name
        body = text.split(f"\n## profpipe {name}\n", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden:
                assert f"`{param.opts[0]}`" in body, (name, param.opts[0])


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200, "README.md is the front door: move reference text into docs/"
    assert "](docs/report-overview.png)" in text
    for page in ("README.md", *PAGES):
        assert f"](docs/{page})" in text or f"](docs/{page}#" in text, f"README.md does not link docs/{page}"
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"]({page})" in index, f"docs/README.md does not list {page}"
    assert set(PAGES) | {"README.md"} == {p.name for p in DOCS.glob("*.md")}, "a docs page is not in PAGES"


def test_readme_commands_are_the_ones_ci_and_the_package_run() -> None:
    """The first command installs the package and analyses a bundled example; the test command is `.ci/run`'s."""
    blocks = re.findall(r"^```bash\n(.*?)\n```", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    install, nightly, tests = blocks[:3]
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && profpipe analyse ")
    example = install.split("profpipe analyse ", 1)[1].split()[0]
    assert (REPO / example).is_dir(), example
    for root in nightly.split(" -w ", 1)[0].split()[2:]:
        assert (REPO / root).is_dir(), root
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert tests == ci, "README's test command and .ci/run's differ"


def test_every_link_resolves() -> None:
    """Every relative link of README.md and docs/*.md names a file of the repository and, with #anchor, a heading."""
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target in _LINK.findall(_prose(page)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_no_page_points_into_the_old_readme() -> None:
    """Reference text moved to docs/: code and docs cite the page, not a section of the README."""
    cited = []
    for path in [*REPO.joinpath("profpipe").rglob("*.py"), *DOCS.glob("*.md"), *REPO.joinpath("sql").rglob("*.yml"),
                 REPO / "schemas" / "tables.json"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.search(r"\(README[,:)]|the README\b|README's", line):
                cited.append(f"{path.relative_to(REPO)}: {line.strip()}")
    assert not cited, "\n".join(cited)


def test_health_page_lists_every_check_and_action() -> None:
    from profpipe.health import ACTIONS, CHECKS

    text = (DOCS / "health.md").read_text(encoding="utf-8")
    checks = {name.strip() for cell in _table_column(text, "check_name") for name in cell.split("/")}
    actions = {name.strip() for cell in _table_column(text, "action") for name in cell.split("/")}
    assert checks == set(CHECKS), "docs/health.md's check_name table and profpipe/health.py's CHECKS differ"
    assert actions == set(ACTIONS), "docs/health.md's action table and profpipe/health.py's ACTIONS differ"


def test_report_page_lists_every_advisor_rule() -> None:
    rules = {path.stem for path in (REPO / "sql" / "advisor").glob("*.sql")}
    listed = {cell.strip("`") for cell in _table_column((DOCS / "report.md").read_text(encoding="utf-8"), "rule")}
    assert listed == rules, "docs/report.md's advisor table and sql/advisor/ differ"


def test_output_page_lists_every_exit_status() -> None:
    from profpipe import errors

    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    listed = {int(code) for cell in _table_column((DOCS / "output.md").read_text(encoding="utf-8"), "status")
              for code in cell.split("/")}
    assert listed == codes, "docs/output.md's exit status table and profpipe/errors.py's EXIT_* differ"


def test_models_page_names_only_models_and_every_mart() -> None:
    from profpipe.models import load_models

    models = {model.name: model for model in load_models()}
    listed = [cell.strip("`") for cell in _table_column((DOCS / "models.md").read_text(encoding="utf-8"), "model")]
    unknown = sorted(set(listed) - set(models))
    assert not unknown, f"docs/models.md's 'Models at a glance' names models that do not exist: {unknown}"
    missing = sorted(name for name, model in models.items() if model.layer == "marts" and name not in listed)
    assert not missing, f"docs/models.md's 'Models at a glance' lacks the marts {missing}"


def test_commands_page_shows_every_command() -> None:
    import typer

    from profpipe.cli import app

    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    for name, command in typer.main.get_command(app).commands.items():
        if not command.hidden:
            assert f"profpipe {name} " in text, f"docs/commands.md's synopsis lacks `profpipe {name}`"
