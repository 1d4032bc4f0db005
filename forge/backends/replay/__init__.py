"""Replay backend: brute-forced Kernel Tuner cache files served as measurements (offline search evaluation)."""
from forge.backends.replay.backend import ReplayBackend
from forge.backends.replay.cache import NOT_IN_CACHE, ReplayData, load_cache

__all__ = ["ReplayBackend", "ReplayData", "load_cache", "NOT_IN_CACHE"]
