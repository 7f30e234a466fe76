// augment/dataset/dtype.h — element types of nnU-Net case arrays and conversion between them.
//
// nnU-Net writes data as float32 ("<f4") and segmentations as int16 ("<i2", v2.6+) or int8 ("|i1", old .npz
// format). The readers accept a few more little-endian numpy types so that hand-made datasets also open; every
// read converts to the caller's output type (the sampler asks for float32 data and int16 segmentations).
//
//   ASSIGN_OR_RETURN(DType t, DTypeFromNumpyDescr("<f4"));   // DType::kFloat32
//   ConvertElements(DType::kInt8, src, DType::kInt16, dst, n);
//
// Thread-safety: free functions, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace augmentd::dataset {

// Little-endian element types a case array may hold.
enum class DType { kInt8, kUInt8, kInt16, kUInt16, kInt32, kInt64, kFloat32, kFloat64 };

// Bytes per element.
size_t DTypeSize(DType t);

// numpy name ("float32", "int16", ...).
const char* DTypeName(DType t);

// Parses a numpy type name as DTypeName writes it. INVALID_ARGUMENT otherwise.
absl::StatusOr<DType> DTypeFromName(const std::string& name);

// Parses a numpy array-protocol type string ("<f4", "|i1", "<i2", "=f8"...). Big-endian (">") types and
// anything else not listed in DType give UNIMPLEMENTED naming the descr.
absl::StatusOr<DType> DTypeFromNumpyDescr(const std::string& descr);

// Parses the dtype string the b2nd metalayer stores (numpy descr, e.g. "<f4"); same rules as above.
inline absl::StatusOr<DType> DTypeFromB2ndDescr(const std::string& descr) { return DTypeFromNumpyDescr(descr); }

// Converts `n` elements from `src` (type `from`) into `dst` (type `to`) with C++ static_cast semantics
// (float→int truncates, like numpy's astype). `src` and `dst` must not overlap unless from == to.
void ConvertElements(DType from, const void* src, DType to, void* dst, size_t n);

// ConvertElements for one (from, to) pair, resolved once (box reads convert row by row): a memcpy of
// n * DTypeSize(from) bytes when from == to. `src` may be misaligned; `dst` must not overlap it.
using ConvertFn = void (*)(const void* src, void* dst, size_t n);
ConvertFn ElementConverter(DType from, DType to);

// Fills `n` elements of type `t` at `dst` with `value` (cast to `t`).
void FillElements(DType t, void* dst, size_t n, double value);

}  // namespace augmentd::dataset
