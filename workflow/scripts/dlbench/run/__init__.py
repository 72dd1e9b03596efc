"""One run's processes: the monitor, the runner, how they are launched, sampled and ended; the ceiling's matrix
product."""
