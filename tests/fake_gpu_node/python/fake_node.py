"""The fake GPU node's one description: what its ``nvidia-smi`` and its ``pynvml`` say (one H100 on driver 580, CUDA
13.0), and the CUDA build its torch reports."""
GPU = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-fake-h100-0000-000000000000",
       "compute_cap": "9.0", "memory_mib": 81559, "used_mib": 0, "power_w": 70.0}
DRIVER = "580.65.06"
CUDA_DRIVER = 13000  # NVML's form of 13.0
TORCH_CUDA = "13.0"



def report_cuda_build():
    """torch reports the CUDA build PyPI's Linux wheel is (``torch.version.cuda``) where a CPU build is installed; a
    CUDA build (torch 1.0's only wheel, CUDA 9.0) reports its own."""
    from after_import import after_import

    def cuda_build(module):
        if module.cuda is None:
            module.cuda = TORCH_CUDA

    after_import("torch.version", cuda_build)
