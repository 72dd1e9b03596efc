"""Records -> runs.csv -> appendix (estimate [95 % interval], n) and figures; missing cells say why."""
import copy
import json
import re

import pandas as pd
import pytest
from dlbench import metrics
from dlbench.figures.bars import bars
from dlbench.jobs import retry
from dlbench.record.build import task_blocks
from dlbench.record.io import load_records, write_record
from dlbench.spec import SETUP_FIELDS, RunSpec
from dlbench.tables import NOT_RECORDED, RUN_KEYS, read_appendix, read_runs
from dlbench.tables.accuracy import write_accuracy
from dlbench.tables.api_cost import write_api_cost
from dlbench.tables.appendix import appendix, appendix_wide, write_appendix
from dlbench.tables.runs import runs_table

from ...conftest import ROOT


def figure(records: list[dict], metric: str, outputs: list) -> None:
    """The bar figure of the records' dataset and network as the workflow draws it: from appendix.csv."""
    appendix_csv = outputs[0].with_suffix(".appendix.csv")
    appendix(runs_table(records)).to_csv(appendix_csv, index=False)
    run = records[0]["run"]
    bars(read_appendix(appendix_csv), run["dataset"], run["network"], metric, outputs)


def record(framework="pytorch", device="cpu", repetition=1, speed=100.0, status="ok", reason="", precision="fp32",
           compile=False, task="train", latency_ms=None):
    return {
        "schema": 6, "status": status, "reason": reason,
        "run": {"framework": framework, "framework_version": "1", "dataset": "mnist-generated",
                "data_mode": "generated", "network": "lenet", "device": device, "repetition": repetition,
                "batch_size_global": 64, "iterations": 20, "warmup_iterations": 10, "learning_rate": 0.01,
                "precision": precision, "compile": compile, "task": task, "threads": 2},
        "latency": None if task != "inference" else {
            "batch_size": 1, "calls": 3, "warmup_calls": 10, "call_ms": latency_ms, "idiom": "model.eval()",
            "p50_ms": latency_ms[1], "p90_ms": latency_ms[2], "p99_ms": latency_ms[2], "mean_ms": sum(latency_ms) / 3,
            "reasons": {}},
        "timing": {"iteration_seconds": [0.1] * 20, "images_per_second_mean": speed if status == "ok" else None,
                   "images_per_second_median": speed if status == "ok" else None, "wall_seconds": 3.0,
                   "cpu_per_wall": 1.9,
                   "start_seconds": 0.5, "import_seconds": 1.0, "build_seconds": 0.25, "setup_seconds": 1.75,
                   "first_step_seconds": 0.2, "warmup_seconds": 1.1, "input_wait_seconds": 0.01,
                   "input_wait_share": 0.01, "contention_share": 0.0,
                   "reasons": {} if status == "ok" else {"images_per_second_mean": f"see the run's reason ({status})"}},
        "memory": {"host_peak_rss_mib": 300.0, "gpu_process_peak_mib": None, "gpu_device_peak_mib": None,
                   "framework_allocator_peak_mib": None,
                   "reasons": {"gpu_process_peak_mib": "CPU run (no GPU used)"}},
        "power": {"gpu_mean_w": None, "gpu_peak_w": None, "gpu_energy_j": None, "energy_per_image_j": None,
                  "cpu_energy_j": None, "cpu_energy_per_image_j": None,
                  "samples": 10, "sample_hz": 20.0, "reasons": {"gpu_mean_w": "CPU run (no GPU used)"}},
        "compute": {"flops_per_image": 13_182_000,
                    "achieved_tflops": speed * 13_182_000 / 1e12 if status == "ok" else None,
                    "ceiling_tflops": 0.2,
                    "ceiling_fraction": speed * 13_182_000 / 1e12 / 0.2 if status == "ok" else None,
                    "ceiling_flag": None, "peak_tflops": None, "mfu": None,
                    "reasons": {"peak_tflops": "no peak known", "mfu": "no peak known"}},
        "quality": {"final_loss": 2.3, "accuracy": None},
        "execution": {"precision": precision, "tf32": False, "compute_dtype": "float32", "loss_scaling": False,
                      "compiler": None},
        "provenance": {"hostname": "node", "cpu_model": "a CPU", "cores": 2, "gpus": [], "python": "3.11",
                       "packages": {}, "config_sha256": "sha", "git_commit": None,
                       "started_at": "2026-11-22T00:00:00+00:00",
                       "finished_at": f"2026-11-22T00:0{repetition}:00+00:00"},
    }


CNTK_REASON = "CNTK 2.7 requires CPython 3.6"


@pytest.fixture
def records(tmp_path):
    items = [record(repetition=r, speed=s) for r, s in ((1, 100.0), (2, 110.0), (3, 120.0))]
    items += [record(framework="cntk", repetition=r, status="unavailable", reason=CNTK_REASON)
              for r in (1, 2, 3)]
    paths = []
    for item in items:
        path = tmp_path / "runs" / item["run"]["framework"] / f"rep{item['run']['repetition']}.json"
        write_record(item, path)
        paths.append(path)
    return load_records(paths)


def test_appendix_reports_mean_sd_and_n_or_the_reason(records, tmp_path):
    runs = runs_table(records)
    assert len(runs) == 6 and list(runs.columns[:len(RUN_KEYS)]) == RUN_KEYS
    runs.to_csv(tmp_path / "runs.csv", index=False)
    write_appendix(tmp_path / "runs.csv", tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.tex")
    table = pd.read_csv(tmp_path / "a.csv")
    speed = table.query("metric == 'train_speed' and framework == 'pytorch'").iloc[0]
    assert (speed["mean"], speed["sd"], speed["n"]) == (110.0, 10.0, 3)
    assert speed["cell"] == "110 [87, 138] (n=3, cv 9.1%) [cv > 5%]"
    cntk = table.query("metric == 'train_speed' and framework == 'cntk'").iloc[0]
    assert cntk["cell"] == f"unavailable: {CNTK_REASON}" and cntk["n"] == 0
    memory = table.query("metric == 'gpu_memory' and framework == 'pytorch'").iloc[0]
    assert memory["cell"] == "unavailable: CPU run (no GPU used)"
    # the LaTeX table holds the same cells: each of its rows, unescaped, is a row of the appendix
    latex = {r"\%": "%", r"\_": "_", r"\textgreater{}": ">", r"\textless{}": "<", r"\&": "&"}
    rows = []
    for line in (tmp_path / "a.tex").read_text().splitlines():
        if line.endswith("\\\\") and " & " in line and not line.startswith("\\"):
            for escaped, plain in latex.items():
                line = line.replace(escaped, plain)
            rows.append(tuple(cell.strip() for cell in line.removesuffix("\\\\").split(" & ")))
    cells = table[["metric", "unit", "dataset", "network", "framework", "cell"]]
    header = tuple(cells.columns[:-1]) + ("cpu",)  # a longtable repeats it on each page
    assert header in rows
    assert sorted(row for row in rows if row != header) == sorted(map(tuple, cells.astype(str).to_numpy()))
    markdown = (tmp_path / "a.md").read_text()
    assert "| 110 [87, 138] (n=3, cv 9.1%) [cv > 5%]" in markdown and CNTK_REASON in markdown
    assert r"\begin{longtable}" in (tmp_path / "a.tex").read_text()


def test_a_partly_failed_cell_says_how_many_runs_counted(records):
    failed = copy.deepcopy(records[0])
    failed.update(status="failed", reason="RuntimeError: out of memory")
    failed["timing"]["images_per_second_mean"] = None
    table = appendix(runs_table([failed, *records[1:3]]))
    assert table.query("metric == 'train_speed'").iloc[0]["cell"] == \
        "115 [66, 200] (n=2 of 3, 1 failed, cv 6.1%) [cv > 5%]"
    memory = table.query("metric == 'host_memory' and framework == 'pytorch'").iloc[0]
    assert memory["n"] == 2  # the failed run's memory reading does not count either


def test_a_cell_whose_runs_failed_differently_lists_every_reason(records):
    reasons = ["runner was killed by SIGKILL (signal 9): likely the kernel's OOM killer",
               "timeout: no result after 60 s", "timeout: no result after 60 s"]
    failed = [record(framework="mxnet", repetition=r, status="failed", reason=why) for r, why in enumerate(reasons, 1)]
    cells = appendix(runs_table([{**item, "path": "rep.json"} for item in failed]))
    cell = cells.query("metric == 'train_speed'").iloc[0]["cell"]
    assert cell == (f"failed: {reasons[0]} (1 of 3); failed: timeout: no result after 60 s (2 of 3)")


def test_failed_runs_never_count_in_a_mean_a_spread_or_a_bar(records, tmp_path):
    """Failed runs keep what was sampled before they failed (here 300 MiB of host memory); none of it
    may be shown as a measurement."""
    failed = [record(framework="mxnet", repetition=r, status="failed", reason="RuntimeError: out of memory")
              for r in (1, 2, 3)]
    for item in failed:
        item["path"] = "x"
    table = appendix(runs_table([*records, *failed]))
    memory = table.query("metric == 'host_memory' and framework == 'mxnet'").iloc[0]
    assert memory["n"] == 0 and pd.isna(memory["mean"]) and pd.isna(memory["sd"]) and memory["runs"] == 3
    assert memory["cell"] == "failed: RuntimeError: out of memory"
    figure([*records, *failed], "host_memory", [tmp_path / "host_memory.svg"])
    svg = (tmp_path / "host_memory.svg").read_text()
    assert 'id="bar pytorch cpu"' in svg and 'id="bar mxnet cpu"' not in svg
    assert 'id="missing mxnet cpu"' in svg and "failed: RuntimeError: out of memory" in svg


def test_figure_is_written_for_values_and_for_missing_metrics(records, tmp_path):
    for metric in ("train_speed", "gpu_power"):
        outputs = [tmp_path / f"{metric}.png", tmp_path / f"{metric}.svg"]
        figure(records, metric, outputs)
        assert all(path.stat().st_size > 1000 for path in outputs)
    assert "unavailable: CPU run" in (tmp_path / "gpu_power.svg").read_text()


def test_the_variants_of_a_cell_stand_side_by_side(tmp_path):
    """Cells that differ only in precision or compile are columns of one row, and bars of one group."""
    variants = [("fp32", False, 100.0), ("bf16", False, 150.0), ("fp32", True, 120.0), ("bf16", True, 180.0)]
    records = [{**record(precision=p, compile=c, speed=s, repetition=r), "path": f"{p}{c}{r}.json"}
               for p, c, s in variants for r in (1, 2)]
    runs = runs_table(records)
    wide = appendix_wide(appendix(runs))
    settings = ["cpu fp32", "cpu fp32-compiled", "cpu bf16", "cpu bf16-compiled"]
    assert list(wide.columns) == ["metric", "unit", "dataset", "network", "framework", *settings]
    speed = wide[wide["metric"] == "train_speed"].iloc[0]
    assert list(speed[settings]) == [f"{mean} [{mean}, {mean}] (n=2, cv 0.0%)" for mean in (100, 120, 150, 180)]
    figure(records, "train_speed", [tmp_path / "speed.svg"])
    svg = (tmp_path / "speed.svg").read_text()
    assert all(f'id="bar pytorch cpu {v}"' in svg for v in ("fp32", "bf16", "fp32-compiled", "bf16-compiled"))
    plain = appendix_wide(appendix(runs[runs["variant"] == "fp32"]))
    assert "cpu" in plain.columns  # the thesis's layout where every run is plain fp32


def test_the_batches_of_a_swept_cell_stand_side_by_side_smaller_first(tmp_path):
    """Seed 004's AlexNet at batch 128 and 64: one row, a column per batch named by it."""
    records = []
    for batch, speed in ((128, 200.0), (64, 150.0)):
        for repetition in (1, 2):
            item = record(speed=speed, repetition=repetition)
            item["run"].update(batch_size_global=batch, batch_swept=True)
            records.append({**item, "path": f"b{batch}-{repetition}.json"})
    wide = appendix_wide(appendix(runs_table(records)))
    assert list(wide.columns)[-2:] == ["cpu fp32-b64", "cpu fp32-b128"]
    speed = wide[wide["metric"] == "train_speed"].iloc[0]
    assert (speed["cpu fp32-b64"], speed["cpu fp32-b128"]) == ("150 [150, 150] (n=2, cv 0.0%)",
                                                                "200 [200, 200] (n=2, cv 0.0%)")


def _older(item: dict, schema: int) -> dict:
    """``item`` as a record of an older schema wrote it."""
    old = copy.deepcopy(item)
    old["schema"] = schema
    compute = old["compute"]  # schema 6 put MFU over the peak, and the ceiling's share apart
    compute["mfu"] = compute.pop("ceiling_fraction")
    del compute["peak_tflops"], compute["ceiling_flag"], compute["reasons"]["peak_tflops"], compute["reasons"]["mfu"]
    if schema == 5:
        return old
    del old["run"]["task"], old["latency"]  # since schema 5
    if schema == 4:
        return old
    del old["compute"]  # since schema 4, as these
    for field in ("input_wait_seconds", "input_wait_share", "contention_share"):
        del old["timing"][field]
    del old["power"]["cpu_energy_per_image_j"]
    for field in SETUP_FIELDS if schema < 3 else ():  # timed since schema 3
        del old["timing"][field]
    return old


def test_records_of_schema_1_read_as_today(tmp_path):
    """Schema 1 wrote the status into the reasons; kept records still make the same cells."""
    old = _older(record(framework="cntk", status="unavailable", reason=f"unavailable: {CNTK_REASON}"), schema=1)
    old["memory"]["reasons"]["gpu_process_peak_mib"] = "unavailable: CPU run (no GPU used)"
    write_record(old, tmp_path / "rep1.json")
    (upgraded,) = load_records([tmp_path / "rep1.json"])
    assert upgraded["schema"] == 6 and upgraded["reason"] == CNTK_REASON
    assert upgraded["memory"]["reasons"]["gpu_process_peak_mib"] == "CPU run (no GPU used)"
    cells = appendix(runs_table([upgraded])).set_index("metric")["cell"]
    assert cells["train_speed"] == f"unavailable: {CNTK_REASON}"


def test_records_of_schema_2_say_their_setup_was_not_timed(tmp_path):
    write_record(_older(record(), schema=2), tmp_path / "rep1.json")
    (upgraded,) = load_records([tmp_path / "rep1.json"])
    assert upgraded["schema"] == 6
    cells = appendix(runs_table([upgraded])).set_index("metric")["cell"]
    assert cells["setup_time"] == cells["first_step_time"] == "unavailable: not measured before record schema 3"


def test_records_of_schema_3_get_the_flop_rate_of_their_speed_and_no_mfu(tmp_path):
    write_record(_older(record(speed=1000.0), schema=3), tmp_path / "rep1.json")
    (upgraded,) = load_records([tmp_path / "rep1.json"])
    assert upgraded["schema"] == 6
    assert upgraded["compute"]["achieved_tflops"] == pytest.approx(1000 * 13_182_000 / 1e12)  # LeNet on MNIST
    cells = appendix(runs_table([upgraded])).set_index("metric")["cell"]
    assert cells["ceiling_fraction"] == "unavailable: no ceiling was measured before record schema 4"
    assert cells["mfu"] == "unavailable: no peak was looked up before record schema 6"


def test_records_of_schema_5_keep_their_mfu_as_the_ceilings_share_and_have_no_peak(tmp_path):
    item = record(speed=1000.0)
    write_record(_older(item, schema=5), tmp_path / "rep1.json")
    (upgraded,) = load_records([tmp_path / "rep1.json"])
    assert upgraded["compute"]["ceiling_fraction"] == item["compute"]["ceiling_fraction"] > 0
    assert upgraded["compute"]["mfu"] is None and upgraded["compute"]["ceiling_flag"] is None
    cells = appendix(runs_table([upgraded])).set_index("metric")["cell"]
    assert cells["mfu"] == "unavailable: no peak was looked up before record schema 6"


def test_a_run_that_beats_its_ceiling_is_marked_on_that_metric_only(tmp_path):
    fast = record(speed=1000.0)
    fast["compute"]["ceiling_fraction"] = 1.3
    write_record(fast, tmp_path / "rep1.json")
    runs = runs_table(load_records([tmp_path / "rep1.json"]))
    flags = appendix(runs).set_index("metric")["flags"]
    assert flags["ceiling_fraction"] == "beats the ceiling 1/1" and flags["train_speed"] == ""


def test_records_of_schema_4_are_training_runs(tmp_path):
    write_record(_older(record(), schema=4), tmp_path / "rep1.json")
    (upgraded,) = load_records([tmp_path / "rep1.json"])
    assert upgraded["schema"] == 6 and upgraded["run"]["task"] == "train" and upgraded["latency"] is None
    cells = appendix(runs_table([upgraded])).set_index("metric")["cell"]
    assert cells["train_speed"] == "100 (n=1, no interval)" and "latency_p50" not in cells


def test_inference_stands_beside_training_and_has_its_own_metrics(tmp_path):
    """A cell's training and inference runs: train_speed only of the one, inference speed and latency only of
    the other, the metrics both measure side by side (a setting per task)."""
    records = [{**record(repetition=r), "path": f"t{r}"} for r in (1, 2)]
    records += [{**record(repetition=r, task="inference", speed=1000.0 * r, latency_ms=[0.4, 0.5, 0.9]),
                 "path": f"i{r}"} for r in (1, 2)]
    runs = runs_table(records)
    assert runs.loc[runs["task"] == "inference", "train_speed"].isna().all()
    assert runs.loc[runs["task"] == "train", "inference_speed"].isna().all()
    wide = appendix_wide(appendix(runs)).set_index("metric")
    assert list(wide.columns[-2:]) == ["cpu", "cpu inference"]
    assert wide.loc["train_speed", "cpu"] == "100 [100, 100] (n=2, cv 0.0%)"
    assert pd.isna(wide.loc["train_speed", "cpu inference"])
    assert wide.loc["inference_speed", "cpu inference"] == "1,414 [17, 115,608] (n=2, cv 47.1%) [cv > 5%]"
    assert wide.loc["latency_p50", "cpu inference"] == "0.500 [0.500, 0.500] (n=2, cv 0.0%)"
    assert wide.loc["host_memory", "cpu"] == wide.loc["host_memory", "cpu inference"] == "300 [300, 300] (n=2, cv 0.0%)"
    figure(records, "latency_p99", [tmp_path / "latency.svg"])
    svg = (tmp_path / "latency.svg").read_text()
    assert 'id="bar pytorch cpu inference"' in svg and 'id="bar pytorch cpu"' not in svg  # inference runs alone
    figure(records, "host_memory", [tmp_path / "memory.svg"])
    svg = (tmp_path / "memory.svg").read_text()
    assert 'id="bar pytorch cpu"' in svg and 'id="bar pytorch cpu inference"' in svg


def test_the_api_cost_table_sets_each_framework_beside_the_one_it_runs_on(tmp_path):
    """Keras on PyTorch and ONNX Runtime against PyTorch, keras-jax (no native peer) alone; onnxruntime's
    training runs are unavailable, so it has no training columns."""
    records = []
    for framework, latency, speed in (("pytorch", 0.25, 400.0), ("keras-torch", 2.0, 100.0),
                                      ("onnxruntime", 0.125, None), ("keras-jax", 0.2, 500.0)):
        for repetition in (1, 2):
            records.append({**record(framework, repetition=repetition, task="inference", speed=8000.0,
                                     latency_ms=[latency / 2, latency, latency * 2]),
                            "path": f"{framework}i{repetition}"})
            trained = record(framework, repetition=repetition, speed=speed or 1.0, status="ok" if speed else
                             "unavailable", reason="" if speed else "train: onnxruntime runs inference only")
            records.append({**trained, "path": f"{framework}t{repetition}"})
        fitted = record("keras-torch", repetition=repetition, speed=80.0)  # seed 001's model.fit path
        fitted["run"]["keras_fit"] = True
        records.append({**fitted, "path": f"keras-torch-fit{repetition}"})
    appendix_csv, runs_csv = tmp_path / "appendix.csv", tmp_path / "runs.csv"
    runs_table(records).to_csv(runs_csv, index=False)
    appendix(runs_table(records)).to_csv(appendix_csv, index=False)
    write_api_cost(appendix_csv, runs_csv, tmp_path / "api_cost.csv", tmp_path / "api_cost.md")
    cost = pd.read_csv(tmp_path / "api_cost.csv").set_index("framework")
    fit = cost[cost["variant"] == "fp32-fit"]  # Keras's fit beside PyTorch's own loop (which has no fit variant)
    assert list(fit.index) == ["keras-torch"] and fit["train_speed train ratio"].iloc[0] == pytest.approx(0.2)
    cost = cost[cost["variant"] == "fp32"]
    assert list(cost.index) == ["pytorch", "keras-torch", "onnxruntime", "keras-jax"]  # each beside its peer
    assert cost.loc["keras-torch", "latency_p50 inference ratio"] == pytest.approx(8.0)
    assert cost.loc["onnxruntime", "latency_p50 inference ratio"] == pytest.approx(0.5)
    assert cost.loc["keras-torch", "train_speed train ratio"] == pytest.approx(0.25)
    assert pd.isna(cost.loc["onnxruntime", "train_speed train"]) and pd.isna(cost.loc["keras-jax", "runs_on"])
    assert cost.loc["keras-torch", "setup_time train"] == pytest.approx(1.75)
    # seed 001's charts: milliseconds per step, the batch (64) over the speed
    assert cost.loc["keras-torch", "step_ms train"] == pytest.approx(1000 * 64 / 100)
    assert cost.loc["keras-torch", "step_ms train ratio"] == pytest.approx(4.0)
    assert cost.loc["pytorch", "step_ms inference"] == pytest.approx(1000 * 64 / 8000)
    markdown = re.sub(" +", " ", (tmp_path / "api_cost.md").read_text())  # to_markdown's padding
    # ms per training and inference step first, as seed 001's charts; each ratio with its interval and verdict (two
    # runs a side without spread: resolved)
    row = ("| mnist-generated | lenet | cpu | a CPU, 2 cores | fp32 | keras-torch | pytorch | 640 (×4 [4, 4], slower) "
           "| 8.00 (×1 [1, 1], same) | 2.00 (×8 [8, 8], slower) |")
    assert "ms per train step" in markdown
    assert row in markdown
    assert "| keras-jax | — | 128 | 8.00 | 0.200 |" in markdown
    # frameworks that run on none: their numbers alone, no ratios
    alone, alone_runs = tmp_path / "alone.csv", tmp_path / "alone_runs.csv"
    runs_table([record(repetition=1) | {"path": "p"}]).to_csv(alone_runs, index=False)
    appendix(runs_table([record(repetition=1) | {"path": "p"}])).to_csv(alone, index=False)
    write_api_cost(alone, alone_runs, tmp_path / "alone_cost.csv", tmp_path / "alone_cost.md")
    cost = pd.read_csv(tmp_path / "alone_cost.csv")
    assert list(cost["framework"]) == ["pytorch"] and cost["runs_on"].isna().all()
    assert cost.loc[0, "train_speed train"] == pytest.approx(100) and "train_speed train ratio" not in cost


def test_retry_sets_failed_records_aside_and_keeps_them(tmp_path):
    runs = tmp_path / "runs"
    write_record(record(repetition=1), runs / "a" / "rep1.json")
    write_record(record(repetition=2, status="failed", reason="x"), runs / "a" / "rep2.json")
    (runs / "a" / "rep2.log").write_text("log")
    moved = retry.set_aside(runs, tmp_path / "runs-failed")
    assert [p.name for p in moved] == ["rep2.2026-11-22T000200+0000.json"]
    assert (runs / "a" / "rep1.json").exists() and not (runs / "a" / "rep2.json").exists()
    assert moved[0].with_suffix(".log").read_text() == "log"


def test_retry_forgets_failed_fetches_and_keeps_their_archives(tmp_path):
    raw = tmp_path / "raw"
    for family, status in (("mnist", "failed"), ("cifar10", "ok")):
        (raw / family).mkdir(parents=True)
        (raw / family / "fetch.json").write_text(json.dumps({"status": status, "reason": ""}))
        (raw / family / "archive.gz").write_text("kept")
    assert retry.forget_failed_fetches(raw) == [raw / "mnist" / "fetch.json"]
    assert (raw / "cifar10" / "fetch.json").exists() and (raw / "mnist" / "archive.gz").read_text() == "kept"


def accuracy_record(framework="pytorch", repetition=1, accuracies=(0.8, 0.95), dataset="mnist", status="ok",
                    reason="", input_size=None):
    """An accuracy run's record: an epoch per accuracy, a second and a tenth each."""
    item = record(framework=framework, repetition=repetition, status=status, reason=reason, task="accuracy")
    item["run"].update(dataset=dataset, data_mode="real" if "-" not in dataset else "generated", network="resnet18",
                       batch_size_global=10, epochs=len(accuracies), target_accuracy=0.9, warmup_iterations=0)
    if input_size:
        item["run"]["input_size"] = input_size
    epochs = [{"epoch": k + 1, "steps": 5000, "train_seconds": 1.0, "images_per_second": 50_000.0, "train_loss": 0.3,
               "test_accuracy": accuracy, "test_loss": 0.2, "test_images": 10_000, "eval_seconds": 0.1,
               "elapsed_seconds": 1.1 * (k + 1)} for k, accuracy in enumerate(accuracies)] if status == "ok" else []
    spec = RunSpec(**{key: value for key, value in item["run"].items() if key in RunSpec.__dataclass_fields__})
    item["quality"] = task_blocks(spec, {"epochs": epochs, "final_loss": 0.3},
                                  None if epochs else "unavailable")["quality"]
    return item


def test_the_accuracy_table_sets_seed_003_beside_its_cases_and_says_what_differs(tmp_path):
    items = [accuracy_record(repetition=r, accuracies=(0.5,) * 8 + (0.8, a), input_size=224)  # the seed's 10 epochs
             for r, a in ((1, 0.95), (2, 0.97))]
    items += [accuracy_record("cntk", r, status="unavailable", reason="accuracy: cntk runs train, inference only",
                              input_size=224) for r in (1, 2)]
    items += [accuracy_record(repetition=1, dataset="mnist-generated"), accuracy_record(repetition=1, dataset="cifar10",
                                                                                      accuracies=(0.5,) * 10)]
    for item in items:
        run = item["run"]
        write_record(item, tmp_path / run["framework"] / run["dataset"] / f"rep{run['repetition']}.json")
    runs_csv = tmp_path / "runs.csv"
    runs_table(load_records(sorted(tmp_path.rglob("rep*.json")))).to_csv(runs_csv, index=False)
    write_appendix(runs_csv, tmp_path / "appendix.csv", tmp_path / "appendix.md", tmp_path / "appendix.tex")
    write_accuracy(runs_csv, tmp_path / "appendix.csv", tmp_path / "accuracy.csv", tmp_path / "accuracy.md")
    table = pd.read_csv(tmp_path / "accuracy.csv", keep_default_na=False).set_index(["framework", "dataset"])
    ours = table.loc[("pytorch", "mnist")]
    assert ours["test_accuracy"] == "0.960 [0.833, 1.087] (n=2, cv 1.5%)"
    assert ours["time_to_accuracy"] == "11.00 [11.00, 11.00] (n=2, cv 0.0%)"
    assert ours["total_time"] == "11.00 [11.00, 11.00] (n=2, cv 0.0%)"  # the seed's Time: all 10 epochs
    assert ours["seed 003 P100"] == "99.19% in 519 s" and ours["seed 003 K80"] == "99.28% in 1,462 s"
    assert ours["differs from seed 003"] == ""  # 10 epochs at batch 10 of 224x224 images: the seed's case
    assert table.loc[("cntk", "mnist"), "test_accuracy"] == "unavailable: accuracy: cntk runs train, inference only"
    cifar = table.loc[("pytorch", "cifar10")]  # the seed's epochs at the dataset's own size, never reaching 0.9
    assert cifar["differs from seed 003"] == "the dataset's own input size (seed's 224x224 RGB)"
    assert cifar["time_to_accuracy"] == "unavailable: no epoch of 10 reached 0.9 (best 0.5000)"
    assert cifar["total_time"] == "11.00 (n=1, no interval)"  # reached or not, the run took its 10 epochs
    generated = table.loc[("pytorch", "mnist-generated")]
    assert generated["data"].startswith("generated stand-in") and generated["seed 003 P100"] == ""
    assert "# Accuracy and time to accuracy" in (tmp_path / "accuracy.md").read_text()


def test_unsteady_cells_are_marked_and_shares_near_zero_are_not(tmp_path):
    """A cell whose repetitions disagree by more than 5 % (sd over mean) says so in its cell and hatches its bar;
    a steady one only prints its cv; a share such as a run's input wait is never marked (1 % vs 2 % is 47 %)."""
    steady = [{**record(repetition=r, speed=s), "path": f"s{r}"} for r, s in ((1, 100.0), (2, 102.0))]
    unsteady = [{**record("tensorflow", repetition=r, speed=s), "path": f"u{r}"} for r, s in ((1, 100.0), (2, 130.0))]
    for item, share in zip(unsteady, (0.01, 0.02)):
        item["timing"]["input_wait_share"] = share
    table = appendix(runs_table([*steady, *unsteady])).set_index(["metric", "framework"])
    assert table.loc[("train_speed", "pytorch"), "cell"] == "101 [89, 115] (n=2, cv 1.4%)"
    assert table.loc[("train_speed", "tensorflow"), "cell"] == "114 [22, 604] (n=2, cv 18.4%) [cv > 5%]"
    assert table.loc[("input_wait", "tensorflow"), "cv"] > 0.4 and not table.loc[("input_wait", "tensorflow"), "flags"]
    figure([*steady, *unsteady], "train_speed", [tmp_path / "speed.svg"])
    svg = (tmp_path / "speed.svg").read_text()
    assert re.search(r'id="flags tensorflow cpu".*cv &gt; 5%', svg, re.DOTALL) and 'id="flags pytorch cpu"' not in svg


def test_a_contended_run_is_left_out_where_two_clean_ones_remain_and_kept_where_asked_or_needed():
    """MXNet's LeNet at 136 images/s beside its clean 4,400s while a dry run held a core: it measured the other
    work, so the estimate leaves it out and the cell names it; its memory peak (not flagged) still counts."""
    items = [{**record(repetition=r, speed=s), "path": f"r{r}"} for r, s in ((1, 4400.0), (2, 4410.0), (3, 136.0))]
    items[2]["timing"]["contention_share"] = 0.49
    table = appendix(runs_table(items)).set_index("metric")
    speed = table.loc["train_speed"]
    assert (speed["n"], speed["left_out"]) == (2, 1) and speed["estimate"] == pytest.approx((4400 * 4410) ** 0.5)
    assert speed["cell"].startswith("4,405 [") and "(n=2 of 3, 1 contended left out" in speed["cell"]
    assert "contended" not in speed["flags"] and table.loc["host_memory", "n"] == 3
    kept = appendix(runs_table(items), contended="keep").set_index("metric").loc["train_speed"]
    assert (kept["n"], kept["left_out"]) == (3, 0) and "contended 1/3" in kept["flags"]
    too_few = appendix(runs_table(items[1:])).set_index("metric").loc["train_speed"]  # one clean run: no interval
    assert (too_few["n"], too_few["left_out"]) == (2, 0) and "contended 1/2" in too_few["flags"]
    with pytest.raises(ValueError, match="statistics.contended: 'drop' is not one of leave_out, keep"):
        appendix(runs_table(items), contended="drop")


def test_a_run_whose_timed_steps_had_not_settled_is_flagged_and_its_median_step_speed_stands_beside(tmp_path):
    """Steps a third slower at the window's start than at its end: still warming up; steps of one length with a
    single slow one: steady, and the median step's speed (640 images/s) beside the window's."""
    warming, settled = record(repetition=1), record(repetition=2)
    warming["timing"]["iteration_seconds"] = [0.1] * 10 + [0.15 - 0.05 * k / 39 for k in range(40)]
    settled["timing"]["iteration_seconds"] = [0.1] * 10 + [0.1] * 19 + [0.5] + [0.1] * 20
    settled["timing"]["images_per_second_median"] = 640.0
    runs = runs_table([{**warming, "path": "w"}, {**settled, "path": "s"}]).set_index("repetition")
    assert runs.loc[1, "not_steady"] and runs.loc[1, "steady_shift"] < -0.1
    assert not runs.loc[2, "not_steady"] and runs.loc[2, "steady_shift"] == 0
    table = appendix(runs.reset_index()).set_index("metric")
    assert table.loc["train_speed", "flags"] == "steps not steady 1/2"
    assert table.loc["train_speed_median", "cell"].startswith("253 [")  # the geometric mean of 100 and 640
    figure([{**warming, "path": "w"}, {**settled, "path": "s"}], "train_speed", [tmp_path / "speed.svg"])
    assert 'id="beside pytorch cpu"' in (tmp_path / "speed.svg").read_text()


def test_a_runs_table_of_an_older_dlbench_lacks_the_newer_metrics_and_flags_and_still_makes_its_appendix(tmp_path):
    """A set of 0.44 (make compare, make report): no median step speed, no steady-state flag; the appendix says so."""
    runs = runs_table([{**record(repetition=r), "path": f"r{r}"} for r in (1, 2)])
    runs.drop(columns=["train_speed_median", "train_speed_median_reason", "not_steady"]).to_csv(
        tmp_path / "runs.csv", index=False)
    table = appendix(read_runs(tmp_path / "runs.csv")).set_index("metric")
    assert table.loc["train_speed", "cell"] == "100 [100, 100] (n=2, cv 0.0%)"
    assert table.loc["train_speed_median", "cell"] == "unavailable: not measured by the older dlbench that wrote " \
                                                      "this table"


def test_a_runs_flags_mark_what_its_surroundings_bear_on_and_not_its_memory_peak():
    """A run that waited for its input is marked so in its speed, not in its memory peak (nor its accuracy)."""
    waited = [{**record(repetition=r), "path": f"w{r}"} for r in (1, 2)]
    for item in waited:
        item["timing"]["input_wait_share"] = 0.3
    table = appendix(runs_table(waited)).set_index("metric")
    assert table.loc["train_speed", "flags"] == "input-bound 2/2"
    assert table.loc["host_memory", "flags"] == "" and not table.loc["host_memory", "cell"].endswith("]")


def test_a_metric_nothing_in_the_config_measures_gets_no_figure():
    assert metrics.drawn("train_speed", ["train"], ["cpu"], rapl=False)
    assert not metrics.drawn("gpu_power", ["train"], ["cpu", "2xcpu"], rapl=True)
    assert metrics.drawn("gpu_power", ["train"], ["cpu", "gpu1"], rapl=False)
    assert not metrics.drawn("cpu_energy_per_image", ["train"], ["cpu"], rapl=False)
    assert metrics.drawn("cpu_energy_per_image", ["train"], ["cpu"], rapl=True)
    assert not metrics.drawn("latency_p50", ["train", "accuracy"], ["gpu1"], rapl=True)


def damaged_records(tmp_path) -> dict:
    """Records as a disk, a hand or a newer dlbench may leave them, each with what its reader must say."""
    whole = json.dumps(record(), indent=1)
    no_timing = {key: value for key, value in record().items() if key != "timing"}
    damaged = {
        "truncated": (whole[: len(whole) // 2], "JSONDecodeError: "),
        "no_timing": (json.dumps(no_timing), "the record: 'timing' is a required property"),
        "future": (json.dumps({**record(), "schema": 99}), "record schema 99 is not one this dlbench reads (1 to 6)"),
        "not_a_number": (whole.replace('"images_per_second_median": 100.0', '"images_per_second_median": NaN'),
                         "ValueError: NaN is not a measurement"),
        "negative": (json.dumps({**record(), "compute": {**record()["compute"], "ceiling_fraction": -1.0}}),
                     "compute/ceiling_fraction: -1.0 is less than the minimum of 0"),
        "infinite": (whole.replace('"images_per_second_mean": 100.0', '"images_per_second_mean": 1e999'),
                     "ValueError: 1e999 is not a measurement (not finite)"),
        "absurd": (whole.replace('"images_per_second_mean": 100.0', '"images_per_second_mean": 1e300'),
                   "ValueError: 1e300 is not a measurement (beyond ±1e+15)"),
        "negative_speed": (whole.replace('"images_per_second_mean": 100.0', '"images_per_second_mean": -5.0'),
                           "timing/images_per_second_mean: -5.0 is less than or equal to the minimum of 0"),
        "boolean_schema": (json.dumps({**record(), "schema": True}),
                           "record schema True is not one this dlbench reads (1 to 6)"),
    }
    paths = {}
    for name, (text, _) in damaged.items():
        paths[name] = tmp_path / "runs" / name / "rep1.json"
        paths[name].parent.mkdir(parents=True)
        paths[name].write_text(text)
    return {name: (paths[name], words) for name, (_, words) in damaged.items()}


def test_a_damaged_record_is_left_out_of_the_tables_named_with_why(tmp_path):
    damaged = damaged_records(tmp_path)
    good = tmp_path / "runs" / "good" / "rep1.json"
    write_record(record(), good)
    said = []
    loaded = load_records([good, *(path for path, _ in damaged.values())], log=said.append)
    assert [r["path"] for r in loaded] == [str(good)]
    assert len(runs_table(loaded)) == 1
    for (path, words), line in zip(damaged.values(), said, strict=True):
        assert line.startswith(f"left out: {path}: ") and words in line, line


def test_a_record_whose_run_is_not_the_one_its_path_names_is_left_out(tmp_path):
    runs = tmp_path / "results" / "runs"
    filed = runs / "pytorch" / "mnist-generated" / "lenet" / "cpu" / "fp32" / "train"
    good, elsewhere, other_repetition = filed / "rep1.json", filed / "rep2.json", filed / "rep3.json"
    write_record(record(), good)
    alexnet = record(repetition=2)
    alexnet["run"].update(network="alexnet", dataset="cifar10-synthetic")
    write_record(alexnet, elsewhere)
    write_record(record(repetition=1), other_repetition)
    said = []
    assert [r["path"] for r in load_records([good, elsewhere, other_repetition], log=said.append)] == [str(good)]
    assert said == [(f"left out: {elsewhere}: its run is pytorch/cifar10-synthetic/alexnet/cpu/fp32/train/rep2, "
                     "not the pytorch/mnist-generated/lenet/cpu/fp32/train/rep2 its path names"),
                    (f"left out: {other_repetition}: its run is pytorch/mnist-generated/lenet/cpu/fp32/train/rep1, "
                     "not the pytorch/mnist-generated/lenet/cpu/fp32/train/rep3 its path names")]


def test_the_summary_counts_damaged_records_and_names_them(tmp_path):
    from dlbench.jobs.summary import summarise

    damaged = damaged_records(tmp_path)
    paths = [tmp_path / "results" / "runs" / "pytorch" / "mnist-generated" / "lenet" / "cpu" / "fp32" / "train" /
             f"rep{k}.json" for k in range(1, 4)]
    write_record(record(), paths[0])
    paths[1].write_text(damaged["truncated"][0].read_text())
    text = summarise(list(map(str, paths)))
    row = next(line for line in text.splitlines() if line.strip().startswith("pytorch "))
    assert row.split()[1:] == ["1", "0", "0", "1", "1"]  # ok, failed, unavailable, unreadable, not run
    assert f"unreadable (1): {paths[1]}: JSONDecodeError" in text
    assert f"redo the run: snakemake --force {paths[1]}" in text


def test_mfu_is_drawn_where_dlbench_knows_the_peak():
    assert metrics.drawn("mfu", ["train"], ["gpu1"], rapl=False)
    assert not metrics.drawn("mfu", ["train"], ["cpu"], rapl=False)  # a CPU whose peak is not known
    assert metrics.drawn("mfu", ["train"], ["cpu"], rapl=False, cpu_peak=True)
    assert metrics.drawn("ceiling_fraction", ["train"], ["cpu"], rapl=False)


def test_the_docs_and_the_captions_write_the_thresholds_the_code_flags_at():
    """docs/measurement.md's words are the code's thresholds; the captions take them from the rules, never as
    literals."""
    words = metrics.caption_thresholds()
    readme = " ".join((ROOT / "docs" / "measurement.md").read_text().split())
    assert f"input wait exceeds {words['input_bound']} of the timed window" in readme
    assert f"kept more than {words['contended']} busy" in readme
    assert f"A run more than {words['beats_ceiling']} above its ceiling" in readme
    for caption in ("appendix.rst", "figure.rst"):
        text = (ROOT / "report" / caption).read_text()
        assert not re.search(r"\d+ ?%", text), caption
        assert all(f"snakemake.params.thresholds.{name}" in text for name in words), caption


def on_gpus(item: dict, *models: str) -> dict:
    """The record as if its run had held GPUs of ``models``."""
    item["provenance"]["gpus"] = [{"index": k, "uuid": f"GPU-{k}", "name": name, "driver": "550"}
                                  for k, name in enumerate(models)]
    return item


def test_runs_of_one_cell_on_two_gpu_models_are_never_averaged(tmp_path):
    """A gpu1 cell whose repetitions landed on a K20m and on a P100 (a partition that mixes models) is two cells,
    each its machine's; a run that failed before it held its GPUs joins the cell of the only machine named."""
    items = [on_gpus(record(device="gpu1", repetition=1, speed=100.0), "Tesla K20m"),
             on_gpus(record(device="gpu1", repetition=2, speed=102.0), "Tesla K20m"),
             on_gpus(record(device="gpu1", repetition=3, speed=300.0), "Tesla P100-PCIE-16GB"),
             record(device="cpu", speed=20.0)]
    runs = runs_table([{**item, "path": f"r{k}"} for k, item in enumerate(items)])
    speed = appendix(runs).query("metric == 'train_speed'").set_index(["device", "machine"])
    assert speed.loc[("gpu1", "Tesla K20m"), "cell"] == "101 [89, 115] (n=2, cv 1.4%)"
    assert speed.loc[("gpu1", "Tesla P100-PCIE-16GB"), "cell"] == "300 (n=1, no interval)"
    assert speed.loc[("cpu", "a CPU, 2 cores"), "n"] == 1
    wide = appendix_wide(appendix(runs)).set_index("metric")
    assert list(wide.columns[4:]) == ["Tesla K20m: gpu1", "Tesla P100-PCIE-16GB: gpu1", "a CPU, 2 cores: cpu"]
    failed = record(device="gpu1", repetition=3, status="failed", reason="CUDA error: out of memory")
    runs = runs_table([{**item, "path": f"r{k}"} for k, item in enumerate([*items[:2], failed])])
    assert list(runs["machine"]) == ["Tesla K20m"] * 3
    assert "n=2 of 3, 1 failed" in appendix(runs).query("metric == 'train_speed'")["cell"].iloc[0]


def on_target(item: dict, name: str) -> dict:
    item["run"]["hardware"] = name
    return item


def test_each_hardware_target_is_its_own_column_in_the_config_s_names(tmp_path):
    """Two targets (the thesis's 1x K20m and 1x P100 columns) and the CPU: a column per target and device, their
    runs never averaged together, even where the machines are alike; the tables read back name each target."""
    items = [on_target(on_gpus(record(device="gpu1", repetition=r, speed=100.0 + r), "Tesla K20m"), "k20")
             for r in (1, 2)]
    items += [on_target(on_gpus(record(device="gpu1", repetition=r, speed=300.0 + r), "Tesla K20m"), "k20-b")
              for r in (1, 2)]
    items.append(on_target(record(device="cpu", speed=20.0), "e5"))
    runs = runs_table([{**item, "path": f"r{k}"} for k, item in enumerate(items)])
    runs.to_csv(tmp_path / "runs.csv", index=False)
    runs = read_runs(tmp_path / "runs.csv")
    long = appendix(runs)
    long.to_csv(tmp_path / "appendix.csv", index=False)
    speed = read_appendix(tmp_path / "appendix.csv").query("metric == 'train_speed'").set_index("hardware")
    assert speed.loc["k20", "mean"] == pytest.approx(101.5) and speed.loc["k20-b", "mean"] == pytest.approx(301.5)
    assert list(appendix_wide(long).columns[5:]) == ["e5: cpu", "k20: gpu1", "k20-b: gpu1"]
    # in the config's order of targets, where it is given; a target it does not list after them
    assert list(appendix_wide(long, ["k20-b", "e5"]).columns[5:]) == ["k20-b: gpu1", "e5: cpu", "k20: gpu1"]
    write_appendix(tmp_path / "runs.csv", *(tmp_path / f"a.{suffix}" for suffix in ("csv", "md", "tex")),
                   ["k20-b", "k20", "e5"])
    header = (tmp_path / "a.md").read_text().splitlines()[2]
    assert header.index("k20-b: gpu1") < header.index("k20: gpu1") < header.index("e5: cpu")
    # a target whose device ran on two machines names both
    items[3] = on_target(on_gpus(record(device="gpu1", repetition=2, speed=500.0), "Tesla P100-PCIE-16GB"), "k20-b")
    runs = runs_table([{**item, "path": f"r{k}"} for k, item in enumerate(items)])
    assert "k20-b, Tesla P100-PCIE-16GB: gpu1" in list(appendix_wide(appendix(runs)).columns)


def test_one_nodes_cpu_and_gpu_columns_keep_their_device_names():
    """One machine per device (a node's CPU and its GPUs): the appendix's columns are the devices, as before."""
    items = [on_gpus(record(device="gpu1", speed=300.0), "NVIDIA H100 80GB HBM3"),
             on_gpus(record(device="gpu2", speed=590.0), "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
             record(device="cpu", speed=20.0)]
    runs = runs_table([{**item, "path": f"r{k}"} for k, item in enumerate(items)])
    assert set(runs["machine"]) == {"NVIDIA H100 80GB HBM3", "a CPU, 2 cores"}
    assert list(appendix_wide(appendix(runs)).columns[5:]) == ["cpu", "gpu1", "gpu2"]


def test_a_runs_csv_made_before_runs_named_their_target_and_machine_still_reads(records, tmp_path):
    runs_csv = tmp_path / "runs.csv"
    runs_table(records).drop(columns=["hardware", "machine"]).to_csv(runs_csv, index=False)
    runs = read_runs(runs_csv)
    assert list(runs.columns[:len(RUN_KEYS)]) == RUN_KEYS and set(runs["machine"]) == {NOT_RECORDED}
    assert set(runs["hardware"]) == {""}
    appendix(runs).drop(columns=["hardware", "machine"]).to_csv(tmp_path / "appendix.csv", index=False)
    old = read_appendix(tmp_path / "appendix.csv")
    assert list(old.columns) == list(appendix(runs).columns) and set(old["hardware"]) == {""}
    assert appendix(runs).query("metric == 'train_speed' and framework == 'pytorch'")["n"].iloc[0] == 3


def test_timings_split_each_run_s_wall_time_into_its_parts_and_sum_them_per_framework(tmp_path):
    from dlbench.tables.timings import write_timings

    items = [record(repetition=1), record(repetition=2),
             record(framework="mxnet", status="failed", reason="RuntimeError: boom")]
    items[2]["timing"].update(dict.fromkeys(("start_seconds", "import_seconds", "build_seconds", "warmup_seconds",
                                             "timed_seconds")))
    for item in items[:2]:
        item["timing"].update(timed_seconds=0.5, wall_seconds=4.0)
    write_timings(items, tmp_path / "timings.csv", tmp_path / "timings.md")
    runs = pd.read_csv(tmp_path / "timings.csv")
    ok = runs.query("framework == 'pytorch'")
    # wall 4.0 = start 0.5 + import 1.0 + build 0.25 + warm-up 1.1 + timed 0.5 + other 0.65
    assert ok["other"].round(6).tolist() == [0.65, 0.65]
    assert runs.query("framework == 'mxnet'")["other"].isna().all()
    text = (tmp_path / "timings.md").read_text()
    assert "3 runs, 0.2 minutes of run wall time together" in text  # the failed run's 3 s too
    assert "start 12 %, import 25 %, build 6 %, warm-up 28 %, timed 12 %, other 16 %" in text
    assert "| mxnet       | train  |      1 |" in text


@pytest.mark.parametrize(("change", "words"), [
    (lambda item: item["provenance"]["packages"].update(torch="2.12.0"), "package torch 2.12.0 here, 2.13.0 there"),
    (lambda item: item["run"].update(framework_version="2.12.0"), "framework_version 2.12.0 here, 1 there"),
    (lambda item: item["provenance"].update(dlbench_version="0.30.0"), "dlbench 0.30.0 here, 0.37.0 there"),
    (lambda item: item["run"].update(threads=1), "threads 1 here, 2 there"),
    (lambda item: item["run"].update(batch_size_global=128), "batch_size_global 128 here, 64 there"),
    (lambda item: item["run"].update(iterations=500), "iterations 500 here, 20 there"),
    (lambda item: item["provenance"].update(python="3.12.1"), "python 3.12.1 here, 3.11 there"),
])
def test_a_run_not_equal_to_its_cells_others_is_set_apart_and_says_how(change, words):
    """Three repetitions of one cell, one of them made otherwise (another torch, dlbench, thread count, batch): the
    cell averages the two equals, and the third is set apart with what differs; it is never in the mean."""
    items = []
    for repetition, speed in ((1, 100.0), (2, 102.0), (3, 5000.0)):
        item = record(repetition=repetition, speed=speed)
        item["provenance"].update(dlbench_version="0.37.0", packages={"torch": "2.13.0"})
        items.append({**item, "path": f"rep{repetition}.json"})
    change(items[2])
    runs = runs_table(items)
    assert list(runs["status"]) == ["ok", "ok", "set apart"]
    assert runs["reason"].iloc[2] == f"not equal to its cell's other runs (as rep1.json): {words}"
    speed = appendix(runs).query("metric == 'train_speed'").iloc[0]
    assert speed["cell"] == "101 [89, 115] (n=2 of 3, 1 set apart, cv 1.4%)"


def test_the_newest_runs_setup_decides_between_two_as_many():
    older, newer = record(repetition=1, speed=100.0), record(repetition=2, speed=200.0)
    newer["provenance"].update(packages={"torch": "2.13.0"}, started_at="2026-11-23T00:00:00+00:00")
    runs = runs_table([{**older, "path": "rep1.json"}, {**newer, "path": "rep2.json"}])
    assert list(runs["status"]) == ["set apart", "ok"]
    assert runs["reason"].iloc[0] == "not equal to its cell's other runs (as rep2.json): package torch absent here, " \
                                     "2.13.0 there"


def test_a_record_of_another_machine_in_this_directory_is_left_out_and_named(tmp_path):
    """A record copied in from another machine's results (its CPU another model) is kept out of this machine's
    cells, not shown as a cell of its own, and named with how to measure it here or report it beside them; two
    directories merged keep each one's machine."""
    def filed(root, item):
        path = root / "runs" / "pytorch" / "mnist-generated" / "lenet" / "cpu" / "fp32" / "train" / \
            f"rep{item['run']['repetition']}.json"
        write_record(item, path)
        return path

    here, copied = record(repetition=1), record(repetition=2, speed=900.0)
    copied["provenance"].update(cpu_model="another CPU", started_at="2026-11-21T00:00:00+00:00")
    paths = [filed(tmp_path / "results", item) for item in (here, copied)]
    said = []
    loaded = load_records(paths, log=said.append)
    assert [r["path"] for r in loaded] == [str(paths[0])]
    assert set(runs_table(loaded)["machine"]) == {"a CPU, 2 cores"}
    assert said == [(f"left out: {paths[1]} was measured on another CPU, 2 cores, and this directory's CPU runs on a "
                     f"CPU, 2 cores (the newest, {paths[0]}): runs of two machines are never mixed. To measure it on "
                     f"this machine: snakemake --force {paths[1]}; to report it beside them, move it into a results "
                     'directory of its own and run make report RESULTS="results <that directory>"')]
    elsewhere = filed(tmp_path / "elsewhere", copied)
    assert len(load_records([paths[0], elsewhere], log=said.append)) == 2 and len(said) == 1
