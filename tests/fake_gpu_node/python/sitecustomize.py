"""Start-up of every Python of a test session on the fake GPU node (its directory is first on PYTHONPATH): its torch
reports a CUDA build."""
from fake_node import report_cuda_build

report_cuda_build()
