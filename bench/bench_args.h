// bench/bench_args.h — strict numeric option values for the benchmarks' command lines.
//
// A benchmark that reads `--workers 3x` as 3, or `--iters abc` as 0, times something other than what its user asked
// for. These take a value only when the whole text is a decimal integer within the option's range; otherwise they
// print "FLAG: an integer in LO..HI, got VALUE" (or "a list of integers in LO..HI", for lists) to stderr and return
// false, and the caller exits with its usage error code.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace augmentd::bench {

// `v` as one decimal integer in [lo, hi] (leading '+' or '-' allowed, nothing after the digits).
inline bool ParseInteger(const char* flag, const char* v, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  errno = 0;
  const long long k = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno == ERANGE || k < lo || k > hi) {
    std::fprintf(stderr, "%s: an integer in %lld..%lld, got %s\n", flag, lo, hi, v);
    return false;
  }
  out = k;
  return true;
}

// The same into any integer type whose range holds [lo, hi].
template <typename T>
inline bool ParseInteger(const char* flag, const char* v, long long lo, long long hi, T& out) {
  long long k = 0;
  if (!ParseInteger(flag, v, lo, hi, k)) return false;
  out = static_cast<T>(k);
  return true;
}

// `v` as a comma-separated list of such integers, at least one ("128,128,128"; no empty items).
template <typename T>
inline bool ParseIntegerList(const char* flag, const char* v, long long lo, long long hi, std::vector<T>& out) {
  std::vector<T> items;
  const char* p = v;
  for (;;) {
    char* end = nullptr;
    errno = 0;
    const long long k = std::strtoll(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || errno == ERANGE || k < lo || k > hi) {
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
