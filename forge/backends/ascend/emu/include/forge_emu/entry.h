// forge Ascend C CPU emulator: the process entry. The runner compiles one launcher TU:
//     #include "kernel_operator.h"
//     #include "<the kernel source>"
//     #include "forge_emu/entry.h"
//     FORGE_EMU_ENTRY(<kernel function>)
// and runs the binary with a spec file naming, per kernel parameter in order, either a GM buffer
// (file to load, size, file to write back) or a scalar value. Pointer parameters take GM buffers,
// arithmetic parameters take scalars (ascend.md §2.7: CANN 8.x parameters are pointers or primitives).
// Only the call of the kernel depends on it; reading the spec, GM buffers and running the cores
// (run_launch) are in entry_run.cpp, compiled once beside the precompiled header (pch.py) and
// linked, or included by the launcher where there is none.
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "runtime.h"

namespace forge_emu {

struct ArgSpec {
  bool gm = false;
  std::string name, in_path, out_path, text;
  uint64_t bytes = 0;
  uint8_t* ptr = nullptr;
};

[[noreturn]] void spec_error(const std::string& m);

// Reads the spec (argv[1]), loads the GM buffers, runs every core with `call` as the entry and
// writes the outputs back; `params` is the kernel's parameter count, checked against the spec.
int run_launch(int argc, char** argv, size_t params, void (*call)(const std::vector<ArgSpec>&));

template <class P>
inline P convert_arg(const ArgSpec& a, size_t i) {
  if constexpr (std::is_pointer_v<P>) {
    if (!a.gm) spec_error("parameter " + std::to_string(i) + " is a pointer but the spec gives scalar '" + a.name + "'");
    return reinterpret_cast<P>(a.ptr);
  } else if constexpr (std::is_floating_point_v<P>) {
    if (a.gm) spec_error("parameter " + std::to_string(i) + " is a scalar but the spec gives GM buffer '" + a.name + "'");
    return (P)std::strtod(a.text.c_str(), nullptr);
  } else if constexpr (std::is_integral_v<P> || std::is_enum_v<P>) {
    if (a.gm) spec_error("parameter " + std::to_string(i) + " is a scalar but the spec gives GM buffer '" + a.name + "'");
    if constexpr (std::is_signed_v<P>) return (P)std::strtoll(a.text.c_str(), nullptr, 0);
    else return (P)std::strtoull(a.text.c_str(), nullptr, 0);
  } else {
    static_assert(std::is_pointer_v<P>, "kernel parameters must be pointers or primitive types (ascend.md §2.7)");
  }
}

template <class... P, size_t... I>
inline void call_entry(void (*fn)(P...), const std::vector<ArgSpec>& a, std::index_sequence<I...>) {
  fn(convert_arg<P>(a[I], I)...);
}

template <class... P>
inline void call_kernel(void (*fn)(P...), const std::vector<ArgSpec>& a) {
  call_entry(fn, a, std::index_sequence_for<P...>{});
}

template <class... P>
constexpr size_t kernel_arity(void (*)(P...)) { return sizeof...(P); }

}  // namespace forge_emu

#define FORGE_EMU_ENTRY(fn)                                                                   \
  static void forge_emu_call_kernel(const std::vector<::forge_emu::ArgSpec>& a) {               \
    ::forge_emu::call_kernel(&fn, a);                                                           \
  }                                                                                             \
  int main(int argc, char** argv) {                                                             \
    return ::forge_emu::run_launch(argc, argv, ::forge_emu::kernel_arity(&fn), &forge_emu_call_kernel); \
  }
