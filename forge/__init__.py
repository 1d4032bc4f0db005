"""forge: autotuning search framework for fused AI operators (Ascend NPUs, NVIDIA GPUs, CPUs)."""

__version__ = "0.1.0"
