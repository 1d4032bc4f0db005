// forge Ascend C CPU emulator: DataCopy / DataCopyPad between GM and UB/L1 and within UB (ascend.md §2.4).
//
// Checked: 32-byte granularity of DataCopy lengths and 32-byte alignment of UB/L1 addresses (the
// hardware silently truncates a length that is not a multiple of 32 B, ascend.md §2.4.1 — the
// emulator reports it), GM addresses aligned to sizeof(T), field ranges, GM and buffer bounds.
#pragma once
#include "tensor.h"

namespace AscendC {

struct DataCopyParams {  // ascend.md §2.4.2: lengths and gaps in 32 B DataBlocks
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;
  uint16_t srcStride = 0;
  uint16_t dstStride = 0;
};
struct DataCopyExtParams {  // ascend.md §2.4.3: blockLen and the GM-side stride in bytes
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;
  uint32_t srcStride = 0;
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
};
template <typename T>
struct DataCopyPadExtParams {
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue = T(0);
};
struct DataCopyPadParams {
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  uint64_t paddingValue = 0;
};

namespace detail {
using forge_emu::Diag;
using forge_emu::Loc;

template <typename T>
inline void check_local_for_copy(const LocalTensor<T>& t, const char* op, const Loc& loc) {
  using namespace forge_emu;
  if (t.ref_.core < 0) Diag("bad_api").kv("op", op).msg("LocalTensor used before it was obtained from AllocTensor/DeQue/Get").at(loc).fail(EXIT_BAD_API);
  Core& c = cur();
  if (t.ref_.core != c.id) Diag("bad_api").kv("op", op).msg("LocalTensor of another block").at(loc).fail(EXIT_BAD_API);
  bool on_aiv = t.ref_.mem == MEM_UB;
  if (on_aiv != (c.type == AscendCoreType::AIV))
    Diag("bad_api").kv("op", op).kv("memory", mem_name(t.ref_.mem))
        .msg(std::string(mem_name(t.ref_.mem)) + " does not exist on " + c.type_name() + " (split mode, ascend.md §1.1)").at(loc).fail(EXIT_BAD_API);
  uint32_t a = mem_align(t.ref_.mem);
  if (t.ref_.mem == MEM_L0A || t.ref_.mem == MEM_L0B) a = 32;  // moves into L0 go through LoadData; DataCopy granularity 32 B
  if (t.ref_.off % a)
    Diag("misaligned").kv("op", op).kv("memory", mem_name(t.ref_.mem)).kv("address", (long long)t.ref_.off).kv("align", (long long)a)
        .msg(std::string(op) + ": " + mem_name(t.ref_.mem) + " address " + std::to_string(t.ref_.off) + " is not " + std::to_string(a) + "-byte aligned (ascend.md §1.3)")
        .at(loc).fail(EXIT_MISALIGNED);
}
// UB->UB copies run on the vector pipe (copy_ubuf_to_ubuf, PIPE_V in the CCE intrinsic docs); the
// pipe of an L1->L1 copy is not documented, so its order is not checked.
template <typename T>
inline int local_copy_pipe(const LocalTensor<T>& dst) { return dst.ref_.mem == forge_emu::MEM_UB ? forge_emu::P_V : forge_emu::P_NONE; }
template <typename T>
inline void check_gm_align(const T* p, const char* op, const Loc& loc) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T))
    Diag("misaligned").kv("op", op).kv("memory", "GM").kv("align", (long long)sizeof(T))
        .msg(std::string(op) + ": GM address not aligned to sizeof(T) (ascend.md §2.4.1)").at(loc).fail(forge_emu::EXIT_MISALIGNED);
}
inline void check_len32(uint64_t bytes, const char* op, const Loc& loc, long long count, int elem) {
  if (bytes % 32)
    Diag("misaligned").kv("op", op).kv("bytes", (long long)bytes).kv("count", count).kv("elem_bytes", elem)
        .msg(std::string(op) + " moves " + std::to_string(bytes) + " B, not a multiple of 32 B: the hardware truncates it to " +
             std::to_string(bytes / 32 * 32) + " B; use DataCopyPad (ascend.md §2.4.1)")
        .at(loc).fail(forge_emu::EXIT_MISALIGNED);
}
inline void check_params(const DataCopyParams& p, const char* op, const Loc& loc) {
  if (p.blockCount > 4095)
    Diag("bad_api").kv("op", op).kv("blockCount", (int)p.blockCount).msg("blockCount must be in [0, 4095] (ascend.md §2.4.2)").at(loc).fail(forge_emu::EXIT_BAD_API);
}
}  // namespace detail

// ---- GM -> UB / L1, contiguous ----------------------------------------------------------------
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_local_for_copy(dst, "DataCopy(GM->local)", loc);
  detail::check_gm_align(src.GetPhyAddr(), "DataCopy(GM->local)", loc);
  uint64_t bytes = (uint64_t)count * sizeof(T);
  detail::check_len32(bytes, "DataCopy(GM->local)", loc, count, sizeof(T));
  forge_emu::Instr I = forge_emu::issue(forge_emu::P_MTE2, "DataCopy(GM->local)", loc);
  dst.check_range(0, bytes, "DataCopy(GM->local)", loc, &I, true);
  forge_emu::check_gm(src.GetPhyAddr(), bytes, "DataCopy(GM->local)", loc);
  forge_emu::touch_gm(I, "DataCopy(GM->local)", src.GetPhyAddr(), bytes, false, loc);
  std::memcpy(dst.raw(), src.GetPhyAddr(), bytes);
}
// ---- UB -> GM, contiguous ---------------------------------------------------------------------
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_local_for_copy(src, "DataCopy(local->GM)", loc);
  detail::check_gm_align(dst.GetPhyAddr(), "DataCopy(local->GM)", loc);
  uint64_t bytes = (uint64_t)count * sizeof(T);
  detail::check_len32(bytes, "DataCopy(local->GM)", loc, count, sizeof(T));
  forge_emu::Instr I = forge_emu::issue(forge_emu::P_MTE3, "DataCopy(local->GM)", loc);
  src.check_range(0, bytes, "DataCopy(local->GM)", loc, &I, false);
  forge_emu::check_gm(dst.GetPhyAddr(), bytes, "DataCopy(local->GM)", loc);
  forge_emu::touch_gm(I, "DataCopy(local->GM)", dst.GetPhyAddr(), bytes, true, loc);
  std::memcpy(dst.GetPhyAddr(), src.raw(), bytes);
}
// ---- local -> local (UB->UB on the AIV, L1->L1 on the AIC) ------------------------------------
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_local_for_copy(dst, "DataCopy(local->local)", loc);
  detail::check_local_for_copy(src, "DataCopy(local->local)", loc);
  uint64_t bytes = (uint64_t)count * sizeof(T);
  detail::check_len32(bytes, "DataCopy(local->local)", loc, count, sizeof(T));
  forge_emu::Instr I = forge_emu::issue(detail::local_copy_pipe(dst), "DataCopy(local->local)", loc);
  src.check_range(0, bytes, "DataCopy(local->local)", loc, &I, false);
  dst.check_range(0, bytes, "DataCopy(local->local)", loc, &I, true);
  std::memmove(dst.raw(), src.raw(), bytes);
}

// ---- strided forms: DataCopyParams, all in 32 B blocks (ascend.md §2.4.2) ----------------------
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  const char* op = "DataCopy(GM->local, DataCopyParams)";
  detail::check_params(p, op, loc);
  if (p.blockCount == 0 || p.blockLen == 0) return;
  detail::check_local_for_copy(dst, op, loc);
  detail::check_gm_align(src.GetPhyAddr(), op, loc);
  const uint8_t* g = reinterpret_cast<const uint8_t*>(src.GetPhyAddr());
  uint64_t blk = (uint64_t)p.blockLen * 32;
  forge_emu::Instr I = forge_emu::issue(forge_emu::P_MTE2, op, loc);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    uint64_t so = b * (blk + (uint64_t)p.srcStride * 32), d = b * (blk + (uint64_t)p.dstStride * 32);
    dst.check_range(d, blk, op, loc, &I, true);
    forge_emu::check_gm(g + so, blk, op, loc);
    forge_emu::touch_gm(I, op, g + so, blk, false, loc);
    std::memcpy(reinterpret_cast<uint8_t*>(dst.raw()) + d, g + so, blk);
  }
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  const char* op = "DataCopy(local->GM, DataCopyParams)";
  detail::check_params(p, op, loc);
  if (p.blockCount == 0 || p.blockLen == 0) return;
  detail::check_local_for_copy(src, op, loc);
  detail::check_gm_align(dst.GetPhyAddr(), op, loc);
  uint8_t* g = reinterpret_cast<uint8_t*>(dst.GetPhyAddr());
  uint64_t blk = (uint64_t)p.blockLen * 32;
  forge_emu::Instr I = forge_emu::issue(forge_emu::P_MTE3, op, loc);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    uint64_t so = b * (blk + (uint64_t)p.srcStride * 32), d = b * (blk + (uint64_t)p.dstStride * 32);
    src.check_range(so, blk, op, loc, &I, false);
    forge_emu::check_gm(g + d, blk, op, loc);
    forge_emu::touch_gm(I, op, g + d, blk, true, loc);
    std::memcpy(g + d, reinterpret_cast<const uint8_t*>(src.raw()) + so, blk);
  }
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  const char* op = "DataCopy(local->local, DataCopyParams)";
  detail::check_params(p, op, loc);
  if (p.blockCount == 0 || p.blockLen == 0) return;
  detail::check_local_for_copy(dst, op, loc);
  detail::check_local_for_copy(src, op, loc);
  uint64_t blk = (uint64_t)p.blockLen * 32;
  forge_emu::Instr I = forge_emu::issue(detail::local_copy_pipe(dst), op, loc);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    uint64_t so = b * (blk + (uint64_t)p.srcStride * 32), d = b * (blk + (uint64_t)p.dstStride * 32);
    src.check_range(so, blk, op, loc, &I, false);
    dst.check_range(d, blk, op, loc, &I, true);
    std::memmove(reinterpret_cast<uint8_t*>(dst.raw()) + d, reinterpret_cast<const uint8_t*>(src.raw()) + so, blk);
  }
}

// ---- DataCopyPad (ascend.md §2.4.3): byte lengths; each UB block padded to 32 B ----------------
namespace detail {
template <typename T>
inline void pad_gm_to_local(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount, uint32_t blockLen,
                            uint64_t srcStrideBytes, uint64_t dstStrideBlocks, bool isPad, uint32_t left, uint32_t right,
                            T padVal, const char* op, const Loc& loc) {
  using namespace forge_emu;
  if (blockCount > 4095) Diag("bad_api").kv("op", op).kv("blockCount", (long long)blockCount).msg("blockCount must be in [0, 4095] (ascend.md §2.4.3)").at(loc).fail(EXIT_BAD_API);
  if (blockLen > 2097151) Diag("bad_api").kv("op", op).kv("blockLen", (long long)blockLen).msg("blockLen must be in [0, 2097151] bytes (ascend.md §2.4.3)").at(loc).fail(EXIT_BAD_API);
  if (blockLen % sizeof(T))
    Diag("misaligned").kv("op", op).kv("blockLen", (long long)blockLen).kv("elem_bytes", (int)sizeof(T))
        .msg("DataCopyPad blockLen (bytes) must be a multiple of sizeof(T) (ascend.md §2.4.3)").at(loc).fail(EXIT_MISALIGNED);
  if (left * sizeof(T) > 32 || right * sizeof(T) > 32)
    Diag("bad_api").kv("op", op).kv("leftPadding", (long long)left).kv("rightPadding", (long long)right)
        .msg("left/right padding are at most 32 B each (ascend.md §2.4.3)").at(loc).fail(EXIT_BAD_API);
  if (blockCount == 0 || blockLen == 0) return;
  check_local_for_copy(dst, op, loc);
  const uint8_t* g = reinterpret_cast<const uint8_t*>(src.GetPhyAddr());
  uint64_t row = ((uint64_t)left * sizeof(T) + blockLen + (uint64_t)right * sizeof(T) + 31) / 32 * 32;
  uint8_t* u = reinterpret_cast<uint8_t*>(dst.raw());
  Instr I = issue(P_MTE2, op, loc);
  uint64_t written = (uint64_t)(isPad ? left + right : 0) * sizeof(T) + blockLen;  // the rest of the row is left as it was
  for (uint32_t b = 0; b < blockCount; ++b) {
    uint64_t so = b * ((uint64_t)blockLen + srcStrideBytes), d = b * (row + dstStrideBlocks * 32);
    dst.check_range(d, row, op, loc);
    dst.check_range(d + (isPad ? 0 : left * sizeof(T)), written, op, loc, &I, true);
    check_gm(g + so, blockLen, op, loc);
    touch_gm(I, op, g + so, blockLen, false, loc);
    T* rowp = reinterpret_cast<T*>(u + d);
    if (isPad) for (uint32_t i = 0; i < left; ++i) rowp[i] = padVal;
    std::memcpy(u + d + left * sizeof(T), g + so, blockLen);
    if (isPad) {
      uint32_t n = blockLen / sizeof(T);
      for (uint32_t i = 0; i < right; ++i) rowp[left + n + i] = padVal;
    }
  }
}
template <typename T>
inline void pad_local_to_gm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t blockCount, uint32_t blockLen,
                            uint64_t srcStrideBlocks, uint64_t dstStrideBytes, const char* op, const Loc& loc) {
  using namespace forge_emu;
  if (blockCount > 4095) Diag("bad_api").kv("op", op).kv("blockCount", (long long)blockCount).msg("blockCount must be in [0, 4095] (ascend.md §2.4.3)").at(loc).fail(EXIT_BAD_API);
  if (blockLen % sizeof(T))
    Diag("misaligned").kv("op", op).kv("blockLen", (long long)blockLen).kv("elem_bytes", (int)sizeof(T))
        .msg("DataCopyPad blockLen (bytes) must be a multiple of sizeof(T) (ascend.md §2.4.3)").at(loc).fail(EXIT_MISALIGNED);
  if (blockCount == 0 || blockLen == 0) return;
  check_local_for_copy(src, op, loc);
  uint8_t* g = reinterpret_cast<uint8_t*>(dst.GetPhyAddr());
  uint64_t row = ((uint64_t)blockLen + 31) / 32 * 32;
  const uint8_t* u = reinterpret_cast<const uint8_t*>(src.raw());
  Instr I = issue(P_MTE3, op, loc);
  for (uint32_t b = 0; b < blockCount; ++b) {
    uint64_t so = b * (row + srcStrideBlocks * 32), d = b * ((uint64_t)blockLen + dstStrideBytes);
    src.check_range(so, blockLen, op, loc, &I, false);
    check_gm(g + d, blockLen, op, loc);
    touch_gm(I, op, g + d, blockLen, true, loc);
    std::memcpy(g + d, u + so, blockLen);
  }
}
}  // namespace detail

template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                                   const DataCopyPadExtParams<T>& pad, forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::pad_gm_to_local(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                          pad.rightPadding, pad.paddingValue, "DataCopyPad(GM->local)", loc);
}
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                                   const DataCopyPadParams& pad, forge_emu::Loc loc = forge_emu::Loc::current()) {
  T v; std::memcpy(&v, &pad.paddingValue, sizeof(T));
  detail::pad_gm_to_local(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                          pad.rightPadding, v, "DataCopyPad(GM->local)", loc);
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                                   forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::pad_local_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, "DataCopyPad(local->GM)", loc);
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                                   forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::pad_local_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, "DataCopyPad(local->GM)", loc);
}

}  // namespace AscendC
