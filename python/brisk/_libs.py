"""Finds the CUDA libraries the extension links (cuBLASLt) before it is imported.

The wheel's RUNPATH points at site-packages/nvidia/cu13/lib, where the nvidia-cublas wheel
puts them; when brisk and nvidia-cublas sit in different site directories (a virtual
environment over a system one), that path misses, so the library is loaded here by its
full path first. Without either, the system's loader path (a CUDA toolkit) is used."""

import ctypes
import importlib.util
import os

_CUBLASLT = "libcublasLt.so.13"


def nvidia_lib_dirs():
    """The nvidia/cu13/lib directories of every site directory that has one."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs = []
    for root in spec.submodule_search_locations:
        lib = os.path.join(root, "cu13", "lib")
        if os.path.isfile(os.path.join(lib, _CUBLASLT)):
            dirs.append(lib)
    return dirs


def preload():
    for lib in nvidia_lib_dirs():
        try:
            ctypes.CDLL(os.path.join(lib, _CUBLASLT), mode=ctypes.RTLD_GLOBAL)
            return lib
        except OSError:
            continue
    return None
