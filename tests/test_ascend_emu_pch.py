"""The emulator's precompiled API header (forge/backends/ascend/emu/pch.py) and the entry's object
beside it: built once per flags, read or linked by every later build with those flags, never a
reason for a build to fail."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from forge.backends.ascend.emu import pch, runner

KERNELS = Path(__file__).parent / "ascend_kernels"
FLAGS = ["-O0", *runner.CXX_FLAGS, *(f"-D{k}={v}" for k, v in sorted(runner.emu_defines().items()))]


def _digest() -> str:
    return runner._headers_digest(runner.INCLUDE_DIR)


def test_built_once_per_flags_and_the_oldest_pruned(tmp_path, monkeypatch):
    root = tmp_path / "pch"
    first = pch.prepared(root, runner.CXX, FLAGS, runner.INCLUDE_DIR, _digest(), 120)
    assert first is not None and (first / f"{pch.WRAPPER}.gch").is_file() and (first / pch.ENTRY_OBJECT).is_file()
    stamp = (first / f"{pch.WRAPPER}.gch").stat().st_mtime_ns
    assert pch.prepared(root, runner.CXX, FLAGS, runner.INCLUDE_DIR, _digest(), 120) == first
    assert (first / f"{pch.WRAPPER}.gch").stat().st_mtime_ns == stamp             # read, not rebuilt
    monkeypatch.setattr(pch, "KEEP", 1)
    other = pch.prepared(root, runner.CXX, [f for f in FLAGS if "UB_BYTES" not in f] + ["-DFORGE_EMU_UB_BYTES=4096"], runner.INCLUDE_DIR, _digest(), 120)
    assert other not in (None, first) and not first.exists()                     # limits differ: its own
    assert sorted(p.name for p in root.iterdir()) == [other.name]


def test_a_header_that_cannot_be_precompiled_leaves_the_build_to_parse_it(tmp_path):
    assert pch.prepared(tmp_path, runner.CXX, FLAGS + ["-fno-such-flag"], runner.INCLUDE_DIR, _digest(), 120) is None
    assert list(tmp_path.iterdir()) == []                                        # nothing half-built left
    older = tmp_path / "headers"                                                 # headers without the wrapper
    older.mkdir()
    assert not pch.available(older) and pch.available(runner.INCLUDE_DIR)


@pytest.mark.parametrize("way", ["parsed", "linked", "included"])
def test_a_kernel_builds_and_runs_the_same_with_or_without_it(tmp_path, monkeypatch, way):
    """parsed: no precompiled header, the launcher includes the entry's source; linked: the header
    read and the entry's object linked; included: the header read, its object missing (removed
    from the cache), the entry's source compiled in the launcher."""
    monkeypatch.setenv("FORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "USE_PCH", way != "parsed")
    source = (KERNELS / "add.cpp").read_text()
    if way == "included":
        assert runner.compile_kernel({"add.cpp": source}, "add.cpp", {}, tmp_path / "build").ok
        for obj in (tmp_path / "cache").rglob(pch.ENTRY_OBJECT):
            obj.unlink()
        source += "// built again: not the cached binary\n"
    r = runner.compile_kernel({"add.cpp": source}, "add.cpp", {}, tmp_path / "build")
    assert r.ok, r.error
    launcher = (Path(r.path).parent / "forge_emu_launch.cpp").read_text()
    assert (f'#include "{pch.WRAPPER}"' in launcher) == (way != "parsed")
    assert any("ascend_emu/pch/" in c for c in r.command) == (way != "parsed")
    assert (f'#include "{pch.ENTRY_SOURCE.as_posix()}"' in launcher) == (way != "linked")
    assert any(c.endswith(pch.ENTRY_OBJECT) for c in r.command) == (way == "linked")
    n, blocks = 4096, 8
    x = (np.arange(n) / 64).astype(np.float16)
    y = np.ones(n, np.float16)
    res = runner.run_kernel(r, {"x": x, "y": y}, {"z": ((n,), "float16")}, tiling={"total": n, "perCore": n // blocks},
                            block_dim=blocks)
    assert res.ok, res.error_detail
    np.testing.assert_array_equal(res.outputs["z"], (x + y).astype(np.float16))
