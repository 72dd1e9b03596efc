"""JAX's profiler (``jax.profiler``) over jitted training steps, mapped to the description's layers: Keras on
JAX (keras_api).

The profiler writes an XSpace (TSL's ``xplane.proto``): on the host's plane, or on a GPU's, each op XLA ran
is an event carrying its HLO instruction's name and its module's ``program_id``; the metadata plane holds
each module's optimised HLO (``HloProto``, under that id), whose instructions carry the ``op_name`` JAX gave
them: the named scopes they were traced in (Keras names a layer's ops after it) inside ``jvp(...)`` for the
forward pass and ``transpose(jvp(...))`` for the backward one. jaxlib ships neither message's Python class;
the few fields read here are declared below with protobuf's descriptors (unknown fields are skipped).
"""
from __future__ import annotations

import bisect
import re
import shutil
import tempfile
from pathlib import Path
from typing import Self

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

HOST_PLANE, METADATA_PLANE = "/host:CPU", "/host:metadata"
HLO_PROTO = "Hlo Proto"  # the metadata plane's stat holding a module's serialised HloProto
STAT_VALUES = ("str_value", "bytes_value", "int64_value", "uint64_value")
BACKWARD = "transpose("  # JAX's reverse-mode pass: the transpose of the forward pass's linearisation


def _message_classes() -> dict:
    """XSpace and HloProto with the fields read here, as in xplane.proto and hlo.proto (their numbers);
    a map<int64, ...> is on the wire a repeated {key = 1, value = 2}."""
    file = descriptor_pb2.FileDescriptorProto(name="dlbench/xla_profile.proto", package="dlbench_xla")
    kinds = {"int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
             "uint64": descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
             "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
             "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES}
    messages = {
        "XSpace": [("planes", 1, "XPlane*")],
        "XPlane": [("name", 2, "string"), ("lines", 3, "XLine*"), ("event_metadata", 4, "EventMetadataEntry*"),
                   ("stat_metadata", 5, "StatMetadataEntry*")],
        "EventMetadataEntry": [("key", 1, "int64"), ("value", 2, "XEventMetadata")],
        "StatMetadataEntry": [("key", 1, "int64"), ("value", 2, "XStatMetadata")],
        "XLine": [("name", 2, "string"), ("timestamp_ns", 3, "int64"), ("events", 4, "XEvent*")],
        "XEvent": [("metadata_id", 1, "int64"), ("offset_ps", 2, "int64"), ("duration_ps", 3, "int64"),
                   ("stats", 4, "XStat*")],
        "XStat": [("metadata_id", 1, "int64"), ("uint64_value", 3, "uint64"), ("int64_value", 4, "int64"),
                  ("str_value", 5, "string"), ("bytes_value", 6, "bytes"), ("ref_value", 7, "uint64")],
        "XEventMetadata": [("id", 1, "int64"), ("name", 2, "string"), ("stats", 5, "XStat*")],
        "XStatMetadata": [("id", 1, "int64"), ("name", 2, "string")],
        "HloProto": [("hlo_module", 1, "HloModuleProto")],
        "HloModuleProto": [("name", 1, "string"), ("computations", 3, "HloComputationProto*")],
        "HloComputationProto": [("name", 1, "string"), ("instructions", 2, "HloInstructionProto*"), ("id", 5, "int64")],
        "HloInstructionProto": [("name", 1, "string"), ("metadata", 7, "OpMetadata"),
                                ("called_computation_ids", 38, "int64*")],
        "OpMetadata": [("op_type", 1, "string"), ("op_name", 2, "string")],
    }
    for name, fields in messages.items():
        message = file.message_type.add(name=name)
        for field_name, number, kind in fields:
            repeated, kind = kind.endswith("*"), kind.rstrip("*")
            field = message.field.add(name=field_name, number=number, label=(
                descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL))
            if kind in kinds:
                field.type = kinds[kind]
            else:
                field.type, field.type_name = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, f".dlbench_xla.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"dlbench_xla.{name}"))
            for name in messages}


MESSAGES = _message_classes()


def read_space(data: bytes):
    space = MESSAGES["XSpace"]()
    space.ParseFromString(data)
    return space


def _stats(plane, stats) -> dict:
    """An event's or metadata's stats by name; a ref_value names a stat metadata (XLA's repeated strings)."""
    names = {entry.key: entry.value.name for entry in plane.stat_metadata}
    found = {}
    for stat in stats:
        if stat.HasField("ref_value"):
            found[names.get(stat.metadata_id)] = names.get(stat.ref_value)
        else:
            found[names.get(stat.metadata_id)] = next((getattr(stat, value) for value in STAT_VALUES
                                                       if stat.HasField(value)), None)
    return found


def op_names(space) -> dict[int, dict[str, str]]:
    """Per program id, each HLO instruction's op_name, from the modules' HLO on the metadata plane. An
    instruction XLA made without one (a fusion, say) takes the first its called computations' have."""
    programs = {}
    for plane in space.planes:
        if plane.name != METADATA_PLANE:
            continue
        for entry in plane.event_metadata:
            stats = _stats(plane, entry.value.stats)
            if isinstance(stats.get(HLO_PROTO), bytes):
                proto = MESSAGES["HloProto"]()
                proto.ParseFromString(stats[HLO_PROTO])
                programs[int(stats["program_id"])] = _named(proto.hlo_module)
    return programs


def _named(module) -> dict[str, str]:
    computations = {computation.id: computation for computation in module.computations}

    def op_name(instruction, seen: frozenset = frozenset()) -> str:
        if instruction.metadata.op_name:
            return instruction.metadata.op_name
        called = [computations[index] for index in instruction.called_computation_ids
                  if index in computations and index not in seen]
        return next((name for computation in called for inner in computation.instructions
                     if (name := op_name(inner, seen | {computation.id}))), "")
    return {instruction.name: op_name(instruction)
            for computation in module.computations for instruction in computation.instructions}


def layer_of(op_name: str, layers: set[str]) -> tuple[str | None, bool]:
    """The description layer whose named scope an op was traced in (its outermost), and whether the op is
    of the backward pass."""
    layer = next((token for token in re.findall(r"[\w.-]+", op_name) if token in layers), None)
    return layer, BACKWARD in op_name


def per_step(space, layers: list[str], step_event: str, plane_name: str) -> list[dict[str, tuple[float, float]]]:
    """Each layer's (forward, backward) seconds per step: the ops of ``plane_name`` (the host's, or a GPU's)
    that ran after a host event ``step_event`` began (the jitted step's call; the outermost where they nest),
    by their HLO's op_name."""
    programs, wanted = op_names(space), set(layers)
    calls, ops = [], []
    for plane in space.planes:
        names = {entry.key: entry.value.name for entry in plane.event_metadata}
        for line in plane.lines:
            for event in line.events:
                start = line.timestamp_ns * 1000 + event.offset_ps
                if plane.name == HOST_PLANE and names.get(event.metadata_id) == step_event:
                    calls.append((start, start + event.duration_ps))
                if plane.name == plane_name:
                    stats = _stats(plane, event.stats)
                    if "hlo_op" in stats and "program_id" in stats:
                        ops.append((start, event.duration_ps, stats["program_id"], stats["hlo_op"]))
    starts, end = [], 0
    for start, stop in sorted(calls):  # the call's event has one nested in it of the same name
        if start >= end:
            starts.append(start)
            end = stop
    times = [{name: [0.0, 0.0] for name in layers} for _ in starts]
    for start, duration, program, hlo_op in ops:
        step = bisect.bisect_right(starts, start) - 1
        layer, backward = layer_of(programs.get(int(program), {}).get(hlo_op, ""), wanted)
        if layer and step >= 0:
            times[step][layer][backward] += duration / 1e12
    return [{name: tuple(pair) for name, pair in step.items()} for step in times]


class LayerProfiler:
    """``jax.profiler`` over the steps taken under it: each op XLA ran counts for the layer named in its HLO
    op_name, in the backward pass if it is of the transposed (reverse-mode) computation. XLA fuses ops across
    layers: a fusion counts for the layer its op_name names (that of its root). An op XLA rewrote without an
    op_name counts for none (on CPUs a convolution's weight gradient). On a CPU, ops run on several threads
    at once: their times can sum to more than the step."""

    METHOD = ("JAX's profiler (jax.profiler): each XLA op's time by the named scope in its HLO op_name (Keras "
              "names a layer's ops after it; named after the description's layers), the transposed (reverse-mode) "
              "ops as its backward; a fusion counts for the layer its op_name names, an op XLA rewrote without "
              "one for none; ops run on several threads at once, so the layers' times can sum to more than "
              "the step")
    devices = all_reduce = None  # it profiles one device

    def __init__(self, layers: list[str], step_event: str, gpu: bool):
        self.layers, self.step_event, self.steps = layers, step_event, []
        self.plane = "/device:GPU:0" if gpu else HOST_PLANE

    def __enter__(self) -> Self:
        import jax

        self.logdir = tempfile.mkdtemp(prefix="dlbench-jaxprofile-")
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0  # Python's calls are no layer's time, and tracing them slows the step
        jax.profiler.start_trace(self.logdir, profiler_options=options)
        return self

    def __exit__(self, *exception) -> None:
        import jax

        jax.profiler.stop_trace()
        try:
            if exception[0] is None:
                (path,) = Path(self.logdir).glob("plugins/profile/*/*.xplane.pb")
                self.steps = per_step(read_space(path.read_bytes()), self.layers, self.step_event, self.plane)
        finally:
            shutil.rmtree(self.logdir, ignore_errors=True)
