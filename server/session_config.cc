#include "server/session_config.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "augment/dataset/case_cache.h"
#include "augment/dataset/nnunet_dataset.h"
#include "augment/dataset/path_guard.h"
#include "augment/dataset/sampler.h"
#include "augment/status_macros.h"
#include "server/adapter.h"
#include "server/log.h"

namespace augmentd {
namespace {

absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Splits a dataset_path into the DatasetOptions of augment/dataset (see the header comment).
absl::StatusOr<dataset::DatasetOptions> DatasetLayout(const std::string& path, const ServerOptions& options) {
  constexpr char kField[] = "config.dataset.dataset_path: ";
  if (options.dataset_roots.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kField, "dataset mode is disabled on this server (start augmentd with --dataset_root)"));
  }
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(kField, "required"));
  // Confinement first, before looking at anything on disk.
  absl::StatusOr<std::string> canonical = dataset::PathGuard(options.dataset_roots).Resolve(path);
  if (!canonical.ok()) return Prefixed(canonical.status(), kField);
  dataset::DatasetOptions out;
  out.allowed_roots = options.dataset_roots;
  if (IsFile(*canonical + "/dataset.json")) {
    out.dataset_dir = *canonical;
    return out;
  }
  const size_t slash = canonical->rfind('/');
  const std::string parent = canonical->substr(0, slash);
  const std::string base = canonical->substr(slash + 1);
  if (!IsFile(parent + "/dataset.json")) {
    return absl::NotFoundError(absl::StrCat(kField, "'", path,
                                            "' is neither an nnU-Net preprocessed dataset folder (with dataset.json) "
                                            "nor a configuration folder inside one"));
  }
  out.dataset_dir = parent;
  // <plans>_<configuration>: the longest plans file name that prefixes the folder name.
  std::string plans;
  if (DIR* dir = opendir(parent.c_str()); dir != nullptr) {
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (!absl::EndsWith(name, ".json") || name == "dataset.json" || name == "splits_final.json") continue;
      name.resize(name.size() - 5);
      if (absl::StartsWith(base, name + "_") && name.size() > plans.size()) plans = name;
    }
    closedir(dir);
  }
  if (plans.empty()) {
    return absl::NotFoundError(absl::StrCat(kField, "no plans file <plans>.json in '", parent, "' matches '", base,
                                            "' (<plans>_<configuration>)"));
  }
  out.plans_name = plans;
  out.configuration = base.substr(plans.size() + 1);
  return out;
}

// nnUNetTrainer's configuration for a dataset (only the fields the request left unset).
void FillTrainerFromDataset(const dataset::NnunetDataset& ds, v1::TrainerConfig* t) {
  const dataset::PlansConfig& plans = ds.plans();
  for (int64_t p : plans.patch_size) t->add_patch_size(p);
  if (t->deep_supervision_scales_size() == 0) {
    for (const std::vector<double>& scale : dataset::DeepSupervisionScales(plans.strides)) {
      v1::Scale* s = t->add_deep_supervision_scales();
      for (double f : scale) s->add_factors(f);
    }
  }
  if (t->num_input_channels() == 0) t->set_num_input_channels(static_cast<uint32_t>(ds.channel_names().size()));
  if (t->use_mask_for_norm_size() == 0 && plans.use_mask_for_norm.size() == ds.channel_names().size()) {
    for (bool b : plans.use_mask_for_norm) t->add_use_mask_for_norm(b);
  }
  if (t->regions_size() == 0 && ds.labels().has_regions) {
    for (const dataset::ClassKey& key : ds.labels().regions) {
      v1::Region* r = t->add_regions();
      for (int label : key.labels) r->add_labels(label);
    }
  }
  if (!t->has_ignore_label() && ds.labels().ignore_label.has_value()) t->set_ignore_label(*ds.labels().ignore_label);
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

void FillDatasetCacheStats(const SessionSettings& settings, v1::SessionStats* out) {
  if (settings.loader == nullptr || settings.loader->options().cache == nullptr) return;
  const dataset::CaseCacheStats c = settings.loader->options().cache->Stats();
  v1::DatasetCacheStats* d = out->mutable_dataset_cache();
  d->set_host_hits(c.host.hits);
  d->set_host_misses(c.host.misses);
  d->set_host_evictions(c.host.evictions);
  d->set_host_resident_bytes(c.host.resident_bytes);
  d->set_host_resident_cases(static_cast<uint32_t>(c.host.resident_entries));
  d->set_host_budget_bytes(c.host.budget_bytes);
  d->set_device_hits(c.device.hits);
  d->set_device_misses(c.device.misses);
  d->set_device_evictions(c.device.evictions);
  d->set_device_resident_bytes(c.device.resident_bytes);
  d->set_device_resident_cases(static_cast<uint32_t>(c.device.resident_entries));
  d->set_device_budget_bytes(c.device.budget_bytes);
  d->set_prefetch_loaded(c.prefetch_loaded);
  d->set_prefetch_failed(c.prefetch_failed);
  d->set_host_pinned(c.host_allocator == "pinned");
}

namespace {

// BuildSession's steps, in order. Each validates one part of the request (errors name the field) and fills its part
// of the settings / resources.

// batch_size, prefetch_depth, weight and the shared-memory permission against the server's limits.
absl::Status ApplySizesAndLimits(const v1::OpenSessionRequest& request, const ServerLimitsOptions& limits,
                                 SessionSettings& s) {
  const v1::SessionConfig& config = request.config();
  if (config.batch_size() == 0) return absl::InvalidArgumentError("config.batch_size: required (> 0)");
  if (config.batch_size() > limits.max_batch_size) {
    return absl::ResourceExhaustedError(absl::StrCat("config.batch_size: ", config.batch_size(),
                                                     " exceeds the server's max_batch_size ", limits.max_batch_size));
  }
  s.batch_size = config.batch_size();
  if (config.prefetch_depth() > limits.max_prefetch_depth) {
    return absl::ResourceExhaustedError(absl::StrCat("config.prefetch_depth: ", config.prefetch_depth(),
                                                     " exceeds the server's max_prefetch_depth ",
                                                     limits.max_prefetch_depth));
  }
  s.prefetch_depth = config.prefetch_depth() == 0 ? std::min<uint32_t>(2, limits.max_prefetch_depth)
                                                  : config.prefetch_depth();
  if (!std::isfinite(config.weight()) || config.weight() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("config.weight: must be a finite number >= 0, got ", config.weight()));
  }
  s.weight = config.weight() > 0 ? config.weight() : 1.0;
  if ((request.host_shm_regions_size() > 0 || request.cuda_ipc_regions_size() > 0) &&
      !limits.allow_client_shared_memory) {
    return absl::PermissionDeniedError(
        "host_shm_regions / cuda_ipc_regions: client shared memory is disabled on this server (--allow_client_shm)");
  }
  return absl::OkStatus();
}

// The delivery kind (checked against the device once it is known) and the output dtypes.
absl::Status ApplyDeliveryAndDtypes(const v1::SessionConfig& config, SessionSettings& s) {
  switch (config.delivery()) {
    case v1::DELIVERY_KIND_UNSPECIFIED:
    case v1::DELIVERY_KIND_INLINE:
      s.delivery = v1::DELIVERY_KIND_INLINE;
      break;
    case v1::DELIVERY_KIND_HOST_SHM:
    case v1::DELIVERY_KIND_CUDA_IPC:
      s.delivery = config.delivery();  // patch mode: StreamPatches delivers through the slots, Augment inline
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("config.delivery: unknown value ", config.delivery()));
  }
  if (config.image_dtype() != v1::DTYPE_UNSPECIFIED) {
    absl::StatusOr<DType> t = DTypeFromProto(config.image_dtype(), "config.image_dtype");
    if (!t.ok()) return t.status();
    if (!IsFloatingDType(*t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.image_dtype: images are FLOAT32, FLOAT16 or BFLOAT16, got ", std::string(DTypeName(*t))));
    }
    s.image_dtype = *t;
  }
  if (config.label_dtype() != v1::DTYPE_UNSPECIFIED) {
    absl::StatusOr<DType> t = DTypeFromProto(config.label_dtype(), "config.label_dtype");
    if (!t.ok()) return t.status();
    if (IsFloatingDType(*t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.label_dtype: labels are INT8, INT16 or BOOL, got ", std::string(DTypeName(*t))));
    }
    s.label_dtype = *t;
  }
  return absl::OkStatus();
}

// The device the request names (default: the server's); the session starts on the CPU until ChooseEngine.
absl::StatusOr<DeviceInfo> ResolveRequestedDevice(const v1::SessionConfig& config, const DeviceInfo& default_device,
                                                  SessionSettings& s) {
  s.requested_device = config.device();
  DeviceInfo requested = default_device;
  if (!config.device().empty()) {
    absl::StatusOr<DeviceInfo> d = ResolveDevice(config.device());
    if (!d.ok()) return Prefixed(d.status(), "config.device: ");
    requested = *d;
  }
  absl::StatusOr<DeviceInfo> cpu = ResolveDevice("cpu");
  if (!cpu.ok()) return cpu.status();
  s.device = *cpu;
  return requested;
}

// What the pipeline message asks for: a preset (expanded from the trainer configuration) or an explicit list.
struct PipelineRequest {
  bool explicit_list = false;
  std::string preset;
  v1::TrainerConfig trainer;
  // An explicit list in dataset mode may name the crop (the trainer's own initial_patch_size, e.g. a translated
  // nnUNetTrainerNoDA's patch_size); presets derive it.
  std::vector<int64_t> explicit_crop;
};

absl::StatusOr<PipelineRequest> ParsePipelineRequest(const v1::SessionConfig& config) {
  const v1::PipelineSpec& pipeline = config.pipeline();
  PipelineRequest r;
  r.explicit_list = pipeline.preset() == v1::PRESET_UNSPECIFIED;
  if (r.explicit_list) {
    if (pipeline.transforms_size() == 0) {
      return absl::InvalidArgumentError("config.pipeline: set a preset or an explicit transform list");
    }
  } else {
    if (!v1::Preset_IsValid(pipeline.preset())) {
      return absl::InvalidArgumentError(absl::StrCat("config.pipeline.preset: unknown value ", pipeline.preset()));
    }
    if (pipeline.transforms_size() > 0) {
      return absl::InvalidArgumentError("config.pipeline.transforms: must be empty when a preset is set");
    }
    r.preset = PresetName(pipeline.preset());
    const std::vector<v1::Preset> known = EnginePresets();
    if (std::find(known.begin(), known.end(), pipeline.preset()) == known.end()) {
      return absl::UnimplementedError(absl::StrCat("config.pipeline.preset: ", r.preset, " is not available yet"));
    }
  }
  r.trainer = pipeline.trainer();
  if (r.explicit_list && config.has_dataset() && r.trainer.initial_patch_size_size() > 0) {
    r.explicit_crop.assign(r.trainer.initial_patch_size().begin(), r.trainer.initial_patch_size().end());
    r.trainer.clear_initial_patch_size();
  }
  return r;
}

// Dataset mode: opens the dataset (nullptr in patch mode) and fills the trainer fields the request left unset.
absl::StatusOr<std::shared_ptr<dataset::NnunetDataset>> OpenDatasetMode(const v1::SessionConfig& config,
                                                                       const ServerOptions& options,
                                                                       v1::TrainerConfig& trainer) {
  std::shared_ptr<dataset::NnunetDataset> ds;
  if (config.has_dataset()) {
    const v1::DatasetModeConfig& dm = config.dataset();
    absl::StatusOr<dataset::DatasetOptions> layout = DatasetLayout(dm.dataset_path(), options);
    if (!layout.ok()) return layout.status();
    if (!dm.previous_stage_segs_path().empty()) {  // cascade: confined like the dataset
      absl::StatusOr<std::string> prev = dataset::PathGuard(options.dataset_roots).Resolve(dm.previous_stage_segs_path());
      if (!prev.ok()) return Prefixed(prev.status(), "config.dataset.previous_stage_segs_path: ");
      layout->previous_stage_dir = *prev;
    }
    absl::StatusOr<std::shared_ptr<dataset::NnunetDataset>> opened = dataset::NnunetDataset::Open(*layout);
    if (!opened.ok()) return Prefixed(opened.status(), "config.dataset.dataset_path: ");
    ds = *opened;
    if (dm.echo_factor() > 1024) {
      return absl::InvalidArgumentError(absl::StrCat("config.dataset.echo_factor: at most 1024, got ", dm.echo_factor()));
    }
    if (dm.foreground_labels_size() > 0) {
      return absl::UnimplementedError("config.dataset.foreground_labels: the labels come from dataset.json for now");
    }
    if (dm.has_oversample_foreground_percent() &&
        !(dm.oversample_foreground_percent() >= 0 && dm.oversample_foreground_percent() <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("config.dataset.oversample_foreground_percent: must be in [0, 1], got ",
                                                     dm.oversample_foreground_percent()));
    }
    if (trainer.patch_size_size() == 0) FillTrainerFromDataset(*ds, &trainer);
  } else if (!config.has_patch()) {
    return absl::InvalidArgumentError("config.mode: set patch or dataset");
  }
  return ds;
}

// The engine pipeline (PipelineFromProto or PresetPipeline), the trainer configuration it came from (presets, and the
// sampler's boxes in dataset mode) and the label pyramid's levels (for the response size estimate).
struct BuiltPipeline {
  absl::StatusOr<TrainerConfig> trainer = TrainerConfig();
  int64_t levels = 1;
};

absl::StatusOr<BuiltPipeline> BuildPipeline(const v1::PipelineSpec& pipeline, const PipelineRequest& req,
                                            const dataset::NnunetDataset* ds, SessionSettings& s) {
  BuiltPipeline out;
  absl::StatusOr<TrainerConfig>& tc = out.trainer;
  int64_t& levels = out.levels;
  const bool explicit_list = req.explicit_list;
  const std::vector<int64_t>& explicit_crop = req.explicit_crop;
  const v1::TrainerConfig& trainer = req.trainer;
  if (!explicit_list || ds != nullptr) {
    tc = FromProto(trainer);
    if (!tc.ok()) return Prefixed(tc.status(), "config.pipeline.");
    if (!pipeline.bgv2_version().empty()) tc->bgv2_version = pipeline.bgv2_version();  // the preset's release
  }
  if (explicit_list) {
    absl::StatusOr<PipelineSpec> spec = PipelineFromProto(pipeline);
    if (!spec.ok()) return Prefixed(spec.status(), "config.");
    s.pipeline = *std::move(spec);
    for (const v1::TransformSpec& t : pipeline.transforms()) {
      if (t.has_downsample_seg_for_ds()) levels = std::max<int64_t>(levels, t.downsample_seg_for_ds().ds_scales_size());
    }
    if (ds != nullptr) {  // crop what nnU-Net's training loader would crop for this trainer configuration
      absl::StatusOr<AugmentationGeometry> g = ConfigureGeometry(*tc);
      if (!g.ok()) return Prefixed(g.status(), "config.pipeline.trainer: ");
      if (!explicit_crop.empty() && explicit_crop.size() != g->initial_patch_size.size()) {
        return absl::InvalidArgumentError(absl::StrCat("config.pipeline.trainer.initial_patch_size: needs ",
                                                       g->initial_patch_size.size(), " entries (as patch_size), got ",
                                                       explicit_crop.size()));
      }
      // nnU-Net's enlargement is at most ~2.5x (rotation capped at 90 degrees, scale >= 0.7): 4x bounds the boxes read.
      const int64_t cap = 4 * *std::max_element(tc->patch_size.begin(), tc->patch_size.end());
      for (int64_t v : explicit_crop) {
        if (v < 1 || v > cap) {
          return absl::InvalidArgumentError(absl::StrCat(
              "config.pipeline.trainer.initial_patch_size: entries must be in [1, 4 x max(patch_size) = ", cap,
              "], got ", v));
        }
      }
      s.pipeline.input_patch_size = explicit_crop.empty() ? g->initial_patch_size : explicit_crop;
    }
  } else {
    absl::StatusOr<PipelineSpec> spec = PresetPipeline(req.preset, *tc);
    if (!spec.ok()) return Prefixed(spec.status(), "config.pipeline: ");
    s.pipeline = *std::move(spec);
    if (tc->deep_supervision_scales.has_value()) {
      levels = std::max<int64_t>(1, static_cast<int64_t>(tc->deep_supervision_scales->size()));
    }
  }
  return out;
}

// A CUDA device runs the session on the CUDA engine when its kernels cover the pipeline; otherwise the session runs
// on the CPU engine, says so in the log and reports `cpu` in the response (never pretends). A bad pipeline
// (INVALID_ARGUMENT) is the client's error on any engine: returned, not run on the CPU. Then the CUDA IPC delivery's
// device and dtype requirements.
absl::Status ChooseEngine(const DeviceInfo& requested, const std::string& id, SessionSettings& s,
                          SessionResources& resources) {
  std::string cuda_refusal = "the session runs on the CPU";
  if (requested.kind == DeviceKind::kCuda) {
    absl::StatusOr<std::unique_ptr<CudaWorker>> worker = CudaWorker::Create(s.pipeline, requested.index);
    if (worker.ok()) {
      s.device = requested;
      resources.cuda = std::make_unique<CudaWorkerPool>(s.pipeline, requested.index);
      resources.cuda->Add(*std::move(worker));  // the first worker: created once, reused for every batch
    } else if (absl::IsInvalidArgument(worker.status())) {  // only pipeline errors come back as INVALID_ARGUMENT
      return Prefixed(worker.status(), "config.");
    } else {
      cuda_refusal = absl::StrCat("the session runs on the CPU engine (", worker.status().message(), ")");
      LogWarning("session=", id, " device ", requested.name, " requested, running on the CPU engine: ",
                 worker.status().ToString());
    }
  }
  if (s.delivery == v1::DELIVERY_KIND_CUDA_IPC) {
    if (s.device.kind != DeviceKind::kCuda) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.delivery: DELIVERY_KIND_CUDA_IPC needs a session on a CUDA device; ", cuda_refusal,
          " — use DELIVERY_KIND_HOST_SHM or DELIVERY_KIND_INLINE"));
    }
    if (s.label_dtype.has_value() && *s.label_dtype != DType::kInt16) {
      return absl::InvalidArgumentError(
          "config.label_dtype: CUDA IPC slots hold the kernels' int16 labels; leave label_dtype unset or INT16");
    }
  }
  return absl::OkStatus();
}

// Image / label channels of the batches (for the size estimates and the slots).
struct Channels {
  int64_t image = 1, seg = 1;
};

// Dataset mode: the case list, the patch sampler, the loader with its echoing and shared case cache.
absl::StatusOr<Channels> ConfigureDatasetMode(const v1::DatasetModeConfig& dm, const v1::PipelineSpec& pipeline,
                                              const std::shared_ptr<dataset::NnunetDataset>& ds,
                                              const TrainerConfig& trainer, const ServerOptions& options,
                                              SessionSettings& s) {
  Channels ch;
  const TrainerConfig* tc = &trainer;
  std::vector<std::string> cases(dm.case_ids().begin(), dm.case_ids().end());
  if (cases.empty()) {
    cases = ds->case_ids();
  } else if (absl::Status st = ds->CheckCaseIds(cases); !st.ok()) {
    return Prefixed(st, "config.dataset.case_ids: ");
  }
  if (cases.empty()) return absl::FailedPreconditionError("config.dataset.dataset_path: the dataset has no cases");
  const bool ignore = ds->labels().ignore_label.has_value();
  dataset::SamplerOptions so =
      pipeline.preset() == v1::PRESET_NNUNET_VALIDATION
          ? dataset::SamplerOptions::ForValidation(tc->patch_size, s.batch_size, ignore)
          : dataset::SamplerOptions::ForTraining(tc->patch_size, s.pipeline.input_patch_size, s.batch_size, ignore);
  if (dm.has_oversample_foreground_percent()) so.oversample_foreground_percent = dm.oversample_foreground_percent();
  so.probabilistic_oversampling = dm.probabilistic_oversampling();
  absl::StatusOr<dataset::PatchSampler> sampler = dataset::PatchSampler::Create(so, cases, s.seed);
  if (!sampler.ok()) return Prefixed(sampler.status(), "config.dataset: ");
  // Echoing (batch_loader.h) and the case cache tiers shared by the sessions of this dataset (case_cache.h).
  dataset::LoaderOptions lo;
  lo.echo_factor = std::max<int64_t>(1, dm.echo_factor());
  lo.load_threads = static_cast<int>(std::min<int64_t>(s.batch_size, std::max(1, options.dataset_load_threads)));
  dataset::CaseCacheOptions co;
  co.host_budget_bytes = options.dataset_host_cache_bytes;
  // The GPU tier's crop kernel cuts data and seg only: a cascade's second seg channel is cut on the host.
  co.device_budget_bytes = s.device.kind == DeviceKind::kCuda && dm.previous_stage_segs_path().empty()
                               ? options.dataset_gpu_cache_bytes
                               : 0;
  co.device_index = s.device.kind == DeviceKind::kCuda ? s.device.index : 0;
  co.prefetch_threads = options.dataset_prefetch_threads;
  if (co.host_budget_bytes > 0 || co.device_budget_bytes > 0) {
    absl::StatusOr<std::shared_ptr<dataset::CaseCache>> cache = dataset::SharedCaseCache(ds, co);
    if (!cache.ok()) return Prefixed(cache.status(), "dataset cache: ");
    lo.cache = *std::move(cache);
    lo.prefetch_batches = static_cast<int64_t>(s.prefetch_depth) + 1;
  }
  s.loader = std::make_shared<dataset::BatchLoader>(ds, *std::move(sampler), lo);
  ch.image = static_cast<int64_t>(ds->channel_names().size());
  s.num_image_channels = ch.image;
  ch.seg = dm.previous_stage_segs_path().empty() ? 1 : 2;
  s.input_patch_size = s.pipeline.input_patch_size;
  return ch;
}

// Patch mode: the input patch size and channels / dtypes the client sends.
absl::StatusOr<Channels> ConfigurePatchMode(const v1::PatchModeConfig& pm, SessionSettings& s) {
  Channels ch;
  std::vector<int64_t> in(pm.input_patch_size().begin(), pm.input_patch_size().end());
  if (in.empty()) in = s.pipeline.input_patch_size;
  if (in.empty()) {
    return absl::InvalidArgumentError(
        "config.patch.input_patch_size: required with an explicit transform list (the spatial size sent)");
  }
  if (in.size() != 2 && in.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat("config.patch.input_patch_size: need 2 or 3 entries, got ", in.size()));
  }
  for (int64_t v : in) {
    if (v <= 0 || v > 4096) {
      return absl::InvalidArgumentError(absl::StrCat("config.patch.input_patch_size: entries must be in 1..4096, got ", v));
    }
  }
  if (!s.pipeline.input_patch_size.empty() && in != s.pipeline.input_patch_size) {
    return absl::InvalidArgumentError(absl::StrCat("config.patch.input_patch_size: ", ShapeString(in),
                                                   " differs from the pipeline's initial patch size ",
                                                   ShapeString(s.pipeline.input_patch_size)));
  }
  s.input_patch_size = in;
  // Now the batches' shape is known: a skippable entry that changes it is refused here, not at every batch.
  if (absl::Status st = s.pipeline.CheckLayoutStable(in); !st.ok()) return Prefixed(st, "config.");
  ch.image = pm.num_image_channels() == 0 ? 1 : pm.num_image_channels();
  ch.seg = pm.num_segmentation_channels() == 0 ? 1 : pm.num_segmentation_channels();
  s.num_image_channels = ch.image;
  s.num_segmentation_channels = ch.seg;
  if (pm.input_image_dtype() != v1::DTYPE_UNSPECIFIED) {
    absl::StatusOr<DType> t = DTypeFromProto(pm.input_image_dtype(), "config.patch.input_image_dtype");
    if (!t.ok()) return t.status();
    if (!IsFloatingDType(*t)) return absl::InvalidArgumentError("config.patch.input_image_dtype: must be a float type");
    s.input_image_dtype = *t;
  }
  if (pm.input_label_dtype() != v1::DTYPE_UNSPECIFIED) {
    absl::StatusOr<DType> t = DTypeFromProto(pm.input_label_dtype(), "config.patch.input_label_dtype");
    if (!t.ok()) return t.status();
    if (*t != DType::kInt8 && *t != DType::kInt16) {
      return absl::InvalidArgumentError("config.patch.input_label_dtype: must be INT8 or INT16");
    }
    s.input_label_dtype = *t;
  }
  return ch;
}

// The inline batch size against the response limit (labels: every DS level bounded by the full resolution), and the
// prefetched bytes against the in-flight limit.
absl::Status CheckBatchBytes(const v1::SessionConfig& config, const ServerLimitsOptions& limits, int64_t levels,
                             const Channels& ch, SessionSettings& s) {
  const int64_t channels = ch.image, seg_channels = ch.seg;
  // The output's channels (the cascade's move_seg_as_one_hot_to_data turns a seg channel into image channels).
  const int64_t out_channels = s.pipeline.OutputChannels(channels, seg_channels).first;
  const std::vector<int64_t> out_spatial = s.pipeline.OutputShape(s.input_patch_size);
  const uint64_t voxels = static_cast<uint64_t>(Product(out_spatial)) * s.batch_size;
  s.max_batch_bytes =
      voxels * static_cast<uint64_t>(std::max(channels, out_channels)) * DTypeSize(s.image_dtype) +
      voxels * static_cast<uint64_t>(levels) * 2 * static_cast<uint64_t>(std::max<int64_t>(1, seg_channels));
  if (s.delivery == v1::DELIVERY_KIND_INLINE && s.max_batch_bytes + 4096 > limits.max_response_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("config.batch_size: one inline batch would be about ",
                                                     s.max_batch_bytes, " bytes, above the server's max_response_bytes ",
                                                     limits.max_response_bytes));
  }

  // A stream keeps up to prefetch_depth batches produced ahead; they count against the in-flight byte limit, so a
  // depth that could never fit is refused here rather than throttled forever.
  if (config.has_dataset() && limits.max_inflight_bytes_per_session > 0 &&
      s.max_batch_bytes * s.prefetch_depth > limits.max_inflight_bytes_per_session) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "config.prefetch_depth: ", s.prefetch_depth, " batches of ~", s.max_batch_bytes,
        " bytes exceed the server's max_inflight_bytes_per_session ", limits.max_inflight_bytes_per_session));
  }
  return absl::OkStatus();
}

// The client's input regions, the output slot ring (non-inline delivery) and the server-owned input slots.
absl::Status CreateBuffers(const v1::OpenSessionRequest& request, const std::string& id,
                           const absl::StatusOr<TrainerConfig>& tc, const Channels& ch,
                           const ServerLimitsOptions& limits, const std::shared_ptr<MemoryBudget>& budget,
                           const SessionSettings& s, SessionResources& resources) {
  const v1::SessionConfig& config = request.config();
  const int64_t channels = ch.image, seg_channels = ch.seg;
  const int64_t out_channels = s.pipeline.OutputChannels(channels, seg_channels).first;
  absl::StatusOr<std::unique_ptr<InputRegions>> inputs =
      OpenInputRegions(request, s.device, limits.allow_client_shared_memory);
  if (!inputs.ok()) return inputs.status();
  resources.inputs = *std::move(inputs);
  if (s.delivery != v1::DELIVERY_KIND_INLINE) {
    SlotRingRequest ring;
    ring.kind = s.delivery;
    ring.session_id = id;
    ring.count = s.prefetch_depth;
    ring.device = s.device;
    int64_t label_channels = std::max<int64_t>(1, seg_channels);
    if (tc.ok() && tc->regions.has_value()) {
      label_channels = std::max<int64_t>(label_channels, static_cast<int64_t>(tc->regions->size()) + 1);
    }
    const size_t label_bytes = s.label_dtype.has_value() ? DTypeSize(*s.label_dtype) : 2;
    ring.slot_bytes = BatchSlotBytes(s.pipeline, s.input_patch_size, s.batch_size, std::max(channels, out_channels),
                                     label_channels, s.image_dtype, label_bytes);
    if (s.device.kind == DeviceKind::kCuda) {  // one worker's pinned + device input staging
      ring.staging_bytes = 2 * static_cast<uint64_t>(Product(s.input_patch_size)) * s.batch_size *
                           static_cast<uint64_t>(channels * 4 + 2 * std::max<int64_t>(1, seg_channels));  // cascade: 2
    }
    absl::StatusOr<std::shared_ptr<SlotRing>> slots = CreateSlotRing(ring, limits, budget);
    if (!slots.ok()) return slots.status();
    resources.slots = *std::move(slots);
  }
  if (config.has_patch() && config.patch().input_slots() > 0) {  // server-owned input slots (server/input_slots.h)
    const v1::PatchModeConfig& pm = config.patch();
    if (pm.input_slots() > limits.max_prefetch_depth + 1) {
      return absl::ResourceExhaustedError(absl::StrCat("config.patch.input_slots: ", pm.input_slots(),
                                                       " exceeds the server's max_prefetch_depth + 1 = ",
                                                       limits.max_prefetch_depth + 1));
    }
    InputSlotsRequest in;
    in.kind = pm.input_slot_kind() != v1::DELIVERY_KIND_UNSPECIFIED ? pm.input_slot_kind()
              : s.device.kind == DeviceKind::kCuda                  ? v1::DELIVERY_KIND_CUDA_IPC
                                                                    : v1::DELIVERY_KIND_HOST_SHM;
    in.session_id = id;
    in.count = pm.input_slots();
    in.device = s.device;
    in.slot_bytes = InputSlotBytes(s.input_patch_size, s.batch_size, channels, seg_channels, s.input_image_dtype,
                                   s.input_label_dtype);
    absl::StatusOr<std::unique_ptr<InputSlots>> inputs = InputSlots::Create(in, limits, budget);
    if (!inputs.ok()) return inputs.status();
    resources.input_slots = *std::move(inputs);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<Session>> BuildSession(const v1::OpenSessionRequest& request,
                                                      const ServerOptions& options, const DeviceInfo& default_device,
                                                      const std::string& id, int threads_per_batch,
                                                      std::shared_ptr<MemoryBudget> budget) {
  if (!request.has_config()) return absl::InvalidArgumentError("config: required");
  const v1::SessionConfig& config = request.config();
  SessionSettings s;
  s.id = id;
  s.name = config.name();
  s.seed = config.seed();
  s.start_batch_index = request.start_batch_index();
  s.threads_per_batch = std::max(1, threads_per_batch);
  RETURN_IF_ERROR(ApplySizesAndLimits(request, options.limits, s));
  RETURN_IF_ERROR(ApplyDeliveryAndDtypes(config, s));
  ASSIGN_OR_RETURN(const DeviceInfo requested, ResolveRequestedDevice(config, default_device, s));
  ASSIGN_OR_RETURN(PipelineRequest pipeline_request, ParsePipelineRequest(config));
  ASSIGN_OR_RETURN(std::shared_ptr<dataset::NnunetDataset> ds,
                   OpenDatasetMode(config, options, pipeline_request.trainer));
  ASSIGN_OR_RETURN(BuiltPipeline built, BuildPipeline(config.pipeline(), pipeline_request, ds.get(), s));
  // A pipeline whose batches every engine would refuse is refused here, not at the first batch.
  if (absl::Status st = s.pipeline.CheckLayoutStable(); !st.ok()) return Prefixed(st, "config.");
  SessionResources resources;
  RETURN_IF_ERROR(ChooseEngine(requested, id, s, resources));
  ASSIGN_OR_RETURN(const Channels channels,
                   ds != nullptr ? ConfigureDatasetMode(config.dataset(), config.pipeline(), ds, *built.trainer,
                                                        options, s)
                                 : ConfigurePatchMode(config.patch(), s));
  RETURN_IF_ERROR(CheckBatchBytes(config, options.limits, built.levels, channels, s));
  RETURN_IF_ERROR(CreateBuffers(request, id, built.trainer, channels, options.limits, budget, s, resources));
  return std::make_shared<Session>(std::move(s), std::move(resources));
}

v1::OpenSessionResponse MakeOpenSessionResponse(const Session& session) {
  v1::OpenSessionResponse out;
  const SessionSettings& s = session.settings();
  out.set_session_id(s.id);
  out.mutable_resolved_pipeline()->set_preset(v1::PRESET_UNSPECIFIED);
  for (const TransformSpec& t : s.pipeline.transforms) {
    v1::TransformSpec* ts = out.mutable_resolved_pipeline()->add_transforms();
    absl::StatusOr<v1::TransformKind> kind = TransformKindFromName(std::string(TransformKindName(t.kind)));
    if (kind.ok()) ts->set_kind(*kind);
    ts->set_apply_probability(t.apply_probability);
    if (t.kind == TransformKind::kSpatial) {  // the batchgeneratorsv2 release the session resamples as
      out.mutable_resolved_pipeline()->set_bgv2_version(t.transform->ConfigToJson().value("bgv2_version", ""));
    }
  }
  *out.mutable_device() = ToProto(s.device);
  for (int64_t p : s.input_patch_size) out.add_initial_patch_size(p);
  out.set_delivery(s.delivery);
  if (session.slots() != nullptr) {
    for (v1::OutputSlot& slot : session.slots()->Export()) *out.add_output_slots() = std::move(slot);
  }
  if (session.input_slots() != nullptr) {
    for (v1::OutputSlot& slot : session.input_slots()->Export()) *out.add_input_slots() = std::move(slot);
  }
  return out;
}

}  // namespace augmentd
