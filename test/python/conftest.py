"""onnxruntime computes the references' exact semantics (ort_reference.use_exact_kernels), and
how the sanitizer stage of scripts/test.sh spreads the tests over pytest-xdist's workers
(`--dist loadgroup`; other runs, with `--dist loadfile`, ignore the groups).

Each test file is a group, so it runs on one worker and its module fixtures (compiled models,
onnxruntime references) are made once, as `--dist loadfile` would do. A file of many
independent tests that would keep one worker busy long after the other is idle sets
XDIST_SHARDS = N at module level: its tests are dealt into N groups instead.
"""
from __future__ import annotations

import collections

import pytest

from llmc.testing.ort_reference import use_exact_kernels

use_exact_kernels()

@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    dealt = collections.Counter()
    for item in items:
        path = item.nodeid.split("::")[0]
        group = path
        shards = getattr(item.module, "XDIST_SHARDS", 1)
        if shards > 1:
            group = f"{path}#{dealt[path] % shards}"
            dealt[path] += 1
        item.add_marker(pytest.mark.xdist_group(group))
