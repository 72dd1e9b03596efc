"""The project's own checks: the GPU acceptance verdicts, the report in a browser, the benchmarks' summary, every
environment's CUDA build."""
