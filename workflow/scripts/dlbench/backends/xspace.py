"""Profiles as XSpace traces (TSL's ``xplane.proto``), which TensorFlow's profiler (``tf.profiler.experimental``)
and JAX's (``jax.profiler``) both write, read per description layer; and JAX's LayerProfiler (Keras on JAX).

An XSpace has planes: the host's (``/host:CPU``: each thread's events, the training step's call among them),
the CUDA driver calls (``/host:CUPTI``: each kernel launch, with its ``correlation_id``), each GPU's
(``/device:GPU:<n>``: a line per stream, each kernel an event with the same ``correlation_id``, as XLA's CUPTI
collector, ``xla/backends/profiler/gpu/cupti_collector.cc``, writes it for both frameworks) and, from JAX, the
metadata plane. What names an event's layer differs by framework:

- TensorFlow: an op's name scope (``sequential/conv1_1/Conv2D:Conv2D``; the gradient tape's ops under
  ``gradient_tape/``), the name of a host op's event, or on a GPU the kernel's ``tf_op`` stat (the op whose
  annotation was open when the kernel was launched).
- JAX: each XLA op (a host event, or a GPU kernel) carries its HLO instruction's name and its module's
  ``program_id``; the metadata plane holds each module's optimised HLO (``HloProto``, under that id), whose
  instructions carry the ``op_name`` JAX gave them: the named scopes they were traced in (Keras names a
  layer's ops after it) inside ``jvp(...)`` for the forward pass and ``transpose(jvp(...))`` for the backward.

In both, the optimizer's update of a layer's weights is in the name scope ``weight_update/<layer>``
(``keras_layers.updates_in_layer_scopes``): the layer's update.

jaxlib ships neither message's Python class, so the few fields read here are declared below with protobuf's
descriptors (unknown fields are skipped); TensorFlow's traces are read the same way.
"""
from __future__ import annotations

import bisect
import re
import shutil
import tempfile
from pathlib import Path
from typing import Self

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from . import UPDATE_SCOPE, updates_found

HOST_PLANE, METADATA_PLANE, CUPTI_PLANE, GPU_PLANE = "/host:CPU", "/host:metadata", "/host:CUPTI", "/device:GPU:"
CORRELATION, TF_OP = "correlation_id", "tf_op"  # a kernel's and its launch's stat; the op that launched it
TAPE = "gradient_tape"  # the name scope of TensorFlow's backward ops
ALL_REDUCE = re.compile(r"all_?reduce", re.IGNORECASE)  # NCCL's kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL
HLO_PROTO = "Hlo Proto"  # the metadata plane's stat holding a module's serialised HloProto
STAT_VALUES = ("str_value", "bytes_value", "int64_value", "uint64_value")
BACKWARD = "transpose("  # JAX's reverse-mode pass: the transpose of the forward pass's linearisation
FORWARD_PHASE, BACKWARD_PHASE, UPDATE_PHASE = range(3)  # what an op of a layer does: its forward, backward, update
UNTIMED = (f"the trace holds no op in the optimizer's update scope ({UPDATE_SCOPE}/<layer>, which dlbench's "
           "Keras optimizers open)")


def _message_classes() -> dict:
    """XSpace and HloProto with the fields read here, as in xplane.proto and hlo.proto (their numbers);
    a map<int64, ...> is on the wire a repeated {key = 1, value = 2}."""
    file = descriptor_pb2.FileDescriptorProto(name="dlbench/xspace.proto", package="dlbench_xla")
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


def _stat_names(plane) -> dict[int, str]:
    return {entry.key: entry.value.name for entry in plane.stat_metadata}


def _stats(names: dict[int, str], stats) -> dict:
    """An event's or metadata's stats by name; a ref_value names a stat metadata (XLA's repeated strings)."""
    found = {}
    for stat in stats:
        if stat.HasField("ref_value"):
            found[names.get(stat.metadata_id)] = names.get(stat.ref_value)
        else:
            found[names.get(stat.metadata_id)] = next((getattr(stat, value) for value in STAT_VALUES
                                                       if stat.HasField(value)), None)
    return found


def events(plane):
    """A plane's events as (start in ps, duration in ps, name, stats by name)."""
    names, stat_names = {entry.key: entry.value.name for entry in plane.event_metadata}, _stat_names(plane)
    for line in plane.lines:
        for event in line.events:
            yield (line.timestamp_ns * 1000 + event.offset_ps, event.duration_ps, names.get(event.metadata_id, ""),
                   _stats(stat_names, event.stats))


def _plane(space, name: str):
    return next((plane for plane in space.planes if plane.name == name), None)


def step_starts(space, step_event: str) -> list[int]:
    """When each call of the training step began on the host: a host event of that name, the outermost where
    two of that name nest (JAX's call has one nested in it)."""
    host = _plane(space, HOST_PLANE)
    calls = sorted((start, start + duration) for start, duration, name, _ in (events(host) if host else ())
                   if name == step_event)
    starts, end = [], 0
    for start, stop in calls:
        if start >= end:
            starts.append(start)
            end = stop
    return starts


def launches(space) -> dict[int, int]:
    """When each GPU kernel was launched on the host, by its correlation id."""
    cupti = _plane(space, CUPTI_PLANE)
    return {stats[CORRELATION]: start for start, _, _, stats in (events(cupti) if cupti else ())
            if CORRELATION in stats}


def timed_events(space, plane_name: str):
    """The events of one plane with the time that places each in a step: on the host, its start; on a GPU,
    its launch on the host (the loop dispatches a step before the one before it has finished on the GPU, so a
    kernel can run after the next step's call began), its own start where no launch is traced."""
    plane, launched = _plane(space, plane_name), launches(space) if plane_name != HOST_PLANE else {}
    for start, duration, name, stats in (events(plane) if plane else ()):
        yield launched.get(stats.get(CORRELATION), start), duration, name, stats


def op_names(space) -> dict[int, dict[str, str]]:
    """Per program id, each HLO instruction's op_name, from the modules' HLO on the metadata plane. An
    instruction XLA made without one (a fusion, say) takes the first its called computations' have."""
    programs = {}
    for plane in space.planes:
        if plane.name != METADATA_PLANE:
            continue
        stat_names = _stat_names(plane)
        for entry in plane.event_metadata:
            stats = _stats(stat_names, entry.value.stats)
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


def layer_of(op_name: str, layers: set[str]) -> tuple[str | None, int]:
    """The description layer whose named scope a JAX op was traced in (its outermost), and the op's phase: of the
    backward pass, of the update of the layer's weights, else of the forward pass."""
    tokens = re.findall(r"[\w.-]+", op_name)
    layer = next((token for token in tokens if token in layers), None)
    return layer, (BACKWARD_PHASE if BACKWARD in op_name else UPDATE_PHASE if UPDATE_SCOPE in tokens
                   else FORWARD_PHASE)


def tensorflow_layer_of(op: str, layers: set[str]) -> tuple[str | None, int]:
    """The description layer in a TensorFlow op's name scope (``scope/.../Name:Type``; TensorFlow suffixes a
    scope used again, ``conv2_1``; MirroredStrategy's other replicas prefix theirs, ``replica_1/``), and the
    op's phase: the gradient tape's (the backward pass), the update of the layer's weights, else the forward."""
    scope = [re.sub(r"_\d+$", "", part) for part in op.partition(":")[0].split("/")]
    layer = next((part for part in scope if part in layers), None)
    return layer, BACKWARD_PHASE if TAPE in scope else UPDATE_PHASE if UPDATE_SCOPE in scope else FORWARD_PHASE


Steps = list[dict[str, tuple[float, float]]]  # per step, each layer's (forward, backward) seconds
Updates = list[dict[str, float]]  # per step, each layer's update seconds


def _in_steps(starts: list[int], layers: list[str], timed) -> tuple[Steps, Updates]:
    """Sums (when, duration, layer, phase) into each step's (forward, backward) seconds per layer, and its update
    seconds per layer."""
    times = [{name: [0.0, 0.0, 0.0] for name in layers} for _ in starts]
    for when, duration, layer, phase in timed:
        step = bisect.bisect_right(starts, when) - 1
        if layer and step >= 0:
            times[step][layer][phase] += duration / 1e12
    return ([{name: (forward, backward) for name, (forward, backward, _) in step.items()} for step in times],
            [{name: update for name, (_, _, update) in step.items()} for step in times])


def per_step(space, layers: list[str], step_event: str, plane_name: str) -> tuple[Steps, Updates]:
    """JAX: each layer's (forward, backward) seconds per step from the XLA ops of ``plane_name`` (the host's,
    or a GPU's) by their HLO's op_name, and its update's; a step from the host's call of ``step_event`` (the
    jitted step)."""
    programs, wanted = op_names(space), set(layers)

    def timed():
        for when, duration, _, stats in timed_events(space, plane_name):
            if "hlo_op" in stats and "program_id" in stats:
                op_name = programs.get(int(stats["program_id"]), {}).get(stats["hlo_op"], "")
                yield when, duration, *layer_of(op_name, wanted)
    return _in_steps(step_starts(space, step_event), layers, timed())


def tensorflow_per_step(space, layers: list[str], step_event: str, gpus: int
                        ) -> tuple[list[Steps], list[float] | None, Updates]:
    """TensorFlow: each profiled device's steps (each layer's forward and backward seconds per step), over
    several GPUs each step's all-reduce seconds on the first (its collective's kernels, which no layer owns), and
    the first device's update seconds per layer and step. On a CPU the host's op events; on GPUs each GPU's
    kernels by their ``tf_op``."""
    starts, wanted = step_starts(space, step_event), set(layers)
    if not gpus:
        steps, updates = _in_steps(starts, layers, ((when, duration, *tensorflow_layer_of(name, wanted))
                                                    for when, duration, name, _ in timed_events(space, HOST_PLANE)
                                                    if ":" in name))
        return [steps], None, updates
    devices, reducing, updates = [], [0.0 for _ in starts], None
    for index in range(gpus):
        kernels = list(timed_events(space, f"{GPU_PLANE}{index}"))
        if not kernels:  # CUPTI traced nothing: no layer took no time
            raise ValueError(f"TensorFlow's trace has no kernel on {GPU_PLANE}{index}")
        steps, device_updates = _in_steps(starts, layers, (
            (when, duration, *tensorflow_layer_of(stats.get(TF_OP) or "", wanted))
            for when, duration, name, stats in kernels if not ALL_REDUCE.search(name)))
        devices.append(steps)
        if index == 0:
            updates = device_updates
            for when, duration, name, _ in kernels:
                step = bisect.bisect_right(starts, when) - 1
                if ALL_REDUCE.search(name) and step >= 0:
                    reducing[step] += duration / 1e12
    return devices, reducing if gpus > 1 else None, updates


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
              "the step; the optimizer's ops in a layer's weight_update scope as its update")
    devices = all_reduce = None  # it profiles one device

    def __init__(self, layers: list[str], step_event: str, gpu: bool):
        self.layers, self.step_event, self.steps = layers, step_event, []
        self.layer_updates = self.update = None
        self.update_untimed = "the trace was not read"
        self.plane = f"{GPU_PLANE}0" if gpu else HOST_PLANE

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
                self.steps, updates = per_step(read_space(path.read_bytes()), self.layers, self.step_event,
                                               self.plane)
                self.layer_updates, self.update, self.update_untimed = updates_found(updates, UNTIMED)
        finally:
            shutil.rmtree(self.logdir, ignore_errors=True)
