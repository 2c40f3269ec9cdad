"""The topology classes have every method clients/surface.tsv lists for them."""

import os
from pathlib import Path

import pytest

import rlockd

CLASSES = {"cluster": rlockd.Cluster, "replicated": rlockd.Replicated}


def _table():
    path = os.environ.get("RLOCKD_SURFACE") or Path(__file__).resolve().parents[2] / "surface.tsv"
    if not Path(path).is_file():
        pytest.skip(f"no surface table at {path} (RLOCKD_SURFACE names it)")
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, *classes = line.split("\t")
            rows.append((name, classes))
    return rows


def test_every_topology_class_has_the_table_s_methods():
    missing = [f"{cls}.{name}" for name, classes in _table() for cls in classes
               if not hasattr(CLASSES[cls], name)]
    assert not missing, f"missing from the Python front end: {', '.join(missing)}"
