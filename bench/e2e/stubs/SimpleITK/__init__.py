"""Import-only stand-in for SimpleITK on the GPU machine (the real wheel, ~50 MB, is too big to carry).

nnU-Net 2.8.1 imports SimpleITK at module level (``nnunetv2.imageio.simpleitk_reader_writer``,
``default_preprocessor``) but the end-to-end benchmark never calls it: its raw dataset names ``NibabelIO`` as
reader/writer in ``dataset.json``. Any real use raises ``RuntimeError`` naming the attribute asked for.
Put this folder on PYTHONPATH only where the real SimpleITK is absent (``bench/e2e/env.sh`` does).
"""

STUB = True


def __getattr__(name: str):
    if name.startswith("__"):  # import machinery and introspection probe dunders: plain "missing" answers
        raise AttributeError(name)
    raise RuntimeError(f"SimpleITK.{name}: SimpleITK is a stub here (bench/e2e/stubs); the end-to-end run reads "
                       f"and writes images with nnU-Net's NibabelIO - install SimpleITK to use SimpleITK readers")
