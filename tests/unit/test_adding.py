"""ADDING.md's recipes name the tests that hold each step: every one it names must exist."""
import ast
import re

from ..conftest import ROOT

NAMED_TEST = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def test_every_test_adding_md_names_exists():
    named = NAMED_TEST.findall((ROOT / "ADDING.md").read_text())
    assert len(named) >= 20
    for path, name in named:
        module = ast.parse((ROOT / path).read_text())
        tests = {node.name for node in module.body if isinstance(node, ast.FunctionDef)}
        assert name in tests, f"ADDING.md names {path}::{name}, which does not exist"


def test_the_readme_sends_a_contributor_to_adding_md():
    assert "[ADDING.md](ADDING.md)" in (ROOT / "README.md").read_text()
