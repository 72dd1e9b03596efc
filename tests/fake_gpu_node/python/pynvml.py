"""A fake of nvidia-ml-py's ``pynvml`` for the fake GPU node (``pytest --fake-gpu-node``): every process of the test
session imports it before the real one. Its one GPU idles; its energy counter follows the wall clock."""
import time

from fake_node import CUDA_DRIVER, DRIVER, GPU


class NVMLError(Exception):
    pass


def _check(handle):
    if handle != GPU["index"]:
        raise NVMLError("Invalid Argument")


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return 1


def nvmlDeviceGetHandleByIndex(index):
    _check(index)
    return index


def nvmlDeviceGetHandleByUUID(uuid):
    if uuid != GPU["uuid"]:
        raise NVMLError("Not Found")
    return GPU["index"]


def nvmlDeviceGetIndex(handle):
    _check(handle)
    return handle


def nvmlDeviceGetUUID(handle):
    _check(handle)
    return GPU["uuid"]


def nvmlDeviceGetName(handle):
    _check(handle)
    return GPU["name"]


def nvmlDeviceGetCudaComputeCapability(handle):
    _check(handle)
    major, minor = GPU["compute_cap"].split(".")
    return int(major), int(minor)


def nvmlSystemGetDriverVersion():
    return DRIVER


def nvmlSystemGetCudaDriverVersion():
    return CUDA_DRIVER


def nvmlDeviceGetPowerUsage(handle):
    _check(handle)
    return int(GPU["power_w"] * 1000)  # mW


def nvmlDeviceGetTotalEnergyConsumption(handle):
    _check(handle)
    return int(GPU["power_w"] * time.time() * 1000)  # mJ


class _Memory:
    total, used = GPU["memory_mib"] * 2**20, GPU["used_mib"] * 2**20
    free = total - used


def nvmlDeviceGetMemoryInfo(handle):
    _check(handle)
    return _Memory()


def nvmlDeviceGetComputeRunningProcesses(handle):
    _check(handle)
    return []
