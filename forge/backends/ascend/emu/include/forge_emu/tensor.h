// forge Ascend C CPU emulator: GlobalTensor (GM) and LocalTensor (UB / L1 / L0*) — ascend.md §2.2-§2.4.
#pragma once
#include "hazard.h"

namespace AscendC {

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;
  __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) { addr_ = buffer; size_ = bufferSize; }
  __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer) { addr_ = buffer; size_ = 0; }
  __aicore__ inline __gm__ T* GetPhyAddr() const { return addr_; }
  __aicore__ inline __gm__ T* GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
  __aicore__ inline uint64_t GetSize() const { return size_; }
  __aicore__ inline void SetL2CacheHint(CacheMode) {}  // performance only (ascend.md §1.5)
  __aicore__ inline GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor g; g.addr_ = addr_ + offset; g.size_ = size_ > offset ? size_ - offset : 0; return g;
  }
  __aicore__ inline T GetValue(uint64_t offset, forge_emu::Loc loc = forge_emu::Loc::current()) const {
    forge_emu::check_gm(addr_ + offset, sizeof(T), "GlobalTensor::GetValue", loc);
    forge_emu::touch_gm(forge_emu::issue(forge_emu::P_S, "GlobalTensor::GetValue", loc), "GlobalTensor::GetValue", addr_ + offset, sizeof(T), false, loc);
    return addr_[offset];
  }
  __aicore__ inline void SetValue(uint64_t offset, T value, forge_emu::Loc loc = forge_emu::Loc::current()) {
    forge_emu::check_gm(addr_ + offset, sizeof(T), "GlobalTensor::SetValue", loc);
    forge_emu::touch_gm(forge_emu::issue(forge_emu::P_S, "GlobalTensor::SetValue", loc), "GlobalTensor::SetValue", addr_ + offset, sizeof(T), true, loc);
    addr_[offset] = value;
  }
  __aicore__ inline T& operator()(uint64_t offset) { return addr_[offset]; }

 private:
  __gm__ T* addr_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace AscendC

namespace forge_emu {
// Where a LocalTensor lives: the owning buffer's byte range inside one core memory.
struct LocalRef {
  int core = -1;            // Core::id
  int mem = -1;             // Mem
  AscendC::TPosition pos = AscendC::TPosition::VECCALC;
  uint32_t buf_start = 0, buf_end = 0;  // owning buffer, bytes
  uint32_t off = 0;         // this tensor's start, bytes
  void* owner = nullptr;    // queue that handed it out (nullptr for TBuf)
  int slot = -1;            // buffer index in that queue
  const uint8_t* slot_state = nullptr;  // that slot's QueState::SlotState (queue tensors only)
  const uint32_t* slot_gen = nullptr;   // that slot's FreeTensor count now ...
  uint32_t gen = 0;                     // ... and when this tensor was handed out
};
}  // namespace forge_emu

namespace AscendC {

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;
  LocalTensor() = default;
  forge_emu::LocalRef ref_;
  uint32_t count_ = 0;  // elements visible through this tensor

  __aicore__ inline T* raw() const {
    return reinterpret_cast<T*>(forge_emu::launch().cores[ref_.core]->memory(ref_.mem) + ref_.off);
  }
  __aicore__ inline LocalTensor operator[](uint32_t offset) const {
    LocalTensor t = *this;
    t.ref_.off += offset * (uint32_t)sizeof(T);
    t.count_ = count_ > offset ? count_ - offset : 0;
    return t;
  }
  __aicore__ inline T GetValue(uint32_t i, forge_emu::Loc loc = forge_emu::Loc::current()) const {
    forge_emu::Instr I = forge_emu::issue(forge_emu::P_S, "LocalTensor::GetValue", loc);
    check_range((uint64_t)i * sizeof(T), sizeof(T), "LocalTensor::GetValue", loc, &I, false);
    return raw()[i];
  }
  __aicore__ inline void SetValue(uint32_t i, T v, forge_emu::Loc loc = forge_emu::Loc::current()) const {
    forge_emu::Instr I = forge_emu::issue(forge_emu::P_S, "LocalTensor::SetValue", loc);
    check_range((uint64_t)i * sizeof(T), sizeof(T), "LocalTensor::SetValue", loc, &I, true);
    raw()[i] = v;
  }
  __aicore__ inline T& operator()(uint32_t i) const { return raw()[i]; }
  __aicore__ inline uint32_t GetSize() const { return count_; }
  __aicore__ inline void SetSize(uint32_t n) { count_ = n; }
  __aicore__ inline uint32_t GetLength() const { return count_ * (uint32_t)sizeof(T); }
  __aicore__ inline uint64_t GetPhyAddr() const { return ref_.off; }
  __aicore__ inline TPosition GetPosition() const { return ref_.pos; }
  template <typename U>
  __aicore__ inline LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> t; t.ref_ = ref_; t.count_ = (uint32_t)((uint64_t)count_ * sizeof(T) / sizeof(U)); return t;
  }

  // Checks that this tensor is usable and bytes [off, off+nbytes) lie inside its buffer; given the
  // instruction `I` making the access, also checks and records its order against other pipes
  // (hazard.h).
  void check_range(uint64_t byte_off, uint64_t nbytes, const char* what, const forge_emu::Loc& loc,
                   const forge_emu::Instr* I = nullptr, bool write = false) const {
    using namespace forge_emu;
    if (ref_.core < 0)
      Diag("bad_api").kv("op", what).msg("LocalTensor used before it was obtained from AllocTensor/DeQue/Get").at(loc).fail(EXIT_BAD_API);
    // A queue tensor is the program's only between AllocTensor (or DeQue) and EnQue (or
    // FreeTensor): after FreeTensor its buffer may hold the next tile, and between EnQue and DeQue
    // the pipe it was handed to may be reading or writing it (ascend.md §2.3)
    if (ref_.slot_gen && *ref_.slot_gen != ref_.gen)
      Diag("use_after_free").kv("op", what).kv("position", position_name(ref_.pos))
          .msg(std::string(what) + " uses a queue tensor after its FreeTensor").at(loc).fail(EXIT_BAD_API);
    if (ref_.slot_state && *ref_.slot_state == 2 /* QueState::ENQUEUED */)
      Diag("enqueued_access").kv("op", what).kv("position", position_name(ref_.pos))
          .msg(std::string(what) + " uses a tensor between its EnQue and DeQue, while another pipe may")
          .at(loc).fail(EXIT_BAD_API);
    uint64_t a = (uint64_t)ref_.off + byte_off;
    if (a < ref_.buf_start || a + nbytes > ref_.buf_end)
      Diag("local_out_of_bounds").kv("op", what).kv("memory", mem_name(ref_.mem)).kv("position", position_name(ref_.pos))
          .kv("offset", (long long)(a - ref_.buf_start)).kv("bytes", (long long)nbytes)
          .kv("buffer_bytes", (long long)(ref_.buf_end - ref_.buf_start))
          .msg(std::string(what) + " reaches outside the tensor's buffer").at(loc).fail(EXIT_LOCAL_OUT_OF_BOUNDS);
    if (I) touch(*I, what, ref_.mem, ref_.pos, ref_.buf_start, a, nbytes, write, loc);
  }
};

}  // namespace AscendC
