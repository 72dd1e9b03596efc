"""Command line (make requirements-check, run by CI): every environment's requirements file, CPU and CUDA,
resolves from the registry as a fresh node would resolve it, without installing; exit 1 naming each that
does not (a CUDA file is never installed where there is no GPU: nothing else would see it fail).

A worker environment's file is resolved for its old CPython, wheels only; a pin of a pure-Python package that has no
wheel for it (TensorFlow 1.9's termcolor 1.1.0) is marked ``# no wheel`` in its file: it is built into a wheel here
first, as the worker venv's own pip builds it there, and the resolver finds it.

    python workflow/scripts/check_requirements.py [FILE ...]
"""
import argparse
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dlbench.envs import resolve

NO_WHEEL = "# no wheel"


def built_wheels(files: list[Path], directory: str) -> list[str]:
    """The pins marked ``# no wheel`` in ``files``, built into ``directory``; pip's arguments that find them."""
    pins = sorted({line.split("#")[0].strip() for file in files for line in file.read_text().splitlines()
                   if NO_WHEEL in line})
    if pins:
        subprocess.run([sys.executable, "-m", "pip", "--isolated", "wheel", "--no-deps", "--quiet", "-w", directory,
                        *pins], check=True)
    return ["--find-links", directory] if pins else []

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("files", nargs="*", type=Path, help="default: envs/*.requirements.txt")
args = parser.parse_args()
files = args.files or sorted(Path("envs").glob("*.requirements.txt"))
failed = 0
with tempfile.TemporaryDirectory() as wheels, ThreadPoolExecutor(max_workers=4) as pool:  # each waits on the registry
    found = built_wheels(files, wheels)
    for result in pool.map(lambda file: resolve(file, found), files):
        if result["status"] == "ok":
            print(f"resolves: {result['file']} ({len(result['packages'])} packages)", flush=True)
        else:
            failed += 1
            print(f"does not resolve: {result['file']}: {result['reason']}", flush=True)
print(f"{len(files) - failed} of {len(files)} requirements files resolve")
sys.exit(1 if failed else 0)
