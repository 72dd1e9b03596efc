"""What the node is and what it counts: its identity, GPUs (NVML), host counters, peaks, the devices a run holds."""
