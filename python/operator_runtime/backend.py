"""Backend names, selection and availability."""

from __future__ import annotations

import enum

import torch


class Backend(str, enum.Enum):
    NVIDIA = "nvidia"
    TILELANG = "tilelang"
    METAX = "metax"
    CPU = "cpu"

    def __str__(self) -> str:
        return self.value


def parse_backend(backend: str | Backend) -> Backend:
    """A Backend from an enum member or a case-insensitive name."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        try:
            return Backend(backend.strip().lower())
        except ValueError:
            pass
        names = ", ".join(b.value for b in Backend)
        raise ValueError(f"unknown backend '{backend}' (known: {names})")
    raise ValueError(f"backend must be a str or Backend, got {type(backend).__name__}")


# The seed project's name for parse_backend.
normalize_backend = parse_backend


def default_backend(device: torch.device) -> Backend:
    """The backend that serves tensors on `device` when none is named."""
    if device.type == "cpu":
        return Backend.CPU
    if device.type == "cuda":
        return Backend.NVIDIA
    raise ValueError(f"no backend serves tensors on device '{device}'; name one explicitly")
