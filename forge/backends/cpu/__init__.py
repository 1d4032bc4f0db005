"""CPU backend: C kernels from `forge.generators.c`, built with the system compiler, run isolated."""
