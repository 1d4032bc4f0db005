"""YAML files users write (configs, suites, targets), read with YAML 1.2's numbers.

PyYAML follows YAML 1.1, where a float needs a dot: `eps: 1e-5` reads as the string "1e-5" and
is then refused as "not a number", while the same value on the command line is one. The loader
here also resolves exponent forms without a dot (1e-5, 2E+3) as floats, as YAML 1.2 does.
"""
from __future__ import annotations

import re
from typing import Any

import yaml


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)
