// forge Ascend C CPU emulator: the part of the process entry that is the same for every kernel
// (entry.h declares it): read the spec, load the GM buffers, run the cores, write the outputs.
// The runner compiles it once per compiler, flags and headers beside the precompiled header
// (forge/backends/ascend/emu/pch.py) and links it into every kernel's binary; without one the
// launcher #includes this file after the kernel, as one translation unit.
#include "kernel_operator.h"
#include "entry.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace forge_emu {

[[noreturn]] void spec_error(const std::string& m) {
  Diag("spec").msg(m).fail(EXIT_SPEC);
}

static int parse_kernel_type(const std::string& s) {
  for (int t = 0; t < 8; ++t) if (s == kernel_type_name(t)) return t;
  spec_error("unknown kernel_type " + s);
}

static std::vector<ArgSpec> read_spec(const char* path, int& kernel_type, int& block_dim) {
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

int run_launch(int argc, char** argv, size_t params, void (*call)(const std::vector<ArgSpec>&)) {
  if (argc < 2) { std::fprintf(stderr, "usage: %s SPEC\n", argv[0]); return EXIT_SPEC; }
  int kernel_type = AscendC::KERNEL_TYPE_AIV_ONLY, block_dim = 1;
  std::vector<ArgSpec> args = read_spec(argv[1], kernel_type, block_dim);
  if (args.size() != params)
    spec_error("the kernel takes " + std::to_string(params) + " parameters, the spec gives " + std::to_string(args.size()));
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
  launch().entry = [&]() { call(args); };
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
