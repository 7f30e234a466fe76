#include "augment/dataset/stream_store.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace augmentd::dataset {
namespace {

constexpr size_t kLine = 64;

// Bytes from `p` to the next line boundary (0 when aligned).
size_t HeadBytes(const void* p) {
  return (kLine - (reinterpret_cast<uintptr_t>(p) & (kLine - 1))) & (kLine - 1);
}

// Ordinary fill of `bytes` bytes at `dst` whose first byte is byte `phase` of the `item`-byte pattern.
void PlainFill(uint8_t* dst, size_t bytes, const uint8_t* pattern, size_t item, size_t phase) {
  for (size_t i = 0; i < bytes; ++i) dst[i] = pattern[(phase + i) % item];
}

}  // namespace

#if defined(__SSE2__)

void StreamCopy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = HeadBytes(d);
  if (bytes < head + kLine) {  // no whole line inside
    std::memcpy(d, s, bytes);
    return;
  }
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= kLine; bytes -= kLine, d += kLine, s += kLine) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
}

void StreamFill(void* dst, size_t count, const uint8_t* pattern, size_t item) {
  auto* d = static_cast<uint8_t*>(dst);
  size_t bytes = count * item;
  const size_t head = HeadBytes(d);
  if (bytes < head + kLine) {
    PlainFill(d, bytes, pattern, item, 0);
    return;
  }
  PlainFill(d, head, pattern, item, 0);
  d += head;
  bytes -= head;
  // Lines start at a multiple of 64 bytes after the head, so every line begins at pattern byte head % item.
  alignas(16) uint8_t line[16];
  PlainFill(line, sizeof(line), pattern, item, head % item);
  const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(line));
  for (; bytes >= kLine; bytes -= kLine, d += kLine) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), v);
  }
  PlainFill(d, bytes, pattern, item, head % item);
}

void StreamFence() { _mm_sfence(); }

#else  // no SSE2: ordinary stores

void StreamCopy(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

void StreamFill(void* dst, size_t count, const uint8_t* pattern, size_t item) {
  PlainFill(static_cast<uint8_t*>(dst), count * item, pattern, item, 0);
}

void StreamFence() {}

#endif

}  // namespace augmentd::dataset
