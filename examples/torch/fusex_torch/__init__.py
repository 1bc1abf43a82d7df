"""fusex plans as PyTorch custom operators, with autograd and fake kernels.

    import fusex_torch as fxt
    y = fxt.layer_norm(x, weight, bias, 1e-5)      # torch.ops.fusex.layer_norm + its fused backward
    q, k, v = fxt.qkv_split_rope(qkv, cos, sin, n_head, n_query_groups, head_size, n_elem)

Importing the package builds the C++ extension once (torch.utils.cpp_extension,
cached by ninja; g++ for the host executor, nvcc for the CUDA executor when
torch sees a GPU) and registers, for every forward op, its backward (the
fusex backward plan, from fx::vjp) and fake kernels that let torch.compile
trace through it. Operators: gelu (exact and tanh), swiglu, layer_norm,
rms_norm and qkv_split_rope (litgpt's qkv split and RoPE, k and v expanded to
n_head heads). float32 and bfloat16, on CPU tensors (and CUDA tensors in a
CUDA build).
"""

from __future__ import annotations

import os
import pathlib

import torch
import torch.utils.cpp_extension

_HERE = pathlib.Path(__file__).resolve().parent
_SOURCES = _HERE.parent
_INCLUDE = _SOURCES.parent.parent / "include"


def _cuda_build() -> bool:
    flag = os.environ.get("FUSEX_TORCH_CUDA")
    if flag is not None:
        return flag == "1"
    return torch.cuda.is_available() and torch.utils.cpp_extension.CUDA_HOME is not None


def build(verbose: bool = False) -> str:
    """Builds (or finds, unchanged) the extension and loads it; returns its build folder.

    FUSEX_TORCH_BUILD names the build folder (default: torch's extension cache),
    FUSEX_TORCH_MARCH the host target (default native), FUSEX_TORCH_CUDA=0/1
    forces the CPU-only or the CUDA build."""
    cuda = _cuda_build()
    march = os.environ.get("FUSEX_TORCH_MARCH", "native")
    cflags = ["-O3", f"-march={march}", "-fopenmp", "-fconstexpr-ops-limit=4294967296", "-Wno-unused-parameter"]
    sources = ["fusex_ops.cpp", "fusex_ops_f32.cpp", "fusex_ops_bf16.cpp"]
    name = "fusex_torch_ops"
    cuda_flags = []
    if cuda:
        if not torch.cuda.is_available():  # building for a GPU this machine lacks: Hopper unless told
            os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        cflags.append("-DFUSEX_TORCH_CUDA")
        sources = ["fusex_ops_cuda.cu", "fusex_ops_f32_cuda.cu", "fusex_ops_bf16_cuda.cu"]
        name = "fusex_torch_ops_cuda"
        cuda_flags = ["-O3", "-DFUSEX_TORCH_CUDA", "--expt-relaxed-constexpr", "-Xcompiler=-fopenmp",
                      "-Xcudafe", "--max_cost_constexpr_call=1000000000"]
    folder = os.environ.get("FUSEX_TORCH_BUILD")
    if folder:
        os.makedirs(folder, exist_ok=True)
    torch.utils.cpp_extension.load(
        name=name,
        sources=[str(_SOURCES / s) for s in sources],
        extra_include_paths=[str(_INCLUDE), str(_SOURCES)],
        extra_cflags=cflags,
        extra_cuda_cflags=cuda_flags,
        extra_ldflags=["-fopenmp"] + (["-lcublas"] if cuda else []),
        build_directory=folder,
        with_cuda=cuda,
        is_python_module=False,
        verbose=verbose,
    )
    return folder or torch.utils.cpp_extension._get_build_directory(name, verbose)


build(verbose=os.environ.get("FUSEX_TORCH_VERBOSE") == "1")

from . import _registrations  # noqa: E402,F401  (autograd and fake kernels)
from ._ops import gelu, layer_norm, qkv_split_rope, rms_norm, swiglu  # noqa: E402
from ._modules import GeLU, LayerNorm, RMSNorm  # noqa: E402

__all__ = ["build", "gelu", "layer_norm", "rms_norm", "swiglu", "qkv_split_rope", "LayerNorm", "RMSNorm", "GeLU"]
