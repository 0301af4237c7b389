"""The generated Dockerfile, built for real from the project's uv.lock, trains the same bits as the host.

Slow: the image holds torch (several GB). CI installs podman and sets TEMPLATE_FULL_SUITE=1, so there a
missing engine fails these tests instead of skipping them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers import containers
from helpers.commands import run
from helpers.generation import DEFAULT_PACKAGE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine() -> str:
    found = containers.engine()
    if found is None:
        if containers.required():
            pytest.fail("no usable docker or podman, but TEMPLATE_FULL_SUITE=1 (see .ci/run)")
        pytest.skip("no usable docker or podman here")
    return found


def test_dockerfile_is_hadolint_clean(default_project: Path) -> None:
    run(default_project, "nox", "--non-interactive", "-s", "docker_lint")


def test_image_built_from_the_lock_trains_the_same_bits_as_the_host(default_project: Path, engine: str) -> None:
    root, free_gb = containers.storage_space(engine)
    if free_gb < containers.BUILD_SPACE_GB:  # say so now, not as "no space left" from the middle of a layer commit
        short = f"{free_gb:.1f} GB free under {root}; building the image needs about {containers.BUILD_SPACE_GB} GB"
        if containers.required():
            pytest.fail(short)
        pytest.skip(short)
    build_options = ["--build-arg", f"BASE_IMAGE={containers.ensure_base_image(engine)}"]
    if engine == "podman":  # reuse the host's uv cache while building, so that torch is not downloaded again
        cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
        build_options += ["--volume", f"{cache}:/root/.cache/uv"]
    try:
        done = run(default_project, "nox", "--non-interactive", "-s", "docker", "--", *build_options)
    finally:
        subprocess.run([engine, "rmi", "--force", f"localhost/{DEFAULT_PACKAGE}:nox"], capture_output=True)
    output = done.stdout + done.stderr
    hashes = dict(re.findall(r"params_sha256 (image|host)\s+([0-9a-f]{64})", output))
    assert set(hashes) == {"image", "host"}, output[-3000:]
    assert hashes["image"] == hashes["host"]
    assert "identical: the image reproduces the host run bit for bit" in output
