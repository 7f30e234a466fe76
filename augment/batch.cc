// The pipeline layer both engines draw through (batch.h): per-entry parameter drawing and injection, the device name,
// the records' JSON.
#include "augment/batch.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace ju = json_util;

absl::Status WithSampleContext(const absl::Status& s, uint64_t sample, size_t t, std::string_view name) {
  if (s.ok()) return s;
  return absl::Status(s.code(),
                      absl::StrCat("sample ", sample, ", transform ", t, " (", std::string(name), "): ", s.message()));
}

absl::Status DrawEntry(const TransformSpec& ts, size_t t, uint64_t seed, uint64_t sample_index,
                       const std::vector<nlohmann::json>* injected, const SampleLayout& layout, AppliedTransform& at,
                       uint64_t batch_first_index) {
  const Transform& tr = *ts.transform;
  at.kind = ts.kind;
  // TransformSpec::same_on_batch (its contract in pipeline.h): `rng` draws the decision — the batch's first sample's
  // stream in a batch mode — and, except in decision mode, the parameters and region coins after it. Decision mode
  // draws the parameters from the sample's own stream past its draw 0 (= the per-sample mode's parameters).
  using BatchMode = TransformSpec::BatchMode;
  const uint32_t ti = static_cast<uint32_t>(t);
  const bool batch = ts.same_on_batch != BatchMode::kPerSample && batch_first_index != kNoBatchIndex;
  const bool decision_only = batch && ts.same_on_batch == BatchMode::kPerBatchDecision;
  const uint64_t stream_index = batch ? batch_first_index : sample_index;
  RandomStream rng(seed, stream_index, ti);
  RandomStream own(seed, sample_index, ti);
  if (decision_only) (void)own.Uniform();  // the per-sample decision's draw, not used here
  RandomStream& prm = decision_only ? own : rng;
  // The region coins (region_mode.h): after the parameters on `prm`, or on their own substream.
  const bool coin_substream = batch && (decision_only || ts.region_mode.per_sample_coins);
  RandomStream coin_sub(seed, ts.region_mode.per_sample_coins ? sample_index : stream_index, ti, kRegionCoinSubstream);
  // A channel selection: the entry draws as for a sample holding only the selected channels (the layout is copied only
  // then, not for every entry of every sample).
  SampleLayout selected;
  const SampleLayout& entry_layout = ts.channels.empty() ? layout : selected;
  if (!ts.channels.empty()) {
    selected = layout;
    for (int64_t c : ts.channels)
      if (c >= layout.channels)
        return WithSampleContext(ju::Invalid("transform.channels", absl::StrCat("channel ", c, " >= the sample's ",
                                                                                layout.channels, " channels")),
                                 sample_index, t, tr.name());
    selected.channels = static_cast<int64_t>(ts.channels.size());
  }
  const nlohmann::json* inj =
      (injected != nullptr && t < injected->size() && !(*injected)[t].is_null()) ? &(*injected)[t] : nullptr;
  if (inj != nullptr) {
    if (!inj->is_object())
      return WithSampleContext(ju::Invalid("params", "expected {\"applied\", \"params\"} or null"), sample_index, t,
                         tr.name());
    auto applied = ju::GetBool(*inj, "applied", true, "applied");
    if (!applied.ok()) return WithSampleContext(applied.status(), sample_index, t, tr.name());
    at.applied = *applied;
    if (!at.applied && ChangesOutputLayout(ts.kind)) {
      // PipelineSpec::CheckLayoutStable: skipping it would change this sample's output layout.
      return WithSampleContext(ju::Invalid("applied", "must be true: the entry changes the output layout"),
                               sample_index, t, tr.name());
    }
    if (at.applied) {
      static const nlohmann::json kNull;
      const nlohmann::json& pj = inj->contains("params") ? (*inj)["params"] : kNull;
      auto p = tr.ParseParams(pj, entry_layout);
      if (!p.ok()) return WithSampleContext(p.status(), sample_index, t, tr.name());
      DrawContext ctx{prm, seed, sample_index, ti};
      tr.CompleteInjected(**p, ctx);
      at.params = std::move(*p);
      if (ts.region_mode.enabled() && layout.seg_channels > 0 && inj->contains("region")) {
        auto r = RegionDrawFromJson((*inj)["region"], layout.seg_channels);
        if (!r.ok()) return WithSampleContext(r.status(), sample_index, t, tr.name());
        at.region = *r;
      }
    }
  } else {
    // bgv2 OneOfTransform: only the group member chosen for this sample may fire (TransformSpec::SelectedFor).
    at.applied = rng.Uniform() < ts.apply_probability && ts.SelectedFor(seed, stream_index);
    if (at.applied) {
      DrawContext ctx{prm, seed, sample_index, ti};
      auto p = tr.Draw(ctx, entry_layout);
      if (!p.ok()) return WithSampleContext(p.status(), sample_index, t, tr.name());
      at.params = std::move(*p);
      if (ts.region_mode.enabled() && layout.seg_channels > 0) {  // AugLab draws its coins only with a mask
        RandomStream mix(seed, sample_index, ti, kRegionMixSubstream);
        at.region = DrawRegion(ts.region_mode, layout.seg_channels, coin_substream ? coin_sub : prm, mix);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyEntry(const TransformSpec& ts, const TransformParams& params, SampleData& sample) {
  const Transform& tr = *ts.transform;
  if (ts.channels.empty()) return tr.Apply(params, sample);
  const int64_t n = sample.voxels();
  SampleData view;
  view.channels = static_cast<int64_t>(ts.channels.size());
  view.shape = sample.shape;
  view.image.resize(static_cast<size_t>(view.channels * n));
  for (size_t k = 0; k < ts.channels.size(); ++k) {
    const int64_t c = ts.channels[k];
    if (c < 0 || c >= sample.channels)
      return ju::Invalid("transform.channels", absl::StrCat("channel ", c, " >= the sample's ", sample.channels,
                                                            " channels"));
    std::copy_n(sample.image.begin() + c * n, n, view.image.begin() + static_cast<int64_t>(k) * n);
  }
  view.seg_channels = sample.seg_channels;
  view.seg.swap(sample.seg);
  view.seg_is_bool = sample.seg_is_bool;
  absl::Status st = tr.Apply(params, view);
  sample.seg.swap(view.seg);
  RETURN_IF_ERROR(st);
  if (view.channels != static_cast<int64_t>(ts.channels.size()) || view.voxels() != n)
    return absl::InternalError(absl::StrCat(std::string(tr.name()), ": changed the layout of a channel selection"));
  for (size_t k = 0; k < ts.channels.size(); ++k)
    std::copy_n(view.image.begin() + static_cast<int64_t>(k) * n, n, sample.image.begin() + ts.channels[k] * n);
  return absl::OkStatus();
}

absl::Status DrawSampleParams(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                              const std::vector<nlohmann::json>* injected, SampleLayout layout,
                              SampleRecord& record, uint64_t batch_first_index) {
  return engine_internal::Guard([&]() -> absl::Status {
    record.sample_index = sample_index;
    record.transforms.clear();
    for (size_t t = 0; t < spec.transforms.size(); ++t) {
      const TransformSpec& ts = spec.transforms[t];
      AppliedTransform at;
      RETURN_IF_ERROR(DrawEntry(ts, t, seed, sample_index, injected, layout, at, batch_first_index));
      if (at.applied) layout.shape = ts.transform->OutputShape(layout.shape);
      record.transforms.push_back(std::move(at));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<int> ParseCudaOrdinal(std::string_view device) {
  if (device == "cpu") return -1;
  if (device == "cuda") return 0;
  if (device.size() > 5 && device.size() <= 9 && device.substr(0, 5) == "cuda:") {
    int n = 0;
    bool digits = true;
    for (char ch : device.substr(5)) {
      digits = digits && ch >= '0' && ch <= '9';
      n = n * 10 + (ch - '0');
    }
    if (digits && n < 1024) return n;
  }
  return ju::Invalid("device", absl::StrCat("'", std::string(device), "' is not cpu, cuda or cuda:N"));
}

nlohmann::json BatchResult::ParamsJson(const PipelineSpec& spec) const {
  nlohmann::json out = nlohmann::json::array();
  for (const SampleRecord& r : samples) {
    nlohmann::json ts = nlohmann::json::array();
    for (size_t t = 0; t < r.transforms.size(); ++t) {
      const AppliedTransform& a = r.transforms[t];
      nlohmann::json e = {{"kind", std::string(TransformKindName(a.kind))}, {"applied", a.applied}};
      e["params"] = a.applied && a.params ? spec.transforms[t].transform->ParamsToJson(*a.params) : nlohmann::json();
      if (a.applied && spec.transforms[t].region_mode.enabled()) e["region"] = RegionDrawToJson(a.region);
      ts.push_back(e);
    }
    out.push_back({{"sample_index", r.sample_index}, {"transforms", ts}});
  }
  return out;
}

}  // namespace augmentd
