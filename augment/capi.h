/* augment/capi.h — C ABI of the augmentd engine for the Python parity tests (libaugment_capi.so).
 *
 * One JSON entry point. Torch-free, protobuf-free, extern "C". Every call returns a result handle (never NULL)
 * that owns its JSON text and output tensors until augmentd_result_free().
 *
 *   augmentd_result* r = augmentd_run_json("{\"op\":\"draw_params\", ...}");
 *   if (!augmentd_result_ok(r)) fprintf(stderr, "%s\n", augmentd_result_error(r));   // "INVALID_ARGUMENT: ..."
 *   const char* json = augmentd_result_json(r);
 *   for (int i = 0; i < augmentd_result_num_tensors(r); ++i) { name, dtype, ndim, shape, data ... }
 *   augmentd_result_free(r);
 *
 * Thread-safety: augmentd_run_json may be called concurrently; a result handle must not be shared while freed.
 *
 * ---------------------------------------------------------------------------------------------------------------
 * Input tensors are JSON objects {"data": <integer address>, "dtype": "float32", "shape": [..]} describing a
 * dense C-ordered host buffer (numpy `arr.ctypes.data`), read only during the call.
 * Dtypes: "float32", "float16", "bfloat16" (images); "int8", "int16" (labels); outputs also "bool".
 *
 * Requests ("op"):
 *  apply_transform  {"op":"apply_transform", "transform":{"kind":K,"config":{...}}, "params":{...},
 *                    "image":T(C,X,Y[,Z]), "seg":T(S,X,Y[,Z]) (optional)}
 *      Applies exactly one transform with the injected per-sample parameters. Output tensors "image" and "seg"
 *      (for downsample_seg_for_ds: "seg_0", "seg_1", ...). JSON: {"params": <params as used>}.
 *  draw_params      {"op":"draw_params", "transform":{kind,config}, "apply_probability":p, "seed":s,
 *                    "first_sample_index":i, "count":n, "image_shape":[C,X,Y,Z] (+ optional "seg_channels")}
 *      JSON: list of n parameter dicts (bgv2 format) each with an extra "applied": bool (u < p, draw 0 of the
 *      stream). Parameters are drawn for every sample (also when not applied) from augmentd's Philox streams
 *      RandomStream(seed, first_sample_index + k, transform_index = 0).
 *  run_pipeline     {"op":"run_pipeline", "preset":"nnunet_default"|"nnunet_da5"|"nnunet_validation",
 *                    "trainer_config":{...}
 *                    | "pipeline":{"transforms":[{"kind","apply_probability","config"[,"one_of_group"]}...]},
 *                    "seed":s, "first_sample_index":i, "image":T(B,C,...), "seg":T(B,S,...), "threads":n,
 *                    "params": optional injected [[{"applied":b,"params":{...}[,"region":{"mode","keep"}]}
 *                    | null per transform] per sample]} (entries may carry "same_on_batch" / "region_mode", augment/region_mode.h)
 *      Tensors "image", "seg_0".."seg_k" (one "seg_0" without DS). JSON: {"samples": [{"sample_index",
 *      "transforms":[{"kind","applied","params"}...]}...], "pipeline": <spec JSON>}.
 *  initial_patch_size {"op":"initial_patch_size", "trainer_config":{...}, "preset": optional ("nnunet_da5": scale
 *                    range (0.7, 1.43) as nnUNetTrainerDA5; else nnUNetTrainer's (0.85, 1.25))}
 *      JSON: {"initial_patch_size", "rotation_for_da", "do_dummy_2d_data_aug", "mirror_axes"}.
 *  OneOf groups: consecutive pipeline entries with the same non-zero "one_of_group" are bgv2's OneOfTransform: per
 *      sample one member is chosen uniformly (stream RandomStream(seed, sample, 4095, group)); the others report
 *      "applied": false; the chosen one still draws its own apply decision. nnunet_da5 uses groups 1 and 2.
 *  preset           {"op":"preset", "preset":"nnunet_default", "trainer_config":{...}} → the pipeline spec JSON.
 *  registry         {"op":"registry"} → {"transforms": [names...]}.
 *
 * trainer_config keys: patch_size, rotation_for_da [lo,hi], mirror_axes, do_dummy_2d_data_aug,
 *   deep_supervision_scales | pool_op_kernel_sizes, regions, ignore_label, use_mask_for_norm, num_input_channels.
 *
 * Transform configs use the bgv2 constructor argument names; a RandomScalar is a number, [lo, hi] (uniform) or
 * {"bg_contrast": [lo, hi]}; tuples are lists; None is null.
 *   spatial                   patch_size, patch_center_dist_from_border, random_crop, p_elastic_deform,
 *                             elastic_deform_scale, elastic_deform_magnitude, p_synchronize_def_scale_across_axes,
 *                             p_rotation, rotation, p_rot_per_axis, p_scaling, scaling,
 *                             p_synchronize_scaling_across_axes, bg_style_seg_sampling, mode_seg
 *                             ("bilinear"|"nearest"), border_mode_seg ("zeros"|"constant"), center_deformation,
 *                             mode_image, padding_mode_image ("zeros"|"constant"), padding_value_seg,
 *                             padding_value_image, align_corners (false only),
 *                             + augmentd "dummy_2d": true = Convert3DTo2D → SpatialTransform(2D patch) → back.
 *   gaussian_noise            noise_variance, p_per_channel, synchronize_channels
 *   gaussian_blur             blur_sigma, synchronize_channels, synchronize_axes, p_per_channel, benchmark
 *   multiplicative_brightness multiplier_range, synchronize_channels, p_per_channel
 *   contrast                  contrast_range, preserve_range, synchronize_channels, p_per_channel
 *   simulate_low_resolution   scale, synchronize_channels, synchronize_axes, ignore_axes, allowed_channels,
 *                             p_per_channel
 *   gamma                     gamma, p_invert_image, synchronize_channels, p_per_channel, p_retain_stats
 *   mirror                    allowed_axes
 *   mask_image                apply_to_channels, channel_idx_in_seg, set_outside_to
 *   remove_label              label_value, set_to, segmentation_channels
 *   convert_segmentation_to_regions  regions, channel_in_seg
 *   downsample_seg_for_ds     ds_scales
 *   nnUNetTrainerDA5's (reference §5.1):
 *   blank_rectangle           rectangle_size (int | [int per axis] | [[lo, hi) per axis]), rectangle_value (number |
 *                             [lo, hi] | "mean" = torch.mean of the box), num_rectangles (int | [lo, hi)),
 *                             force_square, p_per_channel
 *   brightness_additive       mu, sigma, synchronize_channels, p_per_channel
 *   sharpening                strength (number | [lo, hi]), p_same_for_each_channel, p_per_channel,
 *                             p_clamp_intensities
 *   median_filter             filter_size (int | [lo, hi)), p_same_for_each_channel, p_per_channel
 *   brightness_gradient_additive  scale, loc, max_strength, same_for_all_channels, mean_centered, clip_intensities,
 *                             p_per_channel
 *   local_gamma               scale, loc, gamma, same_for_all_channels, p_per_channel
 *                             (these scalars also take {"axis_size_log_uniform": [a, b]} = exp(U(ln(S // a),
 *                             ln(S // b))) for axis size S — nnU-Net's scale callable is [6, 1] — and
 *                             {"mixture": [{"weight": w, "range": [lo, hi]}, ...]} = a coin, then U of the component —
 *                             DA5's strength ½U(−5,−1)+½U(1,5) and gamma ½U(0.01,0.8)+½U(1.5,4))
 *   rot90                     num_axis_combinations, num_rot_per_combination, allowed_axes
 *   transpose_axes            allowed_axes
 *   rician_noise              noise_variance ([lo, hi]; used as the std, like bgv2)
 *   MRI artefacts, TorchIO's Random* arguments (augment/transforms/{bias_field,ghosting,spike,motion}/; a number d is TorchIO's range (−d, d),
 *   or (0, d) where TorchIO constrains the minimum to 0):
 *   bias_field                coefficients (0.5), order (3; 0..10)
 *   ghosting                  num_ghosts ([4, 10]), axes ([0, 1, 2]), intensity ([0.5, 1]), restore (null | d | [a, b])
 *   spike                     num_spikes ([1, 1]), intensity ([1, 3])
 *   motion                    degrees (10), translation (10, voxels), num_transforms (2; 1..16),
 *                             image_interpolation ("linear" only)
 *   AugLab's nnUNetTrainerDAExtGPU extras (augment/transforms/{histogram_equalization,random_convolution,intensity_function}/; apply_to_channel defaults to [0]):
 *   histogram_equalization    apply_to_channel, retain_stats
 *   random_convolution        apply_to_channel, kernel_sizes ([odd 1..15]; [1, 3, 5, 7]), mix_prob (0.2), retain_stats
 *   intensity_function        apply_to_channel, functions (names: log1p sqrt sin exp sigmoid square; AugLab's five
 *                             by default), p_function (0.05), retain_stats, p_inverse (0.3), inverse_retain_stats
 *   (all three)               in_seg (0), out_seg (0), mix_in_out (false), seg_channel (0): AugLab's region modes
 *                             (augment/transforms/common/auglab_region.h)
 *
 * Per-sample parameters = bgv2 0.3.5 get_parameters() dicts (tensors as nested lists, index tensors as int lists):
 *   spatial            {"affine": ndim×ndim | null, "elastic_offsets": (*patch, ndim) nested | null,
 *                       "center_location_in_pixels": [ndim]}  ("grid" is derived and ignored if given).
 *                       dummy-2D: 2×2 affine and 2 centre entries (the folded 2D problem, as in bgv2).
 *   gaussian_noise     {"apply_mask": [bool]*C, "apply_idx": [int], "num_apply": n,
 *                       "sigmas": σ (synchronize_channels) | [σ per applied channel] | null,
 *                       "noise_key": {"seed","sample_index","transform_index"}}  (augmentd extra key)
 *                      The noise FIELD cannot be injected (it is augmentd::NormalAt of the noise_key, substream
 *                      1 + channel); parity tests compare statistics (mean/std of output − input), not voxels.
 *                      Without "noise_key", run_pipeline uses the sample's own (seed, sample_index, transform
 *                      index) and apply_transform uses {0, 0, 0}.
 *   gaussian_blur      {"apply_to_channel": [bool]*C, "sigmas": [[σ per axis] per applied channel]
 *                       (synchronize_channels: one flat [σ per axis])}
 *   multiplicative_brightness {"apply_to_channel": [int], "multipliers": [m per applied channel]}
 *   contrast           {"apply_to_channel": [int], "multipliers": [m per applied channel] | null}
 *   simulate_low_resolution {"apply_to_channel": [int], "scales": [[s per axis] per applied channel]}
 *   gamma              {"apply_to_channel": [int], "retain_stats": [bool] | null, "invert_image": [bool] | null,
 *                       "gamma": [g] | null}
 *   mirror             {"axes": [int]}
 *   mask_image, remove_label, convert_segmentation_to_regions, downsample_seg_for_ds: {}
 *   blank_rectangle    {"apply_channel": [bool]*C, "rectangles": [[[lb...], [ub...]] per box] per channel}
 *                       (+ "values": [[v per box] per channel] for a [lo, hi] rectangle_value: bgv2 draws these at
 *                       apply time; augmentd draws them last in Draw, same order)
 *   brightness_additive {"apply_to_channel": [int], "shift": [C floats] | null}
 *   sharpening         {"strengths": [C], "clamp_intensities": [C bools], "apply_channel": [C bools]}
 *   median_filter      {"filter_sizes": [C ints], "apply_channel": [C bools]}
 *   brightness_gradient_additive {"kernels": [C × nested kernel | null]} (bgv2, input only) or augmentd's compact
 *                       {"kernel_params": [C × {"loc": [loc·S per axis], "scale": [...], "strength": s} | null]}
 *                       (what augmentd reports; the kernel is rebuilt exactly)
 *   local_gamma        {"kernels" | "kernel_params" (as above, without "strength"), "gammas": [C × g | null]}
 *   rot90              {"num_rot_per_combination": [k...], "axis_combinations": [[a, b] (dims incl. channel)...]}
 *   transpose_axes     {"axis_order": [0, ...]}
 *   rician_noise       {"variance": v, "noise_key": {...}} (fields NormalAt substreams 1 and 2; as gaussian_noise)
 *   bias_field         {"coefficients": [(order+1)(order+2)(order+3)/6 floats], "order": k}   (= tio.BiasField args)
 *   ghosting           {"num_ghosts": g, "axis": a, "intensity": s, "restore": r | null}     (= tio.Ghosting args)
 *   spike              {"spikes_positions": [[p0, p1, p2] in [0, 1)...], "intensity": r}      (= tio.Spike args)
 *   motion             {"degrees": [[3] × N], "translation": [[3] × N], "times": [N, non-decreasing in [0, 1]]}
 *                       (= tio.Motion args with image_interpolation "linear")
 *   histogram_equalization {"apply_to_channel": [int]} (nothing random)
 *   random_convolution {"apply_to_channel": [int], "kernel_size": [k], "kernel": [[k³ floats, C order]],
 *                       "mix": [bool], "alpha": [float]} (one entry per applied channel)
 *   intensity_function {"apply_to_channel": [int], "functions": [bool per configured function], "inverse": bool}
 *   (all three, with in_seg or out_seg > 0) + "region": ["all" | "in" | "out" per slot], "region_labels": [uint64]
 *   move_seg_as_one_hot_to_data: {}
 *   apply_random_binary_operator {"apply_to_channels": [int (entries of channel_idx)], "operators": ["dilation" |
 *                       "erosion" | "closing" | "opening" per applied channel], "strel_size": [r per applied channel]}
 *   remove_random_connected_component {"apply_to_channels": [int], "component_draw": [u], "fill_draw": [u],
 *                       "other_class_draw": [u]} (u in [0, 1) per applied channel: augmentd's draws of the choices
 *                       bgv2 makes inside apply, see remove_random_connected_component.h)
 * Channel lists accept int indices or a bool mask of length C.
 *
 * Errors: ok = 0 and error() = "<CODE>: <message>" (e.g. "INVALID_ARGUMENT: spatial.patch_size: ...").
 */
#ifndef AUGMENTD_AUGMENT_CAPI_H_
#define AUGMENTD_AUGMENT_CAPI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AUGMENTD_CAPI_EXPORT __attribute__((visibility("default")))
#else
#define AUGMENTD_CAPI_EXPORT
#endif

typedef struct augmentd_result augmentd_result;

/* Runs one JSON request; never returns NULL (allocation failure returns a static error result). */
AUGMENTD_CAPI_EXPORT augmentd_result* augmentd_run_json(const char* request_json);
/* 1 ok, 0 error. */
AUGMENTD_CAPI_EXPORT int augmentd_result_ok(const augmentd_result* r);
/* "" when ok, else "<CODE>: <message>". Owned by the result. */
AUGMENTD_CAPI_EXPORT const char* augmentd_result_error(const augmentd_result* r);
/* JSON output ("null" when the op has none). Owned by the result. */
AUGMENTD_CAPI_EXPORT const char* augmentd_result_json(const augmentd_result* r);
AUGMENTD_CAPI_EXPORT int augmentd_result_num_tensors(const augmentd_result* r);
/* Tensor accessors: i in [0, num_tensors); NULL / 0 for an out-of-range i. Data is contiguous, C order. */
AUGMENTD_CAPI_EXPORT const char* augmentd_result_tensor_name(const augmentd_result* r, int i);
AUGMENTD_CAPI_EXPORT const char* augmentd_result_tensor_dtype(const augmentd_result* r, int i);
AUGMENTD_CAPI_EXPORT int augmentd_result_tensor_ndim(const augmentd_result* r, int i);
AUGMENTD_CAPI_EXPORT const int64_t* augmentd_result_tensor_shape(const augmentd_result* r, int i);
AUGMENTD_CAPI_EXPORT const void* augmentd_result_tensor_data(const augmentd_result* r, int i);
/* Frees the result and everything it owns; NULL is ignored. */
AUGMENTD_CAPI_EXPORT void augmentd_result_free(augmentd_result* r);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AUGMENTD_AUGMENT_CAPI_H_ */
