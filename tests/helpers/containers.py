"""A container engine for the tests, and a local stand-in for the Dockerfile's base image.

No image registry is reachable here, so the tests build the base with debootstrap from the Debian mirror
apt uses, trusting the host's CA certificates (PyPI is reached through a TLS-intercepting proxy). These
settings stay in this stand-in image, never in the project's Dockerfile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

BASE_IMAGE = "localhost/experiment-template-base:bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def engine() -> str | None:
    """docker if its daemon answers, else podman, else None."""
    for name in ("docker", "podman"):
        if shutil.which(name) and subprocess.run([name, "info"], capture_output=True).returncode == 0:
            return name
    return None


def ensure_base_image(engine: str) -> str:
    """Build the stand-in base image once per machine (1 to 2 minutes), then reuse it."""
    if subprocess.run([engine, "image", "exists", BASE_IMAGE], capture_output=True).returncode == 0:
        return BASE_IMAGE
    with tempfile.TemporaryDirectory(prefix="base-image-") as scratch:
        root = Path(scratch, "rootfs")
        packages = "python3,python3-venv,python3-pip,ca-certificates"
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={packages}", "bookworm", str(root), DEBIAN_MIRROR],
            check=True,
            capture_output=True,
        )
        for certificate in Path("/usr/local/share/ca-certificates").glob("*.crt"):
            shutil.copy(certificate, root / "usr/local/share/ca-certificates" / certificate.name)
        subprocess.run(["chroot", str(root), "update-ca-certificates"], check=True, capture_output=True)
        (root / "usr/local/bin/python").symlink_to("/usr/bin/python3")
        changes = [f"ENV {name}={CA_BUNDLE}" for name in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")]
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        command = [engine, "import", *(arg for change in changes for arg in ("--change", change)), "-", BASE_IMAGE]
        subprocess.run(command, stdin=tar.stdout, check=True, capture_output=True)
        tar.wait()
    return BASE_IMAGE


# Measured on podman 4.3 (overlay): the build of the default project's image rose the disk 19 GB above where it
# settled, as podman holds torch's 6 GB layer in about three copies while it commits it.
BUILD_SPACE_GB = 20


def storage_space(engine: str) -> tuple[Path, float]:
    """The folder that holds the engine's images, and the GB free on its disk."""
    template = "{{.Store.GraphRoot}}" if engine == "podman" else "{{.DockerRootDir}}"
    found = subprocess.run([engine, "info", "--format", template], capture_output=True, text=True, check=True)
    root = Path(found.stdout.strip())
    return root, shutil.disk_usage(root).free / 1e9


def required() -> bool:
    """CI sets this: there, a missing tool (container engine, shellcheck) fails its tests instead of skipping them."""
    return os.environ.get("TEMPLATE_FULL_SUITE") == "1"
