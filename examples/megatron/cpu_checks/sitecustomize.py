"""Lets check_flags.py run Megatron-LM's argument checks on a machine with no GPU and only Debian's
PyTorch (python3-torch 1.13, CPU-only), for when no GPU machine is lent.

parse_args, validate_args and TransformerConfig are pure Python; what stands in their way is
Megatron's import chain (modules of PyTorch 2.x that 1.13 lacks) and a few device queries. This
file, found by Python's `site` at start-up when its folder is on PYTHONPATH:
  - gives every missing torch submodule (and triton) an empty stand-in module;
  - adds the few names Megatron imports from modules 1.13 does have;
  - poses as the machine the committed checks ran on: PyTorch 2.11.0+cu130 on an H200
    (compute capability 9.0), so Megatron's version and architecture branches go the same way.
Nothing it stands in for is called by the checks. verify.py checks that it gives the H200's
verdict on every committed record and still refuses the known-bad sets. Under PyTorch 2.x it
does nothing.

Usage: PYTHONPATH=examples/megatron/cpu_checks:.megatron /usr/bin/python3 examples/megatron/check_flags.py FILE
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from unittest import mock

import torch

H200_TORCH_VERSION = "2.11.0+cu130"

# PyTorch 2.x modules that 1.13 lacks, or has in a form that breaks on import under Python 3.11
ALWAYS_STUBBED = (
    "torch.distributed._shard",
    "torch.distributed.checkpoint",
    "torch.distributed.fsdp",
    "torch.distributed._tensor",
    "torch.distributed.tensor",
    "torch.distributed.device_mesh",
)
# stubbed only where the real module is missing
STUBBED_IF_MISSING = ("torch.", "triton", "numpy.dtypes")
# names Megatron imports from modules 1.13 (or Python 3.11's typing) has without them
MISSING_NAMES = (
    ("torch.cuda.memory", "CUDAPluggableAllocator"),
    ("torch.optim.optimizer", "ParamsT"),
    ("typing", "override"),
    ("torch.cuda", "MemPool"),
    ("torch.serialization", "add_safe_globals"),
)
NEW_DTYPES = ("float8_e8m0fnu", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "uint16", "uint32", "uint64")


class StandInModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith(ALWAYS_STUBBED):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if not name.startswith(STUBBED_IF_MISSING) or self._found_elsewhere(name, path, target):
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def _found_elsewhere(self, name, path, target):
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                if finder.find_spec(name, path, target) is not None:
                    return True
            except Exception:
                pass
        return False

    def create_module(self, spec):
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__, module.__name__ = [], spec, spec.name
        module.__version__ = "3.5.0"  # triton's, read by Megatron's version checks
        return module

    def exec_module(self, module):
        pass


def pose_as_the_h200_machine():
    sys.meta_path.insert(0, StandInModules())
    add_what_megatron_imports()
    pose_as_h200()


def add_what_megatron_imports():
    for dtype in NEW_DTYPES:
        if not hasattr(torch, dtype):
            setattr(torch, dtype, torch.bfloat16)
    torch.jit.script = lambda fn=None, *args, **kwargs: fn  # Megatron scripts norms at import; 1.13 cannot
    if not hasattr(torch, "compile"):
        torch.compile = lambda fn=None, *args, **kwargs: fn if fn is not None else (lambda inner: inner)
    for module_name, attr in MISSING_NAMES:
        module = importlib.import_module(module_name)
        if not hasattr(module, attr):
            setattr(module, attr, mock.MagicMock(name=f"{module_name}.{attr}"))


def pose_as_h200():
    torch.__version__ = H200_TORCH_VERSION
    torch.version.__version__ = H200_TORCH_VERSION
    h200 = types.SimpleNamespace(major=9, minor=0, name="NVIDIA H200", total_memory=150754820096,
                                 multi_processor_count=132)
    torch.cuda.get_device_properties = lambda *args, **kwargs: h200
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    torch.cuda.get_device_name = lambda *args, **kwargs: h200.name
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 8


if int(torch.__version__.split(".")[0]) < 2:  # a PyTorch 2.x (the GPU machine's) needs none of this
    pose_as_the_h200_machine()
