// forge Ascend C CPU emulator: the process entry (emu_main). The runner compiles one launcher TU:
//     #include "kernel_operator.h"
//     #include "<the kernel source>"
//     #include "forge_emu/entry.h"
//     FORGE_EMU_ENTRY(<kernel function>)
// and runs the binary with a spec file naming, per kernel parameter in order, either a GM buffer
// (file to load, size, file to write back) or a scalar value. Pointer parameters take GM buffers,
// arithmetic parameters take scalars (ascend.md §2.7: CANN 8.x parameters are pointers or primitives).
#pragma once
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>
#include "runtime.h"

namespace forge_emu {

struct ArgSpec {
  bool gm = false;
  std::string name, in_path, out_path, text;
  uint64_t bytes = 0;
  uint8_t* ptr = nullptr;
};

[[noreturn]] inline void spec_error(const std::string& m) {
  Diag("spec").msg(m).fail(EXIT_SPEC);
}

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

inline int parse_kernel_type(const std::string& s) {
  for (int t = 0; t < 8; ++t) if (s == kernel_type_name(t)) return t;
  spec_error("unknown kernel_type " + s);
}

inline std::vector<ArgSpec> read_spec(const char* path, int& kernel_type, int& block_dim) {
  std::ifstream f(path);
  if (!f) spec_error(std::string("cannot read spec ") + path);
  std::vector<ArgSpec> args;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string key;
    if (!(ss >> key) || key[0] == '#') continue;
    if (key == "kernel_type") { std::string v; ss >> v; kernel_type = parse_kernel_type(v); }
    else if (key == "block_dim") { ss >> block_dim; }
    else if (key == "gm") {  // gm <name> <bytes> <in_path|-> <out_path|->
      ArgSpec a; a.gm = true; ss >> a.name >> a.bytes >> a.in_path >> a.out_path; args.push_back(a);
    } else if (key == "scalar") {  // scalar <name> <value>
      ArgSpec a; ss >> a.name >> a.text; args.push_back(a);
    } else spec_error("unknown spec line: " + line);
  }
  return args;
}

template <class... P>
inline int emu_main(int argc, char** argv, void (*fn)(P...)) {
  if (argc < 2) { std::fprintf(stderr, "usage: %s SPEC\n", argv[0]); return EXIT_SPEC; }
  int kernel_type = AscendC::KERNEL_TYPE_AIV_ONLY, block_dim = 1;
  std::vector<ArgSpec> args = read_spec(argv[1], kernel_type, block_dim);
  if (args.size() != sizeof...(P))
    spec_error("the kernel takes " + std::to_string(sizeof...(P)) + " parameters, the spec gives " + std::to_string(args.size()));
  for (ArgSpec& a : args) {
    if (!a.gm) continue;
    uint64_t alloc = (a.bytes + 511) / 512 * 512 + 512;
    a.ptr = static_cast<uint8_t*>(std::aligned_alloc(512, alloc));  // GM 512 B aligned (ascend.md §1.3)
    std::memset(a.ptr, 0xFF, alloc);                                  // poison: NaN for floats
    if (a.in_path != "-") {
      std::ifstream in(a.in_path, std::ios::binary);
      if (!in) spec_error("cannot read " + a.in_path);
      in.read(reinterpret_cast<char*>(a.ptr), (std::streamsize)a.bytes);
      if ((uint64_t)in.gcount() != a.bytes) spec_error("short file " + a.in_path);
    }
    register_gm(a.ptr, a.bytes, a.name);
  }
  make_cores(kernel_type, block_dim);
  launch().entry = [&]() { call_entry(fn, args, std::index_sequence_for<P...>{}); };
  run_cores();
  for (ArgSpec& a : args) {
    if (!a.gm || a.out_path == "-") continue;
    std::ofstream out(a.out_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(a.ptr), (std::streamsize)a.bytes);
  }
  std::fprintf(stderr, "{\"emu_ok\": true, \"blocks\": %d}\n", (int)launch().cores.size());
  return EXIT_OK;
}

}  // namespace forge_emu

#define FORGE_EMU_ENTRY(fn) \
  int main(int argc, char** argv) { return ::forge_emu::emu_main(argc, argv, &fn); }
