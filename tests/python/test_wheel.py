"""The binary wheel (scripts/build-wheel.sh) installed into a fresh venv, used as a pip user would use it.

One module fixture builds the wheel from the build directory the test command already built (only packaging:
no second compile), creates a fresh venv, installs the wheel with ``pip install --no-index`` and gives every
later step an environment with no build tree: no ``AUGMENTD_BIN`` / ``AUGMENTD_BUILD_DIR``, no
``LD_LIBRARY_PATH`` / ``PYTHONPATH``, ``PATH`` = the venv's ``bin`` + the system folders. The tests then

* list every library the packaged executable resolves (``ldd``) and fail if one resolves outside the wheel, the
  nvidia-* CUDA wheels or the manylinux base (glibc, libstdc++, libgcc_s, libz; libcuda is the driver's and
  is loaded by the CUDA runtime, not linked) — e.g. to the system's libgrpc++ or /usr/local/cuda;
* check the RUNPATH route (the CUDA wheels installed beside augmentd) as well as the LD_LIBRARY_PATH route that
  ``augmentd.packaged`` takes when they live in another ``sys.path`` entry (the case here, see below);
* run ``augmentd --help`` (the console script), start the packaged server through ``augmentd.local_server``
  (health, GetServerInfo) and check that the client process maps none of the grafted libraries;
* run ``augmentd-nnunet-train ... -tr nnUNetTrainerAugmentd_smoke -device cpu`` from the venv on a synthetic
  dataset preprocessed by the real ``nnUNetv2_plan_and_preprocess``, with a narrowed network.

Why the fresh venv sees the pinned environment's packages. torch 2.11 with its CUDA 13 wheels, nnunetv2 and
their dependencies are ~5 GB to download and unpack, and CI keeps no pip cache (the 90-minute budget and the
shared 2-core machine would pay minutes and disk for it). So the venv gets one ``.pth`` line naming the pinned
``.venv``'s site-packages, which Python appends *after* the venv's own site-packages: torch, nnunetv2, grpcio,
protobuf, numpy and the nvidia-cuda-runtime / nvidia-cufft wheels resolve from there, while ``augmentd``
resolves only from the wheel — the fixture asserts that the pinned environment holds no ``augmentd`` and that
the installed package is the venv's. ``pip install --no-index`` proves that the wheel's declared requirements
(including the CUDA wheels and the stubs' grpcio / protobuf bounds) are met by what is there, without a
download. What this does not cover: the CUDA wheels arriving by pip's resolver from PyPI (their names and
versions are the ones torch 2.11 itself pulls in).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import augmentd_server

REPO = Path(augmentd_server.REPO)

# The manylinux base that auditwheel does not graft (its policy's whitelist, the part an executable links) and the
# dynamic loader. libcuda.so.1 (the driver's) never appears: the CUDA runtime dlopens it.
ALLOWED_BASE = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2",
                "libpthread.so.0", "librt.so.1", "libresolv.so.2", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1",
                "libcuda.so.1"}
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")
_LDD = re.compile(r"^\s*(\S+)(?: => (\S+| *not found))?(?: \(0x[0-9a-f]+\))?\s*$")


def _run(args, env, timeout=300, **kw):
    kw.setdefault("cwd", "/")  # nothing importable from the working directory
    return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _ldd(binary: str, env: dict) -> dict:
    """soname -> resolved path ('' for the vdso, 'not found' when unresolved)."""
    proc = _run(["ldd", binary], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        m = _LDD.match(line)
        assert m, f"unparsed ldd line: {line!r}"
        name, path = m.group(1), (m.group(2) or "").strip()
        if not path and name.startswith("/"):  # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
            name, path = os.path.basename(name), name
        out[name] = path
    return out


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    build = Path(os.environ.get("AUGMENTD_BUILD_DIR", REPO / "build"))
    if not (build / "server" / "augmentd").is_file():
        pytest.fail(f"{build}/server/augmentd is missing: the wheel packages an existing build (scripts/build.sh)")
    work = tmp_path_factory.mktemp("wheel")
    proc = _run(["bash", REPO / "scripts" / "build-wheel.sh", "--build-dir", build, "--out", work / "dist",
                 "--python", sys.executable], dict(os.environ), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list((work / "dist").glob("augmentd-*-py3-none-manylinux_*_x86_64.whl"))
    assert len(wheels) == 1, proc.stdout[-2000:]

    venv = work / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True, timeout=300)
    vpy = venv / "bin" / "python"
    site = Path(_run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     None).stdout.strip())
    pinned = Path(sysconfig.get_paths()["purelib"])
    (site / "zz-pinned-environment.pth").write_text(f"{pinned}\n")

    env = {k: v for k, v in os.environ.items()
           if k not in ("AUGMENTD_BIN", "AUGMENTD_BUILD_DIR", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
                        "AUGMENTD_SERVER_ARGS", "AUGMENTD_ADDRESS")}
    system_path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
                   if p and not p.startswith(str(REPO)) and ".venv" not in p]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *system_path])
    env["OMP_NUM_THREADS"] = "1"

    found = _run([vpy, "-c", "import importlib.util as u; s = u.find_spec('augmentd'); print(s and s.origin)"], env)
    assert found.stdout.strip() == "None", \
        f"the pinned environment already provides augmentd ({found.stdout.strip()}): cannot test the wheel's"
    proc = _run([vpy, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", wheels[0]], env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    info = json.loads(_run([vpy, "-c", "import json, augmentd, augmentd.packaged as p; print(json.dumps("
                                       "{'package': augmentd.__file__, 'binary': p.binary(), 'env': p.environ()}))"],
                           env).stdout)
    assert info["package"].startswith(str(site / "augmentd")), info
    assert info["binary"] == str(site / "augmentd" / "_bin" / "augmentd"), info
    yield {"wheel": wheels[0], "venv": venv, "python": vpy, "site": site, "pinned": pinned, "env": env,
           "binary": info["binary"], "server_env": info["env"], "work": work}


def test_wheel_contents(wheel_venv):
    import zipfile

    wheel = wheel_venv["wheel"]
    names = zipfile.ZipFile(wheel).namelist()
    assert "augmentd/_bin/augmentd" in names
    assert "augmentd/_proto/augmentd/v1/service_pb2_grpc.py" in names
    assert "augmentd/nnunet/ext_trainers/augmentd_trainers.py" in names
    assert any(n.startswith("augmentd.libs/libgrpc++-") for n in names), "gRPC is not grafted into the wheel"
    meta = zipfile.ZipFile(wheel).read("augmentd-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: nvidia-cuda-runtime" in meta and "Requires-Dist: nvidia-cufft" in meta
    entry_points = zipfile.ZipFile(wheel).read("augmentd-0.1.0.dist-info/entry_points.txt").decode()
    for script in ("augmentd = augmentd.packaged:main", "augmentd-nnunet-train = augmentd.nnunet.train:main"):
        assert script in entry_points
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 2**20:.1f} MiB")


def _under(path: str, folder: Path) -> bool:
    """path lies in folder, compared both as written ($ORIGIN/.. collapsed) and with symlinks resolved."""
    return (os.path.normpath(path).startswith(os.path.normpath(folder) + "/")
            or os.path.realpath(path).startswith(os.path.realpath(folder) + "/"))


def _check_resolution(libs: dict, site: Path, cuda_root: Path) -> None:
    outside = {}
    for name, path in libs.items():
        if name == "linux-vdso.so.1":
            continue
        if path.startswith("/") and _under(path, site / "augmentd.libs"):
            continue
        if name in ("libcudart.so.13", "libcufft.so.12") and path.startswith("/") and _under(path, cuda_root):
            continue
        if name in ALLOWED_BASE and os.path.realpath(path).startswith(SYSTEM_DIRS):
            continue
        outside[name] = path
    assert not outside, f"libraries resolved outside the wheel, the CUDA wheels and the base: {outside}"
    grpc = [p for n, p in libs.items() if n.startswith(("libgrpc++", "libprotobuf", "libabsl_"))]
    assert len(grpc) > 3 and all(_under(p, site / "augmentd.libs") for p in grpc), libs


def test_libraries_resolve_inside_wheel(wheel_venv):
    """As the console script and augmentd.local_server start it: CUDA wheels through LD_LIBRARY_PATH."""
    libs = _ldd(wheel_venv["binary"], wheel_venv["server_env"])
    assert "libcudart.so.13" in libs and "libcufft.so.12" in libs, libs
    _check_resolution(libs, wheel_venv["site"], wheel_venv["pinned"] / "nvidia")


def test_resolution_check_rejects_the_build_tree():
    """The same check fails for the unpackaged executable (system libgrpc++, /usr/local/cuda or no RUNPATH)."""
    build = Path(os.environ.get("AUGMENTD_BUILD_DIR", REPO / "build"))
    libs = _ldd(str(build / "server" / "augmentd"), {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    with pytest.raises(AssertionError, match="libgrpc"):
        _check_resolution(libs, build, build / "nvidia")


def test_runpath_finds_cuda_wheels_beside(wheel_venv):
    """The usual layout, CUDA wheels in the same site-packages: found by RUNPATH alone, no LD_LIBRARY_PATH."""
    site = wheel_venv["site"]
    link = site / "nvidia"
    link.symlink_to(wheel_venv["pinned"] / "nvidia", target_is_directory=True)
    try:
        env = {k: v for k, v in wheel_venv["env"].items() if k != "LD_LIBRARY_PATH"}
        libs = _ldd(wheel_venv["binary"], env)
        assert os.path.normpath(libs["libcudart.so.13"]) == str(site / "nvidia" / "cu13" / "lib" / "libcudart.so.13"), \
            libs
        _check_resolution(libs, site, site / "nvidia")
    finally:
        link.unlink()


def test_server_from_wheel(wheel_venv):
    env = wheel_venv["env"]
    assert shutil.which("augmentd", path=env["PATH"]) == str(wheel_venv["venv"] / "bin" / "augmentd")
    proc = _run(["augmentd", "--help"], env, timeout=60)
    assert proc.returncode == 0 and "augmentd 0.1.0" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    script = r"""
import json, augmentd
from augmentd.local_server import LocalServer
with LocalServer(device="cpu") as server:
    with augmentd.Client(server.address) as client:
        health = str(client.health())
        info = client.server_info()
        maps = open("/proc/self/maps").read()
        out = {"binary": server.binary, "address": server.address, "health": health, "version": info.version,
               "devices": [d.name for d in info.devices], "grafted_in_client": "augmentd.libs" in maps}
    server.stop()
print(json.dumps(out))
"""
    proc = _run([wheel_venv["python"], "-c", script], env, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["binary"] == wheel_venv["binary"]
    assert out["address"].startswith("unix://")
    assert "SERVING" in out["health"], out
    assert out["version"] == "0.1.0" and out["devices"], out
    assert not out["grafted_in_client"], "the client process mapped the server's grafted libraries"


def _preprocessed_dataset(work: Path) -> Path:
    """Dataset987 (tests/python/dataset/synth_nnunet) planned and preprocessed by nnU-Net; a narrowed network in
    plans nnUNetPlansTiny (same preprocessed data). Reuses $AUGMENTD_TEST_NNUNET_DATA when it holds it."""
    import synth_nnunet
    from nnunetv2.utilities.crossval_split import generate_crossval_split

    from augmentd.nnunet.timing import shrink_network

    cached = os.environ.get("AUGMENTD_TEST_NNUNET_DATA")
    root = Path(cached) if cached else work / "nnunet"
    folder = root / "preprocessed" / synth_nnunet.DATASET_NAME
    if not (folder / "splits_final.json").is_file():
        synth_nnunet.write_raw_dataset(root / "raw")
        env = dict(os.environ, nnUNet_raw=str(root / "raw"), nnUNet_preprocessed=str(root / "preprocessed"),
                   nnUNet_results=str(root / "results"), OMP_NUM_THREADS="1")
        exe = Path(sys.executable).parent / "nnUNetv2_plan_and_preprocess"
        proc = _run([exe, "-d", synth_nnunet.DATASET_ID, "-c", "3d_fullres", "-np", "1", "-npfp", "1"], env)
        assert proc.returncode == 0, proc.stdout[-3000:]
        ids = sorted(p.name[:-len(".pkl")] for p in (folder / "nnUNetPlans_3d_fullres").glob("*.pkl"))
        splits = generate_crossval_split(ids, seed=12345, n_splits=5)
        (folder / "splits_final.json").write_text(json.dumps([{k: list(map(str, v)) for k, v in s.items()}
                                                              for s in splits]))
    plans = shrink_network(json.loads((folder / "nnUNetPlans.json").read_text()), "3d_fullres")
    plans["plans_name"] = "nnUNetPlansTiny"
    (folder / "nnUNetPlansTiny.json").write_text(json.dumps(plans, indent=1))
    return root


def test_smoke_trainer_from_wheel(wheel_venv):
    import synth_nnunet

    root = _preprocessed_dataset(wheel_venv["work"])
    results = wheel_venv["work"] / "results"
    env = dict(wheel_venv["env"], nnUNet_raw=str(root / "raw"), nnUNet_preprocessed=str(root / "preprocessed"),
               nnUNet_results=str(results), nnUNet_compile="false")
    proc = _run(["augmentd-nnunet-train", synth_nnunet.DATASET_ID, "3d_fullres", "0", "-tr",
                 "nnUNetTrainerAugmentd_smoke", "-p", "nnUNetPlansTiny", "-device", "cpu"], env, timeout=900,
                cwd=wheel_venv["work"])
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-5000:]
    assert "via local server unix://" in log and f"({wheel_venv['binary']})" in log, log[-3000:]
    assert str(wheel_venv["site"] / "augmentd" / "nnunet" / "ext_trainers") in log, log[:2000]
    assert "Training done." in log, log[-3000:]
    final = list(results.glob(f"{synth_nnunet.DATASET_NAME}/nnUNetTrainerAugmentd_smoke__nnUNetPlansTiny__3d_fullres/"
                              "fold_0/checkpoint_final.pth"))
    assert final, f"no checkpoint_final.pth under {results}"
