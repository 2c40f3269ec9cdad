"""Wheel build hook: ships the prebuilt rlockd binary as package data.

The binary is the static Linux x86-64 build of the repository's Rust crate
(`clients/test.sh` makes it). It is taken from RLOCKD_BINARY when set, else
from the repository's target directory. The wheel is tagged for that
platform, since it carries native code; nothing is compiled on the machine
that installs it.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# The static Linux x86-64 binary (glibc's static build) runs on glibc and musl systems alike.
# A release on another platform names that platform's tag in RLOCKD_WHEEL_TAG
# (clients/RELEASING.md).
TAG = "py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"


class RlockdBinaryHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        root = pathlib.Path(self.root)
        given = os.environ.get("RLOCKD_BINARY")
        binary = (
            pathlib.Path(given)
            if given
            else root.parent.parent / "target" / "x86_64-unknown-linux-gnu" / "release" / "rlockd"
        )
        if not binary.is_file():
            raise RuntimeError(
                f"rlockd binary not found at {binary}: build it with clients/test.sh "
                "(static build) or set RLOCKD_BINARY to an rlockd executable"
            )
        build_data["pure_python"] = False
        build_data["tag"] = os.environ.get("RLOCKD_WHEEL_TAG") or TAG
        # Debug info is of no use to a test: pack a stripped copy when binutils are there.
        self._staging = tempfile.mkdtemp(prefix="rlockd-wheel-")
        staged = pathlib.Path(self._staging) / "rlockd"
        shutil.copy2(binary, staged)
        if shutil.which("strip"):
            subprocess.run(["strip", str(staged)], check=False)
        staged.chmod(0o755)
        build_data["force_include"][str(staged)] = "rlockd/bin/rlockd"

    def finalize(self, version, build_data, artifact_path):
        staging = getattr(self, "_staging", None)
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
