"""What a shared library's ELF file says without loading it (pyelftools): the GPU code its CUDA fatbinary
carries, as ``cuobjdump --list-elf/--list-ptx`` lists it where CUDA's tools are not installed, the libraries it
needs and where it looks for them.

A fatbinary (section ``.nv_fatbin``) is a run of containers, each a 16-byte header (magic ``0xBA55ED50``,
version, header size, size of its entries) and entries: a header (kind: 1 PTX, 2 a compiled cubin; its header
size and payload size; the architecture, compute capability times ten, at byte 28) and the payload. Only the
headers are read, from a memory map, so a 900 MB ``libmxnet.so`` takes a moment.
"""
from __future__ import annotations

import mmap
import struct
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

FATBIN_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, payload size
_ENTRY_ARCH = struct.Struct("<I")
_ENTRY_ARCH_OFFSET = 28
_KINDS = {1: "compute", 2: "sm"}  # PTX; compiled kernels: nvcc's -gencode names (compute_90, sm_90)


def is_elf(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(4) == b"\x7fELF"


def fatbin_size(path: Path) -> int:
    """The size of ``path``'s fatbinary in bytes; 0 without one."""
    with open(path, "rb") as file:
        section = ELFFile(file).get_section_by_name(".nv_fatbin")
        return section["sh_size"] if section is not None else 0


def fatbin_architectures(path: Path) -> tuple[str, ...]:
    """The GPU code in ``path``'s fatbinary, as nvcc's target names (``sm_80`` kernels, ``compute_90`` PTX),
    sorted by architecture; none for a library without GPU code."""
    names = set()
    with open(path, "rb") as file:
        section = ELFFile(file).get_section_by_name(".nv_fatbin")
        if section is None or section["sh_size"] == 0:
            return ()
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            position, end = section["sh_offset"], section["sh_offset"] + section["sh_size"]
            while position + _CONTAINER.size <= end:
                magic, _, header_size, entries_size = _CONTAINER.unpack_from(data, position)
                if magic != FATBIN_MAGIC:  # padding: containers start 8-byte aligned
                    position = (position + 8) & ~7
                    continue
                entry, entries_end = position + header_size, position + header_size + entries_size
                while entry < entries_end:
                    kind, _, entry_header_size, payload_size = _ENTRY.unpack_from(data, entry)
                    if entry_header_size == 0:
                        raise ValueError(f"{path}: damaged fatbinary at byte {entry}")
                    if kind in _KINDS:
                        names.add(f"{_KINDS[kind]}_{_ENTRY_ARCH.unpack_from(data, entry + _ENTRY_ARCH_OFFSET)[0]}")
                    entry += entry_header_size + payload_size
                position = entries_end
    return tuple(sorted(names, key=lambda name: (int(name.split("_")[1]), name)))


def dynamic_entries(path: Path) -> tuple[list[str], list[str]]:
    """The libraries ``path`` needs (DT_NEEDED) and the directories it searches first (DT_RUNPATH, else
    DT_RPATH, with ``$ORIGIN`` as its own directory)."""
    needed, search = [], {"DT_RUNPATH": [], "DT_RPATH": []}
    with open(path, "rb") as file:
        for section in ELFFile(file).iter_sections():
            if not isinstance(section, DynamicSection):
                continue
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag in search:
                    places = tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath
                    search[tag.entry.d_tag] += places.split(":")
    origin = str(Path(path).resolve().parent)
    directories = search["DT_RUNPATH"] or search["DT_RPATH"]
    return needed, [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for d in directories if d]


def undefined_functions(path: Path) -> set[str]:
    """The dynamic symbols ``path`` uses and does not define."""
    with open(path, "rb") as file:
        symbols = ELFFile(file).get_section_by_name(".dynsym")
        if symbols is None:
            return set()
        return {symbol.name for symbol in symbols.iter_symbols()
                if symbol.name and symbol["st_shndx"] == "SHN_UNDEF"}
