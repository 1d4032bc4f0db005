"""What a generated CUDA variant is: its files, the buffers it needs and the launches to run.

The generator returns one `Plan`; the builder compiles `files`, the harness spec is written from
`buffers` + `launches`, and the model reads `estimates`. Nothing about a variant is re-typed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import yaml

from forge.space import Constraint

TEMPLATES = Path(__file__).parent / "templates"
SMEM_PAD = 8   # elements of padding per smem row: 16 B keeps cp.async alignment, spreads banks

CTYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}
ELT = {"float32": 4, "float16": 2, "bfloat16": 2}

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                          lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


@dataclass
class Buffer:
    """A device buffer: `in`/`out` map to the op's tensor of the same name; `scratch` is zeroed."""

    name: str
    kind: str          # "in" | "out" | "scratch"
    nbytes: int


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int                      # dynamic shared memory bytes
    args: list[str]                # "buf:NAME" | "null" | "i32:V" | "f32:V"


@dataclass
class Plan:
    files: dict[str, str]
    main: str
    buffers: list[Buffer]
    launches: list[Launch]
    estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def kernels(self) -> list[str]:
        return [l.kernel for l in self.launches]


def load_space_values(section: str) -> dict[str, list]:
    return yaml.safe_load((Path(__file__).parent / "spaces.yaml").read_text())[section]


def render(template: str, **ctx: Any) -> str:
    return _env.get_template(template).render(**ctx)


def common_header() -> str:
    return (TEMPLATES / "forge_cuda.cuh").read_text()


def config_header(title: str, dtype: str, consts: dict[str, Any]) -> str:
    """forge_config.h: the tile configuration and problem shape as constexpr (never -D flags)."""
    lines = [f"// forge_config.h -- generated: {title}", "#pragma once", "#include <cuda_fp16.h>",
             "#include <cuda_bf16.h>", f"typedef {CTYPES[dtype]} elem_t;   // {dtype}", "namespace cfg {"]
    for k, v in consts.items():
        if isinstance(v, bool):
            lines.append(f"constexpr bool {k} = {'true' if v else 'false'};")
        elif isinstance(v, float):
            lines.append(f"constexpr float {k} = {v!r}f;")
        else:
            lines.append(f"constexpr int {k} = {int(v)};")
    lines.append("}  // namespace cfg")
    return "\n".join(lines) + "\n"


def vec_elems(c, dtype: str):
    """Elements per vector access of a config's `vec_bytes` (at least one)."""
    return np.maximum(1, c["vec_bytes"] // ELT[dtype])


def vec_byte_values(values: list[int], dtype: str) -> list[int]:
    """The `vec_bytes` choices an element type can use: no access narrower than one element."""
    return [b for b in values if b >= ELT[dtype]]


def vec_constraints(length: int, dtype: str, what: str) -> list[Constraint]:
    """Vector accesses along a contiguous run of `length` elements (`what` names it): the vector
    width must divide it (every run starts aligned), and one element per access is offered only
    where no 4-byte access divides it (an odd 16-bit length: GPT-2's vocabulary, 50257)."""
    elt = ELT[dtype]
    return [
        Constraint("align", lambda c: length % vec_elems(c, dtype) == 0,
                   lambda c: f"{what}={length} is not a multiple of the vector width {int(vec_elems(c, dtype))}"),
        Constraint("narrow", lambda c: (c["vec_bytes"] >= 4) | (length % max(1, 4 // elt) != 0),
                   lambda c: f"{c['vec_bytes']}-byte accesses: {what}={length} takes 4-byte ones"),
    ]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def reduced(n: int, unit: int, keep: int = 2) -> int:
    """A dimension cut down for host emulation: `keep` whole blocks of `unit` and n's own ragged
    tail (n % unit), so the smaller problem runs the same full-block and tail code; n itself when
    it is no larger."""
    small = keep * unit + n % unit
    return n if n <= small else small


def log2e() -> float:
    return 1.0 / math.log(2.0)
