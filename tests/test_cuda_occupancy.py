"""Occupancy calculator against the reference vectors of cuda.md §2.3 (cuda_occupancy.h, CUDA 13.0)."""
import pytest

from forge.backends.cuda.arch import arch_of, cc_limits
from forge.backends.cuda.occupancy import occupancy, waves
from forge.targets import get_target

# threads, regs, static smem, dynamic smem -> blocks/SM on A100, H100/B200, RTX 4090, with the
# binding limits where cuda.md names them.
VECTORS = [
    (128, 255, 0, 0, (2, {"regs"}), (2, {"regs"}), (2, {"regs"})),
    (256, 128, 0, 0, (2, {"regs"}), (2, {"regs"}), (2, {"regs"})),
    (256, 166, 0, 59392, (1, {"regs"}), (1, {"regs"}), (1, {"regs", "smem"})),
    (128, 94, 0, 49152, (3, {"smem"}), (4, {"smem"}), (2, {"smem"})),
    (128, 64, 0, 81920, (2, {"smem"}), (2, {"smem"}), (1, {"smem"})),
    (256, 32, 1024, 0, (8, {"warps", "regs"}), (8, {"warps", "regs"}), (6, {"warps"})),
    (96, 40, 0, 0, (16, {"regs"}), (16, None), (16, None)),
    (32, 8, 12288, 0, (12, {"smem"}), (17, {"smem"}), (7, {"smem"})),
    (384, 168, 0, 196608, (0, {"smem"}), (1, None), (0, {"smem"})),
    (128, 72, 0, 65536, (2, None), (3, {"smem"}), (1, {"smem"})),
    (1024, 64, 0, 0, (1, {"regs"}), (1, {"regs"}), (1, {"regs", "warps"})),
    (128, 166, 0, 56832, (2, {"smem"}), (3, {"regs"}), (1, {"smem"})),
]


@pytest.mark.parametrize("threads,regs,static,dyn,a100,h100,rtx", VECTORS)
def test_reference_vectors(threads, regs, static, dyn, a100, h100, rtx):
    for cc, (want, binding) in (("8.0", a100), ("9.0", h100), ("10.0", h100), ("8.9", rtx)):
        occ = occupancy(cc_limits(cc), threads, regs, static, dyn)
        assert occ.blocks_per_sm == want, (cc, occ)
        if binding is not None:
            assert set(occ.binding) == binding, (cc, occ.binding)


def test_allocation_examples():
    # cuda.md §2.3: 166 regs x 8 warps -> 43008 regs/block; 12 KB static -> 13312 B/block.
    lim = cc_limits("9.0")
    assert occupancy(lim, 256, 166).regs_per_block == 43008
    assert occupancy(lim, 32, 8, 12288).smem_per_block == 13312


def test_sub_partition_rounding_is_not_naive_division():
    occ = occupancy(cc_limits("8.0"), 96, 40)
    assert 65536 // (96 * 40) == 17 and occ.blocks_per_sm == 16


def test_target_limits_join_cc_table():
    a = arch_of(get_target("h100"))
    assert a.limits.smem_per_block_optin == 232448 and a.sms == 132 and a.sm == "sm_90"
    assert arch_of(get_target("rtx4090")).limits.max_threads_per_sm == 1536


def test_waves_tail_efficiency():
    assert waves(264, 1, 132) == (2, 1.0)
    w, eff = waves(133, 1, 132)
    assert w == 2 and eff == pytest.approx(133 / 264)
