"""``make gpu-envs-check``: every environment's CUDA variant, installed on a machine without a GPU, shown to
bring every shared library its framework loads but the driver's, and what GPU code it carries.

An environment is built as the ``framework_venv`` job builds it on a GPU node (:func:`dlbench.envs.build_environment`),
with stand-ins for the driver's ``libcuda.so.1`` and ``libnvidia-ml.so.1`` (every function the environment's
libraries take from them, each answering "no device": :data:`DRIVER`), so that a framework linked against the driver
imports and says its build.
Then every ELF shared object in the environment is given to the dynamic loader (``ldd``: its own search, RUNPATHs
and all, with what the backend loads first preloaded, :data:`dlbench.envs.cuda_wheels.PRELOADED`), with no
``LD_LIBRARY_PATH``: a CUDA, cuDNN or NCCL library it finds outside the environment, or does not find, is a
failure; the other libraries it takes from the node (the C library, libstdc++, OpenMPI for CNTK) are what the node
must provide. The GPU code is read from each library's fatbinary (:func:`dlbench.envs.elf.fatbin_architectures`) and
checked against the GPUs of :data:`REFERENCE_GPUS` as a run checks its own (:func:`dlbench.backends.check_gpu_code`).
"""
from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .. import envs
from ..backends import GpuCode, Unavailable, check_gpu_code
from ..envs import cuda_wheels, elf

# The node's driver brings these; their stand-ins: the functions' names, and what each answers (no device).
DRIVER = {"libcuda.so.1": (r"cu[A-Z]", 100),  # CUDA_ERROR_NO_DEVICE
          "libnvidia-ml.so.1": (r"nvml[A-Z]", 9)}  # NVML_ERROR_DRIVER_NOT_LOADED
INTERPRETER = re.compile(r"^libpython\d")  # an extension module's: the interpreter that imports it has it loaded
# CUDA's own, cuDNN, NCCL, nvrtc, nvJitLink: the environment's to bring (not libcurl, libcups: the node's)
CUDA_LIBRARY = re.compile(r"^lib(cu(da|blas|fft|rand|solver|sparse|dnn|pti|file|tensor)|nv|nccl)")
# What the backend checks a GPU run against (backends.check_gpu_code), asked in the environment without a GPU.
GPU_CODE_PROBE = ("import dataclasses, json, sys; from dlbench import backends; "
                  "code = backends.load(sys.argv[1]).gpu_code(); "
                  "print(json.dumps(code if isinstance(code, str) else dataclasses.asdict(code)))")
# Plug-ins the workflow never loads, and why (their needs are not checked; the table lists them).
NEVER_LOADED = {
    "onnxruntime/capi/libonnxruntime_providers_tensorrt.so":
        "ONNX Runtime's TensorRT provider, loaded only for a session that asks for it (the workflow asks for CUDA's)",
    "cntk/libs/Cntk.BinaryConvolution-2.7.so":
        "CNTK's binary-convolution plug-in (Halide), loaded only by its own user function",
}
# What every manylinux2014 system has (PEP 599): a wheel may take these from the node.
MANYLINUX_SYSTEM = {"libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
                    "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libX11.so.6", "libXext.so.6",
                    "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1", "libgobject-2.0.so.0",
                    "libgthread-2.0.so.0", "libglib-2.0.so.0", "ld-linux-x86-64.so.2"}
# The thesis's GPUs (K20m, P100), seed 003's K80 and the generations since: what each build runs on.
REFERENCE_GPUS = (("Tesla K20m", 35), ("Tesla K80", 37), ("Tesla P100", 60), ("Tesla V100", 70), ("Tesla T4", 75),
                  ("A100", 80), ("L4", 89), ("H100", 90), ("B200", 100))


def cuda_environments(envs_dir: Path = Path("envs")) -> list[str]:
    """Every environment with a CUDA variant of its pip requirements."""
    return sorted(path.name.removesuffix(".cuda.requirements.txt") for path in envs_dir.glob("*.cuda.requirements.txt"))


@dataclass(frozen=True)
class CudaBuild:
    """One CUDA requirements file of an environment, and the GPUs (compute capabilities) a node has that the
    workflow builds it for: none for the CUDA file, the oldest it serves for an older GPUs' one."""

    environment: str
    requirements: str  # its name in envs/
    capabilities: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        return self.requirements.removesuffix(".requirements.txt")


def cuda_builds(envs_dir: Path = Path("envs")) -> list[CudaBuild]:
    """Every CUDA requirements file: each environment's CUDA variant and its older GPUs' (envs.OLDER_GPU_BUILDS)."""
    return [build for environment in cuda_environments(envs_dir) for build in (
        CudaBuild(environment, f"{environment}.cuda.requirements.txt"),
        *(CudaBuild(environment, name, (envs.BuildFacts.of(envs_dir / name).low,))
          for name in envs.OLDER_GPU_BUILDS.get(environment, ())))]


def site_packages(venv_dir: Path) -> Path:
    return next(venv_dir.glob("lib/python3*/site-packages"))


def shared_objects(venv_dir: Path) -> list[Path]:
    """Every ELF shared object installed in the environment, each once (not its links)."""
    found = {}
    for path in sorted(site_packages(venv_dir).rglob("*.so*")):
        # libcudart.so.13, libcaffe.so.1.0.0-rc3
        if path.is_file() and not path.is_symlink() and re.search(r"\.so(\.[\w-]+)*$", path.name) and elf.is_elf(path):
            found.setdefault(path.resolve(), path)
    return list(found.values())


def stand_in_driver(objects: list[Path], directory: Path) -> list[Path]:
    """The driver's libraries that ``objects`` link (:data:`DRIVER`), in ``directory``: each with every function
    they take from it, answering "no device"; none where none links the driver (they load it when they look for a
    GPU)."""
    made = []
    for soname, (pattern, answer) in DRIVER.items():
        functions = set()
        for path in objects:
            if soname in elf.dynamic_entries(path)[0]:
                functions |= {name for name in elf.undefined_functions(path) if re.match(pattern, name)}
        if not functions:
            continue
        directory.mkdir(parents=True, exist_ok=True)
        source = directory / f"{soname}.c"
        source.write_text("".join(f"int {name}(void) {{ return {answer}; }}\n" for name in sorted(functions)))
        made.append(directory / soname)
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(made[-1]), str(source)],
                       check=True, capture_output=True, text=True)
    return made


_RESOLVED = re.compile(r"^\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))$")


def resolve_libraries(path: Path, preload: list[Path]) -> dict[str, str | None]:
    """What the dynamic loader would load for each library ``path`` needs, directly or not (``ldd``): its path,
    or None where not found. Nothing from ``LD_LIBRARY_PATH``; ``preload`` loaded first, as the backend loads it."""
    variables = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_PRELOAD": " ".join(map(str, preload))}
    listed = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=variables, check=False,
                            timeout=120)
    found = {}
    for line in listed.stdout.splitlines():
        matched = _RESOLVED.match(line)
        if matched:
            found[matched.group(1)] = matched.group(3)
    return found


@dataclass
class EnvironmentCheck:
    """What one CUDA environment brings, needs from the node, and runs on."""

    environment: str
    status: dict
    objects: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)  # library -> what it needs and nothing has
    cuda_from_node: dict[str, str] = field(default_factory=dict)  # CUDA library -> where outside the environment
    from_node: list[str] = field(default_factory=list)  # other libraries only the node has
    gpu_code: dict[str, tuple[str, ...]] = field(default_factory=dict)  # library -> its fatbinary's architectures
    fatbin_bytes: dict[str, int] = field(default_factory=dict)  # library -> the size of its fatbinary
    not_loaded: dict[str, str] = field(default_factory=dict)  # library -> why the workflow never loads it
    backend_reports: dict | str | None = None  # the backend's GpuCode (as a dict) where no GPU is, or why none
    size_gb: float = 0.0

    def backend_said(self) -> str:
        """What the backend checks a GPU run against, in words."""
        code = self.backend_reports
        if code is None or isinstance(code, str):
            return code or "-"
        if code["compiled_at_run_time"]:
            return "kernels compiled at run time (XLA)"
        if not code["sass"] and not code["ptx"]:
            return "nothing without a GPU"
        return " ".join([f"sm_{sass}" for sass in code["sass"]] + [f"compute_{ptx}" for ptx in code["ptx"]])

    def missing_cuda(self) -> dict[str, list[str]]:
        """The CUDA libraries the environment's libraries need and nothing has: each fails the check."""
        found = {library: [name for name in needs if CUDA_LIBRARY.match(name)]
                 for library, needs in self.missing.items()}
        return {library: needs for library, needs in found.items() if needs}

    @property
    def passed(self) -> bool:
        return self.status["status"] == "ok" and not self.missing_cuda() and not self.cuda_from_node

    def main_gpu_libraries(self) -> dict[str, str]:
        """Each framework package's main GPU library, the one with the largest fatbinary (torch's libtorch_cuda.so:
        what ``torch.cuda.get_arch_list()`` reports); a package's smaller ones (kernels for one architecture) and
        NVIDIA's libraries, also those a framework bundles (CNTK's cuDNN), are in the JSON only."""
        main = {}
        for library, size in self.fatbin_bytes.items():
            package = Path(library).parts[0]
            own = package != "nvidia" and not CUDA_LIBRARY.match(Path(library).name)  # not a bundled cuDNN
            if own and size > self.fatbin_bytes.get(main.get(package), -1):
                main[package] = library
        return main

    def runs_on(self) -> dict[str, dict[str, str]]:
        """How each framework package's main GPU library would run on each reference GPU."""
        found = {}
        for package, library in self.main_gpu_libraries().items():
            found[package] = {}
            for model, capability in REFERENCE_GPUS:
                try:
                    said = check_gpu_code(GpuCode.from_arch_names(library, None, self.gpu_code[library],
                                                                  [(model, capability)]))
                    found[package][model] = "PTX, JIT-compiled" if "PTX" in said else "kernels"
                except Unavailable:
                    found[package][model] = "no code"
        return found

    def node_provides(self) -> list[str]:
        """What a node must have for the environment, beyond the driver and a manylinux2014 system: what the
        loader found only outside it, and the other libraries it found nowhere here (with those who need them)."""
        absent = defaultdict(list)
        for library, needs in self.missing.items():
            for name in needs:
                if not CUDA_LIBRARY.match(name):
                    absent[name].append(library)
        return [name for name in self.from_node if name not in MANYLINUX_SYSTEM] + [
            f"{name} (not found here; for {', '.join(libraries)})" for name, libraries in sorted(absent.items())]

    def verdict(self) -> str:
        if self.status["status"] != "ok":
            return f"FAIL: {self.status['reason']}"
        if self.status.get("framework_build") == "cpu":
            return "FAIL: its CUDA requirements installed a CPU build (a CPU wheel in pip's find-links?)"
        failures = [f"{name} from the node ({where})" for name, where in self.cuda_from_node.items()]
        failures += [f"{library} needs {', '.join(needs)}, found nowhere"
                     for library, needs in self.missing_cuda().items()]
        return "FAIL: " + "; ".join(failures) if failures else "ok"


MARKS = {"kernels": "yes", "PTX, JIT-compiled": "PTX (JIT)", "no code": "**no**"}


def markdown(checks: list[EnvironmentCheck]) -> str:
    """The environments' table (what each brings and needs) and the GPU code table (which GPUs each runs on)."""
    header = ("environment", "verdict", "framework build", "the backend checks a GPU against", "size", "shared objects",
              "the node must provide")
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for check in checks:
        needs = ", ".join(["the driver (libcuda.so.1)", *check.node_provides()])
        lines.append(f"| {check.environment} | {check.verdict()} | {check.status.get('framework_build', '-')} | "
                     f"{check.backend_said()} | {check.size_gb:.1f} GB | {check.objects} | {needs} |")
    lines += [""] if any(check.not_loaded for check in checks) else []
    lines += [f"- {check.environment}: {library} not checked: {why}"
              for check in checks for library, why in check.not_loaded.items()]
    models = [model for model, _ in REFERENCE_GPUS]
    lines += ["", "| environment | library: GPU code | " + " | ".join(
        f"{model} (sm_{capability})" for model, capability in REFERENCE_GPUS) + " |",
              "|---|---|" + "---|" * len(models)]
    for check in checks:
        runs_on, main = check.runs_on(), check.main_gpu_libraries()
        for package in sorted(runs_on):
            lines.append(f"| {check.environment} | {main[package]}: {' '.join(check.gpu_code[main[package]])} | "
                         + " | ".join(MARKS[runs_on[package][model]] for model in models) + " |")
    return "\n".join(lines) + "\n"


def check_environment(build: CudaBuild, venv_dir: Path, jobs: int, log,
                      envs_dir: Path = Path("envs")) -> EnvironmentCheck:
    """Builds ``build`` in ``venv_dir`` (named as the workflow names it: ``<directory>/<environment>``) as the workflow
    does on a node with its GPUs, and checks what it loads; the stand-in driver goes beside it."""
    stand_in = venv_dir.parent / f"{venv_dir.name}.driver"

    def with_stand_in_driver(built: Path) -> None:
        if made := stand_in_driver(shared_objects(built), stand_in):
            log.write(f"stand-in driver: {', '.join(map(str, made))}\n")
            os.environ["LD_LIBRARY_PATH"] = str(stand_in)  # for the framework's import below, and nothing else

    requirements = envs_dir / f"{build.environment}.requirements.txt"
    reported = None
    try:
        status = envs.build_environment(requirements, venv_dir, jobs, log, gpus=["GPU 0: (gpu-envs-check)"],
                                        after_install=with_stand_in_driver, capabilities=list(build.capabilities))
        if status["status"] == "ok":
            try:
                reported = envs.ask_framework(status, build.environment, GPU_CODE_PROBE)
            except RuntimeError as error:
                reported = f"the backend cannot say: {error}"
    finally:
        os.environ.pop("LD_LIBRARY_PATH", None)
    if status["requirements"] != build.requirements:
        status.update(status="failed", reason=f"the workflow chose {status['requirements']} for these GPUs, "
                                              f"not {build.requirements}")
    check = inspect_environment(build.environment, venv_dir, status, build.label)
    check.backend_reports = reported
    return check


def inspect_environment(environment: str, venv_dir: Path, status: dict, label: str | None = None) -> EnvironmentCheck:
    """What the dynamic loader finds for every shared object of a built environment, and their GPU code."""
    check = EnvironmentCheck(label or environment, status)
    if not any(venv_dir.glob("lib/python3*/site-packages")):
        return check
    root = site_packages(venv_dir)
    objects = shared_objects(venv_dir)
    preload = [path for path in cuda_wheels.preloaded(environment, root / "nvidia") if path.exists()]
    # A bundled library (auditwheel's numpy.libs/, torch/lib/) finds the others it needs by name once its loader
    # has loaded them, as does one a backend loads first from its environment (CNTK's image-reader/): the loader
    # looks no further than what is loaded for a name it has.
    in_environment = {path.name for path in venv_dir.rglob("*.so*")
                      if path.is_file() and path.resolve().is_relative_to(venv_dir.resolve())}
    from_node, loaded = set(), {path.resolve() for path in preload}  # ldd lists what a preload satisfies as such

    def nvidias(path: Path) -> bool:
        return path.relative_to(root).parts[0] == "nvidia"

    # The frameworks' own libraries first, then NVIDIA's: of those they do not load (plug-ins, a library its
    # framework opens by name), only the CUDA libraries they need count: what else a plug-in needs is its own affair.
    for path in sorted(objects, key=nvidias):
        name = str(path.relative_to(root))
        if name in NEVER_LOADED:
            check.not_loaded[name] = NEVER_LOADED[name]
            continue
        counts_all = not nvidias(path) or path.resolve() in loaded
        for needed, found in resolve_libraries(path, preload).items():
            if not (counts_all or CUDA_LIBRARY.match(needed)) or needed in DRIVER or INTERPRETER.match(needed):
                continue
            inside = found is not None and Path(found).resolve().is_relative_to(venv_dir.resolve())
            if not inside and needed in in_environment:
                continue  # the environment's own, once another of its libraries has loaded it
            if found is None:
                check.missing.setdefault(name, []).append(needed)
            elif not inside:
                if CUDA_LIBRARY.match(needed):
                    check.cuda_from_node[needed] = f"{found}, for {name}"
                else:
                    from_node.add(needed)
            elif not nvidias(path):
                loaded.add(Path(found).resolve())
    for path in objects:  # the GPU code of the frameworks' libraries and of NVIDIA's that they load
        name = str(path.relative_to(root))
        if (not nvidias(path) or path.resolve() in loaded) and (names := elf.fatbin_architectures(path)):
            check.gpu_code[name], check.fatbin_bytes[name] = names, elf.fatbin_size(path)
    check.objects, check.from_node = len(objects), sorted(from_node)
    files = (path for path in venv_dir.rglob("*") if path.is_file() and not path.is_symlink())
    check.size_gb = sum(path.stat().st_size for path in files) / 1e9
    return check
