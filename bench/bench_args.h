// bench/bench_args.h — strict numeric option values for the benchmarks' command lines.
//
// A benchmark that reads `--workers 3x` as 3, or `--iters abc` as 0, times something other than what its user asked
// for. These take a value only when the whole text is a decimal integer within the option's range; otherwise they
// print "FLAG: an integer in LO..HI, got VALUE" (or "a list of integers in LO..HI", for lists) to stderr and return
// false, and the caller exits with its usage error code.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

namespace augmentd::bench {

// One decimal integer at p: a sign or a digit first (strtoll alone would skip white space), the number in `k`, the
// first character after it in `end`; false where p holds none.
inline bool ReadInteger(const char* p, long long& k, const char*& end) {
  if (!std::isdigit(static_cast<unsigned char>(*p)) && *p != '+' && *p != '-') return false;
  char* e = nullptr;
  errno = 0;
  k = std::strtoll(p, &e, 10);
  end = e;
  return e != p && errno != ERANGE;
}

// `v` as one decimal integer in [lo, hi] (leading '+' or '-' allowed, nothing before or after it).
inline bool ParseInteger(const char* flag, const char* v, long long lo, long long hi, long long& out) {
  long long k = 0;
  const char* end = nullptr;
  if (!ReadInteger(v, k, end) || *end != '\0' || k < lo || k > hi) {
    std::fprintf(stderr, "%s: an integer in %lld..%lld, got %s\n", flag, lo, hi, v);
    return false;
  }
  out = k;
  return true;
}

// Whether [lo, hi] lies within T's range; prints why not (a caller's bug: the value would be truncated).
template <typename T>
inline bool RangeFits(const char* flag, long long lo, long long hi) {
  using L = std::numeric_limits<T>;
  const bool fits =
      (!L::is_signed || lo >= static_cast<long long>(L::min())) &&
      (L::is_signed ? hi <= static_cast<long long>(L::max())
                    : lo >= 0 && static_cast<unsigned long long>(hi) <= static_cast<unsigned long long>(L::max()));
  if (!fits) std::fprintf(stderr, "%s: the range %lld..%lld does not fit the option's type\n", flag, lo, hi);
  return fits;
}

// The same into any integer type whose range holds [lo, hi] (checked: false, with a message, where it does not).
template <typename T>
inline bool ParseInteger(const char* flag, const char* v, long long lo, long long hi, T& out) {
  long long k = 0;
  if (!RangeFits<T>(flag, lo, hi) || !ParseInteger(flag, v, lo, hi, k)) return false;
  out = static_cast<T>(k);
  return true;
}

// `v` as a comma-separated list of such integers, at least one ("128,128,128"; no empty items).
template <typename T>
inline bool ParseIntegerList(const char* flag, const char* v, long long lo, long long hi, std::vector<T>& out) {
  if (!RangeFits<T>(flag, lo, hi)) return false;
  std::vector<T> items;
  const char* p = v;
  for (;;) {
    long long k = 0;
    const char* end = nullptr;
    if (!ReadInteger(p, k, end) || (*end != ',' && *end != '\0') || k < lo || k > hi) {
      std::fprintf(stderr, "%s: a list of integers in %lld..%lld separated by commas, got %s\n", flag, lo, hi, v);
      return false;
    }
    items.push_back(static_cast<T>(k));
    if (*end == '\0') break;
    p = end + 1;
  }
  out = std::move(items);
  return true;
}

}  // namespace augmentd::bench
