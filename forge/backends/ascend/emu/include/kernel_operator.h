// forge's CPU emulation of the Ascend C API subset its generators use (ascend.md §2).
// Drop-in for CANN's kernel_operator.h when compiled with g++ -std=c++20 by
// forge/backends/ascend/emu/runner.py; see forge/backends/ascend/emu/README.md.
#pragma once
#include "forge_emu/types.h"
#include "forge_emu/runtime.h"
#include "forge_emu/tensor.h"
#include "forge_emu/pipe.h"
#include "forge_emu/copy.h"
#include "forge_emu/vec.h"
#include "forge_emu/sync.h"
#include "forge_emu/cube.h"
