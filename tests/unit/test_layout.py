"""The package's drawing: its groups (a top-level module, or a subpackage) in layers, each importing only the layers
below it, so that no import points up and none goes round; tests/unit mirrors the subpackages."""
import ast
from pathlib import Path

from dlbench.paths import PACKAGE_ROOT

PACKAGE = PACKAGE_ROOT / "dlbench"
# Bottom first. A new module joins the lowest layer above everything it imports.
LAYERS = [
    {"files", "paths", "lifeline", "spec", "networks"},  # plain data and utilities, standard library only
    {"stats"},  # the statistics every table prints: pure functions of numpy and scipy
    {"tasks", "datasets"},  # what a run does; the datasets' facts
    {"registry"},  # every framework and its facts
    {"config", "envs"},  # the matrix of a config; the frameworks' environments
    {"formats", "hardware"},  # the frameworks' data formats; the node and what it counts
    {"backends"},  # the frameworks behind one contract
    {"record"},  # a run's record
    {"metrics", "run", "jobs"},  # what the tables report; a run's processes; the workflow's jobs
    {"tables"},
    {"figures", "checks", "repetitions"},  # what the tables draw and check; how many runs a case's noise needs
    {"plan"},  # what the rules wire
]


def group_of(module: str) -> str:
    return module.split(".")[1]


def imports() -> dict[str, set[str]]:
    """Each module of the package (dotted) -> the modules and packages of the package it imports, anywhere in it."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("dlbench", *path.relative_to(PACKAGE).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    found = {}
    for module, path in modules.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        found[module] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("dlbench")):
                base = package[:len(package) - node.level + 1] if node.level else []
                source = ".".join(base + (node.module.split(".") if node.module else []))
                found[module] |= {f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                                  for alias in node.names}
    return found


def test_each_group_imports_only_the_layers_below_it():
    layer = {group: height for height, groups in enumerate(LAYERS) for group in groups}
    found = imports()
    assert {group_of(module) for module in found} == set(layer), "a group not in LAYERS, or one gone"
    upward = sorted(f"{module} imports {target}" for module, targets in found.items() for target in targets
                    if target != "dlbench" and group_of(target) != group_of(module)
                    and layer[group_of(target)] >= layer[group_of(module)])
    assert not upward


def test_the_unit_tests_mirror_the_package():
    tests = Path(__file__).parent
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    mirrored = {path.name for path in tests.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert mirrored <= subpackages
    for directory in mirrored:  # a test module of a group tests that group's code
        assert all(path.name.startswith("test_") for path in (tests / directory).glob("*.py")
                   if path.name != "__init__.py")
