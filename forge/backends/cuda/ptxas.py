"""Parse `ptxas -v` output (stderr of nvcc -Xptxas -v) into per-kernel resources (cuda.md §3.3).

Robust by construction: a record starts at "Compiling entry function", the "Function properties"
block attaches stack/spill numbers to the named function, and the "Used ..." line is split on
", " with each item matched on its own, so field order and new fields do not break parsing.
cmem is absent on sm_90+ (cuda.md §3.1); missing items read as 0.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>sm_\w+)'")
_PROPS = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_GMEM = re.compile(r"(\d+) bytes gmem(?:, (\d+) bytes cmem\[3\])?")
_ITEMS = {
    "registers": re.compile(r"^(\d+) registers$"),
    "barriers": re.compile(r"^used (\d+) barriers$"),
    "smem": re.compile(r"^(\d+) bytes smem$"),
    "cumulative_stack": re.compile(r"^(\d+) bytes cumulative stack size$"),
}
_CMEM = re.compile(r"^(\d+) bytes cmem\[(\d+)\]$")


@dataclass
class KernelResources:
    name: str
    arch: str = ""
    registers: int = 0
    barriers: int = 0
    smem: int = 0                 # static __shared__ bytes (excludes the 1 KB reserve, cuda.md §3.2)
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    cumulative_stack: int = 0
    cmem: dict[int, int] = field(default_factory=dict)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads

    def as_dict(self) -> dict:
        d = asdict(self)
        d["cmem"] = {str(k): v for k, v in self.cmem.items()}
        return d


@dataclass
class PtxasReport:
    kernels: dict[str, KernelResources]
    gmem: int = 0
    warnings: list[str] = field(default_factory=list)

    def kernel(self, name: str) -> KernelResources:
        return self.kernels[name]


def parse_ptxas(text: str) -> PtxasReport:
    """Kernels (entry functions) with their resources; non-entry functions are dropped."""
    kernels: dict[str, KernelResources] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    current: KernelResources | None = None
    props_for: str | None = None
    gmem = 0
    warnings: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("ptxas warning"):
            warnings.append(line.split(":", 1)[1].strip())
            continue
        m = _ENTRY.search(line)
        if m:
            current = kernels.setdefault(m["name"], KernelResources(m["name"], m["arch"]))
            props_for = None
            continue
        m = _PROPS.search(line)
        if m:
            props_for = m["name"]
            continue
        m = _FRAME.search(line)
        if m and props_for:
            frames[props_for] = tuple(int(x) for x in m.groups())  # type: ignore[assignment]
            continue
        if "Used " in line and current is not None:
            body = line.split("Used ", 1)[1]
            for item in (s.strip() for s in body.split(", ")):
                for key, rx in _ITEMS.items():
                    mm = rx.match(item)
                    if mm:
                        setattr(current, key, int(mm.group(1)))
                mm = _CMEM.match(item)
                if mm:
                    current.cmem[int(mm.group(2))] = int(mm.group(1))
            continue
        m = _GMEM.search(line)
        if m and "gmem" in line:
            gmem = int(m.group(1))
    for name, k in kernels.items():
        if name in frames:
            k.stack_frame, k.spill_stores, k.spill_loads = frames[name]
    return PtxasReport(kernels, gmem, warnings)
