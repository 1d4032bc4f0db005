// forge Ascend C CPU emulator: the header the runner precompiles (forge/backends/ascend/emu/pch.py)
// and every launcher includes first, so a kernel build reads the Ascend C API from a .gch instead
// of parsing it. A kernel's own #include "kernel_operator.h" then finds it included already.
// No #pragma once here: g++ compiles this file as the main file of the precompiled header.
#include "kernel_operator.h"
