"""Command line (make requirements-check, run by CI): every environment's requirements file, CPU and CUDA,
resolves from the registry as a fresh node would resolve it, without installing; exit 1 naming each that
does not (a CUDA file is never installed where there is no GPU: nothing else would see it fail).

    python workflow/scripts/check_requirements.py [FILE ...]
"""
import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dlbench.envs import resolve

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("files", nargs="*", type=Path, help="default: envs/*.requirements.txt")
args = parser.parse_args()
files = args.files or sorted(Path("envs").glob("*.requirements.txt"))
failed = 0
with ThreadPoolExecutor(max_workers=4) as pool:  # each waits on the registry, not on a core
    for result in pool.map(resolve, files):
        if result["status"] == "ok":
            print(f"resolves: {result['file']} ({len(result['packages'])} packages)", flush=True)
        else:
            failed += 1
            print(f"does not resolve: {result['file']}: {result['reason']}", flush=True)
print(f"{len(files) - failed} of {len(files)} requirements files resolve")
sys.exit(1 if failed else 0)
