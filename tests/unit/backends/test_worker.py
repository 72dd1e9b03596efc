"""What every worker shares (workflow/scripts/workers/): code an older CPython runs."""
import re
import subprocess
import sys
from pathlib import Path

from dlbench.backends import worker


def test_every_worker_is_python_3_6_code(tmp_path):
    vermin = [str(Path(sys.executable).with_name("vermin")), "--no-tips", "--violations", "-t=3.6-",
              "--eval-annotations"]
    workers = sorted(worker.WORKERS.glob("*.py"))
    assert {path.name for path in workers} >= {"worker_protocol.py", "cntk_worker.py", "mxnet_worker.py"}
    loaded, unread = set(), list(workers)
    while unread:  # the dlbench modules the workers load, and those these load in a worker
        found = {worker.WORKERS.parent / "dlbench" / f"{name}.py"
                 for name in re.findall(r'dlbench_module\("([\w/]+)"\)', unread.pop().read_text())}
        unread += sorted(found - loaded)
        loaded |= found
    assert {path.name for path in loaded} >= {"lifeline.py", "image_reader_libraries.py", "record_shards.py",
                                              "lmdb_records.py", "lmdb_datum.py"}
    for path in (*workers, *loaded):  # the workers and the dlbench modules they load
        checked = subprocess.run([*vermin, str(path)], check=False, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout
    newer = tmp_path / "newer.py"
    newer.write_text("from dataclasses import dataclass\n")  # Python 3.7: the check can fail
    assert subprocess.run([*vermin, str(newer)], check=False, capture_output=True).returncode != 0
