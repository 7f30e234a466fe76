/* augment/dataset/capi_dataset.h — a small C ABI over dataset mode, for Python (ctypes) tests and tools.
 *
 * One call takes a JSON request and returns an opaque result: a status code (absl::StatusCode numbering,
 * 0 = OK), a JSON document (the response, or {"error": "<message>"}) and named tensors (host memory owned
 * by the result). Library: libaugment_dataset_capi.so (target augment_dataset_capi). Python wrapper:
 * tests/python/dataset/augmentd_dataset.py.
 *
 *   AugmentdDatasetResult* r = augmentd_dataset_call(
 *       "{\"op\":\"sample_batch\",\"dataset\":{\"dir\":\"/pre/Dataset001_X\"},\"fold\":0,"
 *       "\"seed\":1,\"batch_index\":0}");
 *   if (augmentd_dataset_result_code(r) == 0) { ... augmentd_dataset_result_tensor_data(r, 0) ... }
 *   augmentd_dataset_result_free(r);
 *
 * Requests ("op"):
 *   info             {dataset}                          → plans, labels, format, case ids, trainer defaults
 *   sample_batch     {dataset, fold | case_ids, split: "train"|"val" (default "train"), seed, batch_index,
 *                     optional overrides: batch_size, patch_size, final_patch_size,
 *                     oversample_foreground_percent, probabilistic_oversampling, plan_only}
 *                    → {"samples": [{slot, case_id, case_index, force_fg, key, lb, ub, case_shape}], ...}
 *                      + tensors "data" (float32, B×C×patch) and "seg" (int16, B×1×patch) unless plan_only.
 *                    split "train" samples initial_patch_size boxes, "val" patch_size boxes (need_to_pad 0).
 *   class_locations  {dataset, case_id}                 → {"keys": [...], "total_counts": [...]}
 *                                                          + int32 tensors "key0", "key1", ... (n × 3)
 *   read_box         {path, member (for .npz), lb, ub, pad_value, dtype, allowed_roots}
 *                                                        → {"array_shape", "array_dtype"} + tensor "box"
 *   box_range        {shape, patch_size, need_to_pad}    → {"lb", "ub", "need_to_pad"} (get_bbox bounds)
 *   forced_slots     {batch_size, oversample_foreground_percent} → {"forced": [bool per slot]}
 * where dataset = {"dir", "plans" (default "nnUNetPlans"), "configuration" (default "3d_fullres"),
 *                  "allowed_roots": [...], "fg_cache_dir"}. Opened datasets are kept per distinct
 * dataset object (their foreground locations stay cached across calls).
 *
 * Thread-safety: augmentd_dataset_call may be called from several threads; a result is used by one.
 */
#ifndef AUGMENTD_DATASET_CAPI_DATASET_H_
#define AUGMENTD_DATASET_CAPI_DATASET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct AugmentdDatasetResult AugmentdDatasetResult;

/* Runs one JSON request (NUL-terminated). Never returns NULL. */
AugmentdDatasetResult* augmentd_dataset_call(const char* request_json);
/* absl::StatusCode of the call (0 = OK, 3 = INVALID_ARGUMENT, 5 = NOT_FOUND, 7 = PERMISSION_DENIED,
 * 15 = DATA_LOSS, ...). */
int augmentd_dataset_result_code(const AugmentdDatasetResult* r);
/* Response JSON, or {"error": message} when the code is not 0. Valid until the result is freed. */
const char* augmentd_dataset_result_json(const AugmentdDatasetResult* r);
int augmentd_dataset_result_num_tensors(const AugmentdDatasetResult* r);
const char* augmentd_dataset_result_tensor_name(const AugmentdDatasetResult* r, int i);
/* numpy dtype name: "float32", "int16", "int32", ... */
const char* augmentd_dataset_result_tensor_dtype(const AugmentdDatasetResult* r, int i);
int augmentd_dataset_result_tensor_ndim(const AugmentdDatasetResult* r, int i);
const int64_t* augmentd_dataset_result_tensor_shape(const AugmentdDatasetResult* r, int i);
const void* augmentd_dataset_result_tensor_data(const AugmentdDatasetResult* r, int i);
void augmentd_dataset_result_free(AugmentdDatasetResult* r);

#ifdef __cplusplus
}
#endif

#endif /* AUGMENTD_DATASET_CAPI_DATASET_H_ */
