// forge CUDA timing harness (cuda.md §6): loads a cubin with the runtime's library API
// (cudaLibraryLoadFromFile, no -lcuda needed), reads inputs from files, launches with CUDA events,
// flushes L2 between repetitions, writes outputs and prints ONE JSON line.
// Any failure prints {"ok":false,"stage":...,"error":...} and exits non-zero.
//
// Spec file (one directive per line):
//   cubin PATH | warmup N | iters N | trials N | flush BYTES (0 = max(flush_min, 2 x L2)) | flush_min BYTES
//   buffer NAME in BYTES PATH | buffer NAME out BYTES PATH | buffer NAME scratch BYTES
//   launch KERNEL GX GY GZ BX BY BZ SMEM ARG...   (ARG: buf:NAME | null | i32:V | f32:V)
// Usage: forge_harness SPEC      or      forge_harness --probe
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

static void fail(const char* stage, const std::string& err) {
  std::string e;
  for (char c : err) { if (c == '"' || c == '\\') e += '\\'; e += (c == '\n' ? ' ' : c); }
  printf("{\"ok\":false,\"stage\":\"%s\",\"error\":\"%s\"}\n", stage, e.c_str());
  fflush(stdout);
  exit(2);
}
#define CK(stage, call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) fail(stage, cudaGetErrorString(e_)); } while (0)

struct Buf { std::string name, kind, path; size_t bytes = 0; void* dev = nullptr; };
struct Launch { std::string kernel; dim3 grid, block; size_t smem = 0; std::vector<std::string> args;
                cudaKernel_t fn = nullptr; std::vector<long long> i64; std::vector<int> i32; std::vector<float> f32; };

int main(int argc, char** argv) {
  if (argc < 2) fail("usage", "forge_harness SPEC | --probe");
  int dev = 0;
  CK("set_device", cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK("device_props", cudaGetDeviceProperties(&prop, dev));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  if (std::string(argv[1]) == "--probe") {
    printf("{\"ok\":true,\"device\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"l2_bytes\":%d,\"smem_per_sm\":%zu,"
           "\"smem_optin\":%zu,\"clock_khz\":%d}\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           prop.l2CacheSize, prop.sharedMemPerMultiprocessor, prop.sharedMemPerBlockOptin, clock_khz);
    return 0;
  }
  std::ifstream in(argv[1]);
  if (!in) fail("spec", std::string("cannot read ") + argv[1]);
  std::string cubin; int warmup = 10, iters = 50, trials = 3; size_t flush = 0, flush_min = 0;
  std::vector<Buf> bufs; std::vector<Launch> launches; std::map<std::string, size_t> by_name;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line); std::string kw; ss >> kw;
    if (kw.empty() || kw[0] == '#') continue;
    if (kw == "cubin") ss >> cubin;
    else if (kw == "warmup") ss >> warmup;
    else if (kw == "iters") ss >> iters;
    else if (kw == "trials") ss >> trials;
    else if (kw == "flush") ss >> flush;
    else if (kw == "flush_min") ss >> flush_min;
    else if (kw == "buffer") { Buf b; ss >> b.name >> b.kind >> b.bytes; if (b.kind != "scratch") ss >> b.path;
                               by_name[b.name] = bufs.size(); bufs.push_back(b); }
    else if (kw == "launch") { Launch l; ss >> l.kernel >> l.grid.x >> l.grid.y >> l.grid.z >> l.block.x >> l.block.y
                               >> l.block.z >> l.smem; std::string a; while (ss >> a) l.args.push_back(a);
                               launches.push_back(l); }
    else fail("spec", "unknown directive " + kw);
  }
  cudaLibrary_t lib;
  CK("load_cubin", cudaLibraryLoadFromFile(&lib, cubin.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  std::string attrs_json = "[";
  int min_blocks_per_sm = 1 << 30; double occ_min = 1.0;
  for (auto& l : launches) {
    CK("get_kernel", cudaLibraryGetKernel(&l.fn, lib, l.kernel.c_str()));
    const void* f = (const void*)l.fn;
    if (l.smem > 48 * 1024) CK("smem_optin", cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)l.smem));
    cudaFuncAttributes fa; CK("func_attrs", cudaFuncGetAttributes(&fa, f));
    int blocks = 0;
    CK("occupancy", cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, l.block.x * l.block.y * l.block.z, l.smem));
    if (blocks == 0) fail("occupancy", "kernel " + l.kernel + " cannot be resident (0 blocks per SM)");
    int threads = l.block.x * l.block.y * l.block.z;
    double occ = (double)blocks * ((threads + 31) / 32) / (prop.maxThreadsPerMultiProcessor / 32);
    min_blocks_per_sm = std::min(min_blocks_per_sm, blocks); occ_min = std::min(occ_min, occ);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s{\"kernel\":\"%s\",\"regs\":%d,\"static_smem\":%zu,\"local_bytes\":%zu,\"max_threads\":%d,"
             "\"blocks_per_sm\":%d,\"occupancy\":%.4f,\"smem\":%zu}", attrs_json.size() > 1 ? "," : "", l.kernel.c_str(),
             fa.numRegs, fa.sharedSizeBytes, fa.localSizeBytes, fa.maxThreadsPerBlock, blocks, occ, l.smem);
    attrs_json += tmp;
  }
  attrs_json += "]";
  // buffers: inputs uploaded, outputs poisoned with NaN (0xFF bytes), scratch zeroed
  for (auto& b : bufs) {
    CK("malloc", cudaMalloc(&b.dev, std::max<size_t>(b.bytes, 16)));
    if (b.kind == "in") {
      std::vector<char> host(b.bytes);
      std::ifstream f(b.path, std::ios::binary);
      if (!f.read(host.data(), b.bytes)) fail("read_input", "cannot read " + std::to_string(b.bytes) + " bytes from " + b.path);
      CK("upload", cudaMemcpy(b.dev, host.data(), b.bytes, cudaMemcpyHostToDevice));
    } else {
      CK("poison", cudaMemset(b.dev, b.kind == "out" ? 0xFF : 0, b.bytes));
    }
  }
  for (auto& l : launches) {   // argument storage must outlive the launches
    l.i32.reserve(l.args.size()); l.f32.reserve(l.args.size());
  }
  std::vector<std::vector<void*>> argv_store(launches.size());
  std::vector<std::vector<void*>> ptr_store(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    auto& l = launches[i]; auto& ps = ptr_store[i]; ps.reserve(l.args.size());
    for (auto& a : l.args) {
      if (a == "null") { ps.push_back(nullptr); argv_store[i].push_back(&ps.back()); }
      else if (a.rfind("buf:", 0) == 0) {
        auto it = by_name.find(a.substr(4)); if (it == by_name.end()) fail("spec", "unknown buffer " + a);
        ps.push_back(bufs[it->second].dev); argv_store[i].push_back(&ps.back()); }
      else if (a.rfind("i32:", 0) == 0) { l.i32.push_back(atoi(a.c_str() + 4)); argv_store[i].push_back(&l.i32.back()); }
      else if (a.rfind("f32:", 0) == 0) { l.f32.push_back((float)atof(a.c_str() + 4)); argv_store[i].push_back(&l.f32.back()); }
      else fail("spec", "bad argument " + a);
    }
  }
  cudaStream_t st; CK("stream", cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto run_all = [&]() {
    for (size_t i = 0; i < launches.size(); ++i) {
      auto& l = launches[i];
      CK("launch", cudaLaunchKernel((const void*)l.fn, l.grid, l.block, argv_store[i].data(), l.smem, st));
    }
  };
  // 1. correctness run: outputs written to files
  run_all();
  CK("sync", cudaStreamSynchronize(st));
  CK("kernel", cudaGetLastError());
  for (auto& b : bufs) if (b.kind == "out") {
    std::vector<char> host(b.bytes);
    CK("download", cudaMemcpy(host.data(), b.dev, b.bytes, cudaMemcpyDeviceToHost));
    std::ofstream f(b.path, std::ios::binary); f.write(host.data(), b.bytes);
    if (!f) fail("write_output", "cannot write " + b.path);
  }
  // 2. timing: L2 flush (memset of max(flush_min, 2 x L2)) before every timed launch (cuda.md §5.2)
  if (flush == 0) flush = std::max<size_t>(flush_min, 2 * (size_t)prop.l2CacheSize);
  void* fl; CK("malloc_flush", cudaMalloc(&fl, flush));
  cudaEvent_t e0, e1; CK("event", cudaEventCreate(&e0)); CK("event", cudaEventCreate(&e1));
  for (int i = 0; i < warmup; ++i) { CK("flush", cudaMemsetAsync(fl, i & 0xFF, flush, st)); run_all(); }
  CK("warmup", cudaStreamSynchronize(st));
  std::vector<float> all; std::vector<double> trial_means;
  for (int t = 0; t < trials; ++t) {
    double sum = 0;
    for (int i = 0; i < iters; ++i) {
      CK("flush", cudaMemsetAsync(fl, (i + t) & 0xFF, flush, st));
      CK("event", cudaEventRecord(e0, st)); run_all(); CK("event", cudaEventRecord(e1, st));
      CK("timed", cudaEventSynchronize(e1));
      float ms = 0; CK("elapsed", cudaEventElapsedTime(&ms, e0, e1));
      all.push_back(ms); sum += ms;
    }
    trial_means.push_back(sum / std::max(1, iters));
  }
  CK("kernel", cudaGetLastError());
  std::vector<float> s = all; std::sort(s.begin(), s.end());
  auto q = [&](double p) { return s.empty() ? 0.0 : (double)s[std::min(s.size() - 1, (size_t)(p * (s.size() - 1) + 0.5))]; };
  double mean = 0; for (float v : all) mean += v; mean /= std::max<size_t>(1, all.size());
  printf("{\"ok\":true,\"device\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"clock_khz\":%d,\"l2_bytes\":%d,"
         "\"kernels\":%s,\"blocks_per_sm\":%d,\"occupancy\":%.4f,\"iters\":%d,\"trials\":%d,\"flush_bytes\":%zu,"
         "\"median_ms\":%.6f,\"p20_ms\":%.6f,\"p80_ms\":%.6f,\"min_ms\":%.6f,\"mean_ms\":%.6f,\"times_ms\":[",
         prop.name, prop.major, prop.minor, prop.multiProcessorCount, clock_khz, prop.l2CacheSize, attrs_json.c_str(),
         min_blocks_per_sm, occ_min, iters, trials, flush, q(0.5), q(0.2), q(0.8), s.empty() ? 0.0 : s[0], mean);
  for (size_t i = 0; i < all.size(); ++i) printf("%s%.6f", i ? "," : "", all[i]);
  printf("],\"trial_means_ms\":[");
  for (size_t i = 0; i < trial_means.size(); ++i) printf("%s%.6f", i ? "," : "", trial_means[i]);
  printf("]}\n");
  return 0;
}
