"""Command line (make gpu-envs-check; too large for CI: several GB per environment): every environment's CUDA
variant installed here, GPU or not, and checked by the dynamic loader to bring every shared library its framework
loads but the driver's (dlbench.checks.gpu_envs); writes <output>/gpu-envs.md and .json, a log per environment; exit 1
where one fails. pip's configuration files are not read (a fresh node's pip); PIP_FIND_LINKS, where set, still is
(say, a directory of wheels downloaded before: a CPU build found there fails the check).

    python workflow/scripts/gpu_envs_check.py [ENVIRONMENT ...] [--output results/gpu-envs] [--work .gpu-envs]
    python workflow/scripts/gpu_envs_check.py --tables-only  # the tables again, from gpu-envs.json
"""
import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from dlbench.checks import gpu_envs

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("environments", nargs="*", help=f"default: {' '.join(gpu_envs.cuda_environments())}")
parser.add_argument("--output", type=Path, default=Path("results/gpu-envs"))
parser.add_argument("--work", type=Path, default=Path(".gpu-envs"), help="where the environments are built")
parser.add_argument("--keep", action="store_true", help="keep each environment after its check (GBs each)")
parser.add_argument("--tables-only", action="store_true",
                    help="rewrite <output>/gpu-envs.md from the checks in its gpu-envs.json, installing nothing")
args = parser.parse_args()
if args.tables_only:
    kept = json.loads((args.output / "gpu-envs.json").read_text())
    fields = {name for name in gpu_envs.EnvironmentCheck.__dataclass_fields__}
    checks = [gpu_envs.EnvironmentCheck(**{key: value for key, value in check.items() if key in fields})
              for check in kept]
    (args.output / "gpu-envs.md").write_text(gpu_envs.markdown(checks))
    print(gpu_envs.markdown(checks))
    sys.exit(0)
unknown = sorted(set(args.environments) - set(gpu_envs.cuda_environments()))
if unknown:
    parser.error(f"no CUDA variant for {', '.join(unknown)}; environments: {', '.join(gpu_envs.cuda_environments())}")
(args.output / "logs").mkdir(parents=True, exist_ok=True)
os.environ["PIP_CONFIG_FILE"] = os.devnull  # what a fresh node's pip sees: no machine's constraints or indexes
checks = []
for build in gpu_envs.cuda_builds():
    if args.environments and build.environment not in args.environments:
        continue
    started, venv_dir = time.monotonic(), args.work / build.label / build.environment  # named as the workflow's
    print(f"{build.label}: installing envs/{build.requirements} in {venv_dir} (log: {args.output}/logs/"
          f"{build.label}.log)", flush=True)
    shutil.rmtree(venv_dir.parent, ignore_errors=True)
    with open(args.output / "logs" / f"{build.label}.log", "w") as log:
        check = gpu_envs.check_environment(build, venv_dir, os.cpu_count() or 1, log)
    if not args.keep:
        shutil.rmtree(venv_dir.parent, ignore_errors=True)
    checks.append(check)
    print(f"{build.label}: {check.verdict()} ({check.objects} shared objects, {check.size_gb:.1f} GB, "
          f"{time.monotonic() - started:.0f} s)", flush=True)
if not args.keep and args.work.is_dir() and not any(args.work.iterdir()):
    args.work.rmdir()
table = gpu_envs.markdown(checks)
(args.output / "gpu-envs.md").write_text(table)
(args.output / "gpu-envs.json").write_text(json.dumps(
    [{**vars(check), "verdict": check.verdict(), "runs_on": check.runs_on()} for check in checks],
    indent=1, default=list))

print(table)
sys.exit(0 if all(check.passed for check in checks) else 1)
