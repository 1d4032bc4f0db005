"""YAML files users write (configs, suites, targets), read with YAML 1.2's numbers.

PyYAML follows YAML 1.1, where a float needs a dot: `eps: 1e-5` reads as the string "1e-5" and
is then refused as "not a number", while the same value on the command line is one. The loader
here also resolves exponent forms without a dot (1e-5, 2E+3) as floats, as YAML 1.2 does, and
refuses a key given twice in one mapping, which PyYAML would settle silently by keeping the last
(`op: rmsnorm` then `op: softmax` tuned softmax without a word).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeInputError


class _Loader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:        # an unhashable key: PyYAML's own error says so below
                first = None
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found the key {key!r} a second time (first at line {first.start_mark.line + 1})",
                    key_node.start_mark)
            try:
                seen[key] = key_node
            except TypeError:
                pass
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


def read_yaml_file(path: str | Path, field: str) -> Any:
    """A user's YAML file, parsed; a file that is not UTF-8 text or not valid YAML is their input
    error (named by `field`), not a traceback."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ForgeInputError(field, f"not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from None
    except OSError as exc:
        raise ForgeInputError(field, f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise ForgeInputError(field, f"not valid YAML: {exc}") from None
