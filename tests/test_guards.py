"""The suite's own rules, read from its source: no assert whose message holds a check (``assert a, b and c`` checks a
alone), and no skip that does not say why."""
import ast
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_assert_hides_a_check_in_its_message():
    hidden = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assert) and isinstance(node.msg, (ast.BoolOp, ast.Compare)):
                hidden.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not hidden, f"an assert's message is a check, never made: {hidden}"


def test_every_skip_says_why():
    silent = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "skip"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"):
                reason = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "reason"),
                                                             None)
                if reason is None or (isinstance(reason, ast.Constant) and not str(reason.value).strip()):
                    silent.append(f"{path.relative_to(TESTS)}:{node.lineno}")
            # a marker, pytest.mark.skip("why") or pytest.mark.skipif(condition, reason="why")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in
                    ("skip", "skipif") and isinstance(node.func.value, ast.Attribute)
                    and node.func.value.attr == "mark"
                    and not any(k.arg == "reason" for k in node.keywords)
                    and not (node.func.attr == "skip" and node.args)):
                silent.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not silent, f"a skip without its reason: {silent}"
