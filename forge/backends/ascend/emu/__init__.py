"""CPU emulation of the Ascend C API subset forge's generators emit (see README.md)."""
from forge.backends.ascend.emu.runner import (  # noqa: F401
    CompileResult,
    EmuResult,
    compile_kernel,
    emu_defines,
    emu_limits,
    pack_tiling,
    run_kernel,
)
