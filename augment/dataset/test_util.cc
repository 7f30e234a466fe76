#include "augment/dataset/test_util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/b2nd_writer.h"
#include "augment/dataset/npy_format.h"
#include "b2nd.h"
#include "blosc2.h"
#include "gtest/gtest.h"

namespace augmentd::dataset::testing {

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(base ? base : "/tmp", "/augment_dataset_test.XXXXXX");
  char* p = ::mkdtemp(tmpl.data());
  EXPECT_NE(p, nullptr);
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string NpyBytes(DType dtype, const Shape& shape, const std::string& elements, bool fortran) {
  return MakeNpyHeader(dtype, shape, fortran) + elements;
}

namespace {
void Put16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v & 0xff));
  s->push_back(static_cast<char>((v >> 8) & 0xff));
}
void Put32(std::string* s, uint32_t v) {
  Put16(s, v & 0xffff);
  Put16(s, v >> 16);
}
std::string RawDeflate(const std::string& in) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}
}  // namespace

std::string ZipBytes(const std::vector<std::pair<std::string, std::string>>& members, bool deflate) {
  std::string out, central;
  for (const auto& member : members) {
    const std::string& name = member.first;  // not a structured binding: the lambda below captures it (C++17 clang)
    const std::string& content = member.second;
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(content.data()), static_cast<uInt>(content.size())));
    const std::string payload = deflate ? RawDeflate(content) : content;
    const uint32_t offset = static_cast<uint32_t>(out.size());
    auto header = [&](std::string* s, bool local) {
      Put32(s, local ? 0x04034b50 : 0x02014b50);
      if (!local) Put16(s, 20);  // version made by
      Put16(s, 20);              // version needed
      Put16(s, 0);               // flags
      Put16(s, deflate ? 8 : 0);
      Put16(s, 0);  // time
      Put16(s, 0);  // date
      Put32(s, crc);
      Put32(s, static_cast<uint32_t>(payload.size()));
      Put32(s, static_cast<uint32_t>(content.size()));
      Put16(s, static_cast<uint32_t>(name.size()));
      Put16(s, 0);  // extra
      if (!local) {
        Put16(s, 0);  // comment
        Put16(s, 0);  // disk
        Put16(s, 0);  // internal attrs
        Put32(s, 0);  // external attrs
        Put32(s, offset);
      }
      s->append(name);
    };
    header(&out, true);
    out.append(payload);
    header(&central, false);
  }
  const uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out.append(central);
  Put32(&out, 0x06054b50);
  Put16(&out, 0);
  Put16(&out, 0);
  Put16(&out, static_cast<uint32_t>(members.size()));
  Put16(&out, static_cast<uint32_t>(members.size()));
  Put32(&out, static_cast<uint32_t>(central.size()));
  Put32(&out, cd_offset);
  Put16(&out, 0);
  return out;
}

void WriteB2nd(const std::string& path, DType dtype, const Shape& shape, const std::string& elements,
               const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks, B2ndCodec codec, bool shuffle) {
  B2ndWriteOptions w;
  w.chunks = chunks;
  w.blocks = blocks;
  w.codec = codec == B2ndCodec::kLz4hc ? B2ndCodecKind::kLz4hc : B2ndCodecKind::kZstd;
  w.shuffle = shuffle;
  const absl::Status st = WriteB2ndFile(path, dtype, shape, elements.data(), elements.size(), w);
  ASSERT_TRUE(st.ok()) << st;
}

bool IsSpecialZeroChunk(const std::string& path, int64_t nchunk) {
  EnsureBlosc2Initialized();
  b2nd_array_t* raw = nullptr;
  if (b2nd_open(path.c_str(), &raw) < 0 || raw == nullptr) return false;
  uint8_t* chunk = nullptr;
  bool needs_free = false;
  const int size = blosc2_schunk_get_lazychunk(raw->sc, nchunk, &chunk, &needs_free);
  const bool zero = size >= BLOSC_EXTENDED_HEADER_LENGTH && chunk != nullptr &&
                    ((chunk[BLOSC2_CHUNK_BLOSC2_FLAGS] >> 4) & BLOSC2_SPECIAL_MASK) == BLOSC2_SPECIAL_ZERO;
  if (needs_free) free(chunk);
  b2nd_free(raw);
  return zero;
}

std::vector<float> Iota(int64_t n, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) + offset;
  return v;
}

std::vector<int16_t> TinySeg(const Shape& s) {
  std::vector<int16_t> seg(static_cast<size_t>(s[0] * s[1] * s[2]), 0);
  auto at = [&](int64_t x, int64_t y, int64_t z) -> int16_t& {
    return seg[static_cast<size_t>((x * s[1] + y) * s[2] + z)];
  };
  for (int64_t y = 0; y < s[1]; ++y)
    for (int64_t z = 0; z < s[2]; ++z) at(0, y, z) = -1;
  for (int64_t x = 1; x < 3; ++x)
    for (int64_t y = 1; y < 3; ++y)
      for (int64_t z = 1; z < 3; ++z) at(x, y, z) = 1;
  at(s[0] - 1, s[1] - 1, s[2] - 1) = 2;
  return seg;
}

std::string MakeTinyDataset(const std::string& root, const std::vector<TinyCase>& cases, bool b2nd,
                            const std::vector<int64_t>& patch_size, int64_t batch_size,
                            const std::string& labels_json) {
  const std::string dir = root + "/Dataset001_Tiny";
  const std::string data_dir = dir + "/nnUNetPlans_3d_fullres";
  std::filesystem::create_directories(data_dir);
  std::string ps;
  for (size_t i = 0; i < patch_size.size(); ++i) absl::StrAppend(&ps, i ? ", " : "", patch_size[i]);
  WriteFile(dir + "/nnUNetPlans.json",
            absl::StrCat(R"({"plans_name": "nnUNetPlans", "transpose_forward": [0, 1, 2], "configurations": {
  "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "batch_size": )",
                         batch_size, R"(, "patch_size": [)", ps, R"(],
     "spacing": [1.0, 1.0, 1.0], "normalization_schemes": ["ZScoreNormalization"], "use_mask_for_norm": [false],
     "architecture": {"arch_kwargs": {"strides": [[1, 1, 1], [2, 2, 2], [2, 2, 2]]}}},
  "3d_bigbatch": {"inherits_from": "3d_fullres", "batch_size": 7}}})"));
  WriteFile(dir + "/dataset.json",
            absl::StrCat(R"({"channel_names": {"0": "CT"}, "labels": )", labels_json, R"(, "numTraining": )",
                         cases.size(), R"(, "file_ending": ".nii.gz"})"));
  std::string train, val;
  for (size_t i = 0; i < cases.size(); ++i) {
    absl::StrAppend(i % 2 ? &val : &train, (i % 2 ? val : train).empty() ? "" : ", ", "\"", cases[i].id, "\"");
  }
  WriteFile(dir + "/splits_final.json", absl::StrCat(R"([{"train": [)", train, R"(], "val": [)", val, "]}]"));
  for (const TinyCase& c : cases) {
    const Shape shape{1, c.spatial[0], c.spatial[1], c.spatial[2]};
    const std::string data = Bytes(Iota(NumElements(shape)));
    const std::string seg = Bytes(TinySeg(c.spatial));
    if (b2nd) {
      WriteB2nd(data_dir + "/" + c.id + ".b2nd", DType::kFloat32, shape, data, {1, 4, 4, 4}, {1, 2, 2, 2});
      WriteB2nd(data_dir + "/" + c.id + "_seg.b2nd", DType::kInt16, shape, seg, {1, 4, 4, 4}, {1, 2, 2, 2},
                B2ndCodec::kZstd, false);
    } else {
      WriteFile(data_dir + "/" + c.id + ".npz", ZipBytes({{"data.npy", NpyBytes(DType::kFloat32, shape, data)},
                                                          {"seg.npy", NpyBytes(DType::kInt16, shape, seg)}},
                                                         /*deflate=*/true));
    }
    WriteFile(data_dir + "/" + c.id + ".pkl", "not read");
  }
  return dir;
}

// Reference crop_and_pad of the iota array of `shape` (value = linear index) for a box over the trailing axes.
std::vector<float> ExpectedIotaBox(const Shape& shape, const Box& box, float pad) {
  const size_t lead = shape.size() - box.rank();
  const Shape out_shape = BoxShape(shape, box);
  std::vector<float> out(static_cast<size_t>(NumElements(out_shape)));
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), linear = 0;
    bool inside = true;
    for (size_t a = out_shape.size(); a-- > 0;) {
      idx[a] = rem % out_shape[a];
      rem /= out_shape[a];
    }
    for (size_t a = 0; a < shape.size(); ++a) {
      const int64_t coord = a < lead ? idx[a] : idx[a] + box.lb[a - lead];
      if (coord < 0 || coord >= shape[a]) inside = false;
      linear = linear * shape[a] + coord;
    }
    out[i] = inside ? static_cast<float>(linear) : pad;
  }
  return out;
}

}  // namespace augmentd::dataset::testing
