// forge Ascend C CPU emulator: the header the runner precompiles (forge/backends/ascend/emu/pch.py)
// and every launcher includes first, so a kernel build reads the Ascend C API and the process
// entry from a .gch instead of parsing them. A kernel's own #include "kernel_operator.h", and the
// launcher's #include "forge_emu/entry.h" after the kernel, then find them included already.
// No #pragma once here: g++ compiles this file as the main file of the precompiled header.
#include "kernel_operator.h"
#include "forge_emu/entry.h"
