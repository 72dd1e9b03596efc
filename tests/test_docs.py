"""The documentation says only what is so: every path, link, make target, config key, command-line flag and test
name a page names exists, the tables generated from the code are the code's, and the README stays short with its
two commands first. The checker is tested on a planted wrong path, key, link and flag too."""
import ast
import copy
import re
import shlex
from functools import cache
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "ADDING.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIRST_LINES = ("# dlbench\n\n```bash\n"
               "make run     # fresh machine: sets up .venv, runs the workflow on config/config.yaml, writes results/ "
               "and results/report.html\n"
               "make test    # fresh machine: sets up .venv with the test extras, runs the test suite (pytest) but its "
               "slow end-to-end tests\n```\n")
# Where a page's relative path may lie: the checkout, the package's directory and the package (pages say
# `dlbench/jobs/progress.py` and `backends/pytorch.py`)
PATH_ROOTS = [ROOT, ROOT / "workflow" / "scripts", ROOT / "workflow" / "scripts" / "dlbench"]
PATH = re.compile(r"^(?:\.test|tests|workflow|config|envs|benchmarks|report|profiles|rules|docs|dlbench|backends|"
                  r"workers|tables|figures|checks|jobs|record|run|tasks|formats|hardware|datasets)/[\w./-]*$")
# What a workflow run writes, not what the checkout holds
MADE = ("results/", "data/", ".venv", ".snakemake/", "gpu-check/", "scratch/")
TEST_NAME = re.compile(r"(tests/[\w/]+\.py)::(test_\w+)")
FILE_SUFFIX = re.compile(r"\.(json|yaml|md|py|txt|csv|tex|png|svg|gz|html|log)$")  # a file's name, not a key
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose_and_code(text: str) -> tuple[str, list[str]]:
    """A page's prose (fenced blocks left out) and its code: each fenced block's lines and each inline span."""
    prose, code, fenced = [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            code.append(line)
        else:
            prose.append(line)
    prose_text = "\n".join(prose)
    return prose_text, code + re.findall(r"`([^`\n]+)`", prose_text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    prose, _ = prose_and_code(page.read_text())
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", prose, re.MULTILINE)}


@cache
def make_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))


@cache
def snakemake_flags() -> set[str]:
    from snakemake.cli import get_argument_parser

    return {flag for action in get_argument_parser()._actions for flag in action.option_strings}


def script_flags(script: Path) -> set[str]:
    """The options a script of the project takes, read from its argparse calls."""
    return set(re.findall(r"add_argument\(\s*\"(-[-\w]+)\"", script.read_text())) | {"-h", "--help"}


@cache
def config_keys() -> set[str]:
    """Every dotted key the config schema has (``measurement.timeout_minutes``), a case's keys under ``benchmarks``."""
    def walk(schema: dict, prefix: str):
        for key, value in schema.get("properties", {}).items():
            yield prefix + key
            yield from walk(value, prefix + key + ".")
        for combined in ("items", "additionalProperties"):
            if isinstance(schema.get(combined), dict):
                yield from walk(schema[combined], prefix)

    return set(walk(yaml.safe_load((ROOT / "config" / "schema.yaml").read_text()), ""))


@cache
def defined_tests(path: str) -> set[str]:
    module = ast.parse((ROOT / path).read_text())
    return {node.name for node in module.body if isinstance(node, ast.FunctionDef)}


def problems(page: Path, text: str) -> list[str]:
    """What ``text``, read as ``page``, names that does not exist."""
    found = []
    prose, code = prose_and_code(text)
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):  # http:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        if not linked.exists():
            found.append(f"link to {target}: no {file}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            found.append(f"link to {target}: {file or page.name} has no heading #{anchor}")
    for span in code:
        for word in re.findall(r"[\w./@<>{}*…-]+", span):
            word = word.rstrip(".")
            if (PATH.match(word) and not any(mark in word for mark in "<>{}*…")
                    and not any(word.startswith(made) for made in MADE)
                    and not any((where / word).exists() for where in PATH_ROOTS)):
                found.append(f"path {word}: no such file or directory")
        found += [f"make {target}: no such target in the Makefile"
                  for target in re.findall(r"^make ([a-z][\w-]*)", span.strip()) if target not in make_targets()]
        found += [f"config key {key}: not in config/schema.yaml"
                  for key in re.findall(r"^[a-z_0-9]+(?:\.[a-z_0-9]+)+$", span.strip())
                  if key.split(".")[0] in {k for k in config_keys() if "." not in k} and key not in config_keys()
                  and not FILE_SUFFIX.search(key)]
        found += command_problems(span)
    found += [f"test {path}::{name}: no such test" for path, name in TEST_NAME.findall(text)
              if not (ROOT / path).exists() or name not in defined_tests(path)]
    return found


def command_problems(line: str) -> list[str]:
    """A flag that the command on ``line`` (Snakemake, or a script of the project) does not take."""
    try:
        words = shlex.split(line.split("#")[0])
    except ValueError:
        return []
    for start, word in enumerate(words):
        if word.endswith("snakemake") and not word.endswith(".py"):
            known = snakemake_flags()
        elif re.match(r"(workflow/scripts|benchmarks)/\w+\.py$", word):
            known = script_flags(ROOT / word)
        else:
            continue
        return [f"{word} {flag}: no such option" for flag in (w.split("=")[0] for w in words[start + 1:])
                if flag.startswith("-") and flag != "--" and flag not in known]
    return []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_everything_a_page_names_exists(page):
    assert problems(page, page.read_text()) == []


def test_a_wrong_path_key_link_flag_or_test_is_found():
    planted = ("See [running](running.md#no-such-heading), [gone](gone.md), `workflow/scripts/dlbench/nowhere.py`, "
               "`measurement.timeout_hours`, `make retry-everything`, `.venv/bin/snakemake --cores 2 --no-such-flag`, "
               "`workflow/scripts/retry_failed.py --everything` and "
               "`tests/unit/test_config.py::test_that_was_never_written`.")
    found = problems(ROOT / "docs" / "running.md", planted)
    assert len(found) == 8, found
    for word in ("#no-such-heading", "gone.md", "nowhere.py", "timeout_hours", "retry-everything", "--no-such-flag",
                 "--everything", "test_that_was_never_written"):
        assert any(word in problem for problem in found), (word, found)


def test_the_readme_is_short_and_begins_with_its_two_commands():
    text = (ROOT / "README.md").read_text()
    assert text.startswith(FIRST_LINES)
    assert len(text.encode()) <= 10_000


def test_the_readme_indexes_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert all(f"(docs/{page.name})" in readme for page in (ROOT / "docs").glob("*.md"))


def test_the_generated_tables_are_the_code_s():
    from dlbench.checks import docs

    assert docs.cuda_builds_table() in (ROOT / "docs" / "environments.md").read_text()
    assert docs.glossary() in (ROOT / "docs" / "measurement.md").read_text()
    assert docs.contract_reference() in (ROOT / "ADDING.md").read_text()


def planned(*config_files: str, replace: bool = False, **overrides) -> "Plan":  # noqa: F821
    """The plan of config files merged as Snakemake merges them (each extends the one before, key by key)."""
    from dlbench.plan import Plan
    from snakemake.utils import update_config

    from .conftest import validated

    config = {} if replace else yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for file in config_files:
        update_config(config, yaml.safe_load((ROOT / file).read_text()))
    update_config(config, copy.deepcopy(overrides))
    return Plan(validated(config))


def test_the_readme_s_run_counts_are_each_config_s():
    rows = re.findall(r"^\| [^|]+ \| `(?:make run|\.venv/bin/snakemake [^`]*?(config/\w+\.yaml)?)` \|.*\| (\d+) \|$",
                      (ROOT / "README.md").read_text(), re.MULTILINE)
    assert len(rows) == 8, rows
    for config_file, runs in rows:
        assert len(planned(*filter(None, [config_file])).records()) == int(runs), config_file


def test_the_run_only_my_framework_command_runs_that_framework_alone():
    """ADDING.md's command: the end-to-end config with one framework plans that framework's runs and no other's."""
    assert "--configfile .test/config-tiny/config.yaml" in (ROOT / "ADDING.md").read_text()
    tiny = yaml.safe_load((ROOT / ".test" / "config-tiny" / "config.yaml").read_text())
    for framework in tiny["frameworks"]:
        plan = planned(".test/config-tiny/config.yaml", replace=True, frameworks=[framework])
        assert {case.framework for case in plan.cases.values()} == {framework}


def documented_keys() -> dict[str, str | None]:
    """config/README.md's key table: each key (``.test_images`` after ``generated.train_images`` is
    ``generated.test_images``) and its documented default as YAML (None where the cell says it in words)."""
    text = (ROOT / "config" / "README.md").read_text()
    table = text[text.index("| key | default | meaning |"):text.index("A case:")]
    found = {}
    for keys, defaults in re.findall(r"^\| (`[^|]+`) \| ([^|]+) \|", table, re.MULTILINE):
        named, values = re.findall(r"`([^`]+)`", keys), re.findall(r"`([^`]+)`", defaults)
        full = []
        for key in named:
            full.append(full[-1].rsplit(".", 1)[0] + key if key.startswith(".") else key)
        found |= dict(zip(full, values if len(values) == len(full) else [None] * len(full)))
    return found


def schema_default(key: str):
    node = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    for part in key.split("."):
        node = node["properties"][part]
    return node.get("default")


def test_config_readme_documents_every_key_of_the_schema_with_its_default():
    documented = documented_keys()
    assert set(documented) <= config_keys(), set(documented) - config_keys()
    leaves = {key for key in config_keys() if not any(other.startswith(key + ".") for other in config_keys())}
    top = {key.split(".")[0] for key in config_keys()}
    # every key a user sets: each leaf under the top-level keys, but a case's keys (documented below the table)
    wanted = {key for key in leaves if key.split(".")[0] in top and not key.startswith("benchmarks.")
              and not key.startswith(("hardware.", "compare_targets.", "merge."))}
    assert wanted <= set(documented), sorted(wanted - set(documented))
    for key, default in documented.items():
        if default is not None:
            assert yaml.safe_load(default) == schema_default(key), key


def test_config_readme_s_example_case_sets_every_key_a_case_has():
    text = (ROOT / "config" / "README.md").read_text()
    example = text[text.index("A case:"):].split("```")[1]
    shown = set(re.findall(r"^(?:- |  )([a-z_]+):", example, re.MULTILINE))
    case = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())["properties"]["benchmarks"]["items"]
    assert shown == set(case["properties"])
