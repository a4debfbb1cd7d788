"""`python -m operator_runtime info`: what this installation holds and what
can run here."""

from __future__ import annotations

import platform

import torch

import operator_runtime as oprt
from operator_runtime import Backend
from operator_runtime._internal.fatbin import cuda_targets
from operator_runtime._internal.library import fast_call_module, library_path, tensor_access_api, torch_build


def _cuda_targets(path) -> str:
    try:
        targets = cuda_targets(path)
    except (OSError, ValueError) as error:
        return f"unknown ({error})"
    return ", ".join(targets) if targets else "none (built without the NVIDIA backend)"


def _devices() -> list[str]:
    devices = [f"cpu: {platform.processor() or platform.machine()}"]
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append(f"cuda:{index}: {props.name} (sm_{props.major}{props.minor}, "
                           f"{props.total_memory / 2**30:.0f} GiB)")
    else:
        devices.append("cuda: none visible" + ("" if torch.version.cuda else " (torch built without CUDA)"))
    return devices


def _tilelang_version() -> str:
    try:
        import tilelang
    except Exception as error:  # ImportError, or a broken install raising anything
        return f"not importable ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    return getattr(tilelang, "__version__", "unknown version")


def _tensor_reads() -> str:
    if tensor_access_api() is not None:
        return f"through torch's C++ objects (_tensor_access, built for torch {torch_build()})"
    return "through Python (_tensor_access not built, OPRT_TENSOR_ACCESS=0, or built for another torch)"


def info_lines() -> list[str]:
    path = library_path()
    fast = fast_call_module()
    lines = [f"operator_runtime {oprt.__version__}",
             f"library: {path}",
             f"C ABI version: {oprt.abi_version()}",
             f"CUDA targets built: {_cuda_targets(path)}",
             f"C fast path: {'loaded (' + fast.__file__ + ')' if fast is not None else 'not loaded (Python path)'}",
             f"tensor reads: {_tensor_reads()}",
             f"torch: {torch.__version__} (CUDA {torch.version.cuda or 'none'})",
             f"TileLang: {_tilelang_version()}",
             "backends:"]
    for backend in Backend:
        reason = oprt.backend_unavailable_reason(backend.value)
        lines.append(f"  {backend.value:<9} {'available' if reason is None else 'unavailable: ' + reason}")
    lines.append("devices:")
    lines += [f"  {device}" for device in _devices()]
    return lines


def main(args) -> int:
    print("\n".join(info_lines()))
    return 0
