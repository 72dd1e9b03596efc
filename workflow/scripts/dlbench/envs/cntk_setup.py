"""Making CNTK 2.7 importable, and able to read images, in its virtualenv after pip installed its wheel.

CNTK 2.7's Linux wheels (built on Ubuntu 16.04) link against OpenMPI 1.10 (``libmpi.so.12``,
``libmpi_cxx.so.1``), which no current distribution ships. Debian 12 has OpenMPI 4.1
(``libopenmpi3``); linked under the old names in the wheel's ``cntk/libs`` directory, which is on
the RUNPATH of CNTK's libraries, it loads; and its distributed learner runs on it, under Debian's
``mpiexec`` (openmpi-bin): a ``2xcpu`` run trains over two ranks (tests/unit/backends/test_cntk.py). Its image
reader's libraries come from Ubuntu 16.04 (:mod:`dlbench.envs.image_reader_libraries`).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import image_reader_libraries

SONAMES = {"libmpi.so.12": "libmpi.so.40", "libmpi_cxx.so.1": "libmpi_cxx.so.40"}  # 1.10's: 4.x's
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def _system_library(name: str) -> Path:
    for directory in LIBRARY_DIRS:
        if (Path(directory) / name).exists():
            return Path(directory) / name
    raise RuntimeError(f"CNTK 2.7 needs OpenMPI's {name} (Debian: libopenmpi3, in envs/cntk.apt.txt)")


def link_openmpi(venv_dir: Path, log) -> None:
    python = venv_dir / "bin" / "python"
    libs = next(venv_dir.glob("lib/python3*/site-packages/cntk/libs"), None)
    if libs is None:
        raise RuntimeError(f"no cntk/libs in {venv_dir}: was the cntk wheel installed?")
    for old, new in SONAMES.items():
        link = libs / old
        link.unlink(missing_ok=True)
        link.symlink_to(_system_library(new))
        log.write(f"{link} -> {link.resolve()}\n")
    found = subprocess.run([str(python), "-c", "import cntk; print(cntk.__version__)"], capture_output=True,
                           text=True, check=False)
    if found.returncode != 0:
        raise RuntimeError(f"cntk does not import: {(found.stderr.strip().splitlines() or ['?'])[-1]}")
    log.write(f"cntk {found.stdout.strip()} imports\n")


def setup(venv_dir: Path, log) -> None:
    """CNTK importable (OpenMPI), and its image reader's libraries installed; without them it trains
    on synthetic data, and its runs on files say why they cannot."""
    link_openmpi(venv_dir, log)
    try:
        image_reader_libraries.install(venv_dir, log)
    except RuntimeError as error:
        log.write(f"{error}\n")
