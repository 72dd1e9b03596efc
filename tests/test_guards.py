"""The suite's own rules, read from its source: no assert whose message holds a check (``assert a, b and c`` checks a
alone), no skip that does not say why, and no assert of the real node's GPUs or framework build outside the tests
marked for such a node."""
import ast
import re
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


# An assert of what the node has: a CPU build, no GPU listed, a GPU count
NODE_FACT = re.compile(r"""framework_build[^\n]*==\s*\(?["']cpu["']|["']cpu["'][^\n]*==[^\n]*framework_build"""
                       r"|lists no GPU|this node has \d|cuda\.is_available\(\)|cuda\.device_count\(\)")
# What a test that fakes the node uses (a fake NVML, a PATH without nvidia-smi, a pynvml or nvidia-smi of its own), or
# one that asks the node what to expect (envs.node_gpus)
KNOWS_THE_NODE = re.compile(r"FakeNVML|setenv\(\"PATH\"|pynvml|\bnvidia_smi\b|node_gpus\(")
NODE_MARKS = {"needs_gpu", "needs_no_gpu"}


def _marks(decorators) -> set[str]:
    return {node.attr for decorator in decorators for node in ast.walk(decorator) if isinstance(node, ast.Attribute)}


def test_no_test_asserts_the_real_node_s_gpus_or_build():
    """On a GPU workstation the node has GPUs and PyPI's CUDA torch: a test that asserts otherwise fakes the node
    (tests/fake_gpu_node, FakeNVML) or says what it needs with a needs_gpu or needs_no_gpu marker."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        module_marks = {node.attr for statement in tree.body if isinstance(statement, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets)
                        for node in ast.walk(statement.value) if isinstance(node, ast.Attribute)}
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) or not function.name.startswith("test_"):
                continue
            body = ast.get_source_segment(source, function)
            if (module_marks | _marks(function.decorator_list)) & NODE_MARKS or KNOWS_THE_NODE.search(body):
                continue
            found += [f"{path.relative_to(TESTS)}:{node.lineno}" for node in ast.walk(function)
                      if isinstance(node, ast.Assert) and NODE_FACT.search(ast.get_source_segment(source, node))]
    assert not found, f"asserts of the real node's GPUs or framework build: {found}"
