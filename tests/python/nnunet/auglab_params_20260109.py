"""auglab 20260109's GPU parameters as test data (shared by the DAExt preset and trainer tests)."""

# The parameter values of auglab 20260109's source-tree auglab/configs/transform_params_gpu.json (the wheel ships
# no JSON), restated as data: probability and the keys AugTransformsGPU reads.
AUGLAB_20260109 = {
    "ScharrTransform": {"kernel_type": "Scharr", "absolute": True, "retain_stats": False, "in_seg": 0.5,
                        "out_seg": 0.5, "mix_in_out": True, "probability": 0.15},
    "GaussianBlurTransform": {"kernel_type": "GaussianBlur", "sigma": 3.0, "in_seg": 0.5, "out_seg": 0.5,
                              "probability": 0.1},
    "UnsharpMaskTransform": {"sigma": 1.0, "unsharp_amount": 1, "in_seg": 0.5, "out_seg": 0.5, "mix_in_out": True,
                             "probability": 0.1},
    "RandomConvTransform": {"kernel_sizes": [1, 3, 5, 7], "retain_stats": False, "mix_prob": 0.2, "in_seg": 0.5,
                            "out_seg": 0.5, "mix_in_out": True, "probability": 0.1},
    "RedistributeSegTransform": {"in_seg": 0.2, "retain_stats": False, "probability": 0.3},
    "GaussianNoiseTransform": {"mean": 0.0, "std": 0.1, "in_seg": 0.5, "out_seg": 0.5, "probability": 0.1},
    "ClampTransform": {"max_clamp_amount": 0.2, "retain_stats": False, "in_seg": 0.5, "out_seg": 0.5,
                       "probability": 0.4},
    "BrightnessTransform": {"brightness_range": [0.75, 1.25], "probability": 0.15},
    "GammaTransform": {"gamma_range": [0.7, 1.5], "retain_stats": False, "in_seg": 0.5, "out_seg": 0.5,
                       "probability": 0.3},
    "InvGammaTransform": {"gamma_range": [0.7, 1.5], "retain_stats": False, "in_seg": 0.5, "out_seg": 0.5,
                          "probability": 0.1},
    "ContrastTransform": {"contrast_range": [0.75, 1.25], "retain_stats": False, "probability": 0.15},
    "FunctionTransform": {"retain_stats": False, "in_seg": 0.5, "out_seg": 0.5, "probability": 0.05},
    "InverseTransform": {"retain_stats": False, "in_seg": 0.5, "out_seg": 0.5, "probability": 0.3},
    "HistogramEqualizationTransform": {"retain_stats": False, "in_seg": 0.5, "out_seg": 0.5, "probability": 0.2},
    "SimulateLowResTransform": {"scale": [0.5, 1.0], "crop": [0.8, 1.0], "probability": 0.25},
    "AcqTransform": {"scale": [0.2, 1.0], "crop": [1.0, 1.0], "probability": 0.4},
    "BiasFieldTransform": {"retain_stats": False, "coefficients": 0.5, "in_seg": 0.5, "out_seg": 0.5,
                           "probability": 0.2},
    "FlipTransform": {"flip_axis": [0], "probability": 0},
    "AffineTransform": {"degrees": 10, "probability": 0},
    "ZscoreNormalizationTransform": {"probability": 0.3},
}
