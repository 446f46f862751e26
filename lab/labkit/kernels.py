"""Debian kernels for the lab: resolved, downloaded and unpacked into the cache.

This module owns the private apt (its own sources list, lists and cache per suite, so the host
is never upgraded), the resolution of a (meta)package to the kernel image it depends on (and of
a virtual package to one that provides it, for `packages`), the download of that image and of
busybox-static for the same suite and architecture, and the unpacked trees the initramfs is
built from. Everything lands under the cache directory and is reused while the archive serves
the same versions.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LabError

# The archive the host's apt uses, so the lab asks the mirror this machine is set up for.
HOST_SOURCES = [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]
# Lists younger than this are used as they are.
LISTS_MAX_AGE_S = 24 * 3600


@dataclass
class KernelSpec:
    """One [[kernel]] of kernels.toml."""

    name: str
    suite: str
    arch: str
    package: str
    tags: list[str] = field(default_factory=list)


@dataclass
class Kernel:
    """A kernel unpacked in the cache, ready to boot."""

    spec: KernelSpec
    version: str  # the package version, e.g. 6.12.57-1
    release: str  # the kernel release, e.g. 6.12.57+deb13-rt-amd64
    tree: Path  # the unpacked package
    busybox: Path

    @property
    def vmlinuz(self) -> Path:
        return _installed(self.tree, self.release, f"boot/vmlinuz-{self.release}", "vmlinuz")

    @property
    def config(self) -> Path:
        return _installed(self.tree, self.release, f"boot/config-{self.release}", "config")

    @property
    def modules(self) -> Path:
        for base in ("lib", "usr/lib"):
            if (self.tree / base / "modules" / self.release).is_dir():
                return self.tree / base / "modules" / self.release
        return self.tree / "lib" / "modules" / self.release


def _installed(tree: Path, release: str, classic: str, name: str) -> Path:
    """Where a kernel package put a file: `/boot/...` up to 6.x; from Debian's 7.x packages
    (the image split into linux-binary-REL and linux-base-REL) `/usr/lib/modules/REL/NAME`."""
    for path in (tree / classic, tree / "usr/lib/modules" / release / name, tree / "lib/modules" / release / name):
        if path.exists():
            return path
    return tree / classic


def load_specs(path: Path) -> list[KernelSpec]:
    import tomllib

    with open(path, "rb") as f:
        doc = tomllib.load(f)
    specs = []
    for k in doc.get("kernel", []):
        name = k.get("name", "?")
        unknown = set(k) - {"name", "suite", "arch", "package", "tags"}
        if unknown:
            raise LabError(f"{path}: kernel {name}: unknown key(s) {sorted(unknown)}")
        for key in ("name", "suite", "arch", "package"):
            if key not in k:
                raise LabError(f"{path}: kernel {name}: '{key}' is missing")
        if k["arch"] not in ("amd64", "arm64"):
            raise LabError(f"{path}: kernel {name}: arch '{k['arch']}' (the lab boots amd64 and arm64)")
        specs.append(KernelSpec(name, k["suite"], k["arch"], k["package"], list(k.get("tags", []))))
    return specs


def host_mirror() -> str:
    """The Debian mirror of the host's apt sources (the first URI that is not a security one)."""
    for src in HOST_SOURCES:
        if not src.exists():
            continue
        for m in re.finditer(r"(?:URIs:\s*|^deb\s+(?:\[[^]]*\]\s+)?)(\S+)", src.read_text(), re.M):
            uri = m.group(1)
            if "security" not in uri and uri.startswith(("http://", "https://", "file:")):
                return uri.rstrip("/")
    raise LabError("no Debian mirror in the host's apt sources; pass --mirror URL")


class Archive:
    """A private apt for one suite, both architectures, under cache/apt/SUITE."""

    def __init__(self, cache: Path, suite: str, mirror: str, log):
        self.dir = cache / "apt" / suite
        self.suite = suite
        self.mirror = mirror
        self.log = log
        for d in ("lists/partial", "cache/archives/partial", "etc"):
            (self.dir / d).mkdir(parents=True, exist_ok=True)
        self.sources = self.dir / "etc" / "sources.sources"
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        # A backports suite holds only what was backported: its base suite comes with it (for
        # busybox-static and the packages' dependencies), and the backports suite is the
        # default release, so a package it has is taken from it (apt pins backports low).
        suites = suite
        self.default_release = None
        if suite.endswith("-backports"):
            suites = f"{suite.removesuffix('-backports')} {suite}"
            self.default_release = suite
        text = (
            f"Types: deb\nURIs: {mirror}\nSuites: {suites}\nComponents: main\n"
            f"Architectures: amd64 arm64\nSigned-By: {keyring}\n"
        )
        if not self.sources.exists() or self.sources.read_text() != text:
            self.sources.write_text(text)
            stamp = self.dir / "updated"
            if stamp.exists():
                stamp.unlink()

    def _opts(self) -> list[str]:
        return [
            "-o", f"Dir::Etc::sourcelist={self.sources}",
            "-o", "Dir::Etc::sourceparts=-",
            *(["-o", f"APT::Default-Release={self.default_release}"] if self.default_release else []),
            "-o", f"Dir::State::Lists={self.dir / 'lists'}",
            "-o", f"Dir::Cache={self.dir / 'cache'}",
            "-o", "Dir::State::status=/dev/null",
            "-o", "APT::Architectures::=amd64",
            "-o", "APT::Architectures::=arm64",
            "-o", "Debug::NoLocking=1",
        ]  # fmt: skip

    def update(self) -> None:
        stamp = self.dir / "updated"
        if stamp.exists() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE_S:
            return
        self.log(f"apt update ({self.suite}, {self.mirror})")
        r = subprocess.run(["apt-get", *self._opts(), "-q", "update"], capture_output=True, text=True)
        if r.returncode != 0 or "Err:" in r.stdout:
            raise LabError(f"apt update of {self.suite} failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        stamp.touch()

    def show(self, package: str, arch: str) -> dict[str, str]:
        r = subprocess.run(
            ["apt-cache", *self._opts(), "show", "--no-all-versions", f"{package}:{arch}"],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0 or not r.stdout.strip():
            raise LabError(f"{package}:{arch} is not in Debian {self.suite} (apt-cache show found nothing)")
        fields: dict[str, str] = {}
        for line in r.stdout.split("\n\n")[0].splitlines():
            if ":" in line and not line.startswith(" "):
                k, v = line.split(":", 1)
                fields[k] = v.strip()
        return fields

    def provider(self, virtual: str, arch: str) -> str | None:
        """A real package that provides `virtual` (`apt-cache showpkg`'s Reverse Provides), or None."""
        r = subprocess.run(
            ["apt-cache", *self._opts(), "showpkg", f"{virtual}:{arch}"], capture_output=True, text=True
        )
        lines = r.stdout.splitlines()
        if "Reverse Provides: " not in lines:
            return None
        for line in lines[lines.index("Reverse Provides: ") + 1 :]:
            m = re.match(r"([a-z0-9][a-z0-9+.-]*)(?::\S+)? ", line)
            if m:
                return m.group(1)
        return None

    def download(self, package: str, arch: str, version: str, into: Path) -> Path:
        into.mkdir(parents=True, exist_ok=True)
        name = f"{package}_{version.replace(':', '%3a')}_{arch}.deb"
        deb = into / name
        if deb.exists():
            return deb
        self.log(f"downloading {package}:{arch} {version} ({self.suite})")
        r = subprocess.run(
            ["apt-get", *self._opts(), "-q", "download", f"{package}:{arch}={version}"],
            cwd=into,
            capture_output=True,
            text=True,
        )
        if r.returncode != 0 or not deb.exists():
            raise LabError(f"downloading {package}:{arch}={version} from {self.suite} failed: {r.stderr.strip()}")
        return deb


def _image_package(archive: Archive, package: str, arch: str) -> tuple[str, str]:
    """(package, version) of the kernel image a metapackage depends on, or the package itself."""
    fields = archive.show(package, arch)
    if package.startswith("linux-image-") and re.match(r"linux-image-\d", package):
        return package, fields["Version"]
    for dep in fields.get("Depends", "").split(","):
        m = re.match(r"\s*(linux-image-\d\S*)", dep)
        if m:
            image = m.group(1)
            return image, archive.show(image, arch)["Version"]
    raise LabError(f"{package}:{arch} in {archive.suite} depends on no linux-image package")


def _split_parts(archive: Archive, image: str, arch: str, version: str) -> list[str]:
    """The packages Debian split a 7.x kernel image into, from the image's Depends:
    linux-binary-REL (the kernel), linux-base-REL (its config, System.map) and
    linux-modules-REL, each at the image's version; none for a 6.x image, which holds it all."""
    release = image.removeprefix("linux-image-")
    parts = []
    for dep in archive.show(image, arch).get("Depends", "").split(","):
        m = re.match(r"\s*(linux-(?:binary|base|modules)-(\S+))\s*(?:\(=\s*(\S+)\))?", dep)
        if m and m.group(2) == release:
            if m.group(3) and m.group(3) != version:
                raise LabError(f"{image} {version} depends on {m.group(1)} {m.group(3)}, another version")
            parts.append(m.group(1))
    return parts


def _unpack(deb: Path, dest: Path) -> None:
    """Unpacks `deb` into `dest` once (several packages may share one tree: a marker per deb)."""
    marker = dest / f".unpacked-{deb.name}"
    if marker.exists() or (dest / ".unpacked").exists() and not any(dest.glob(".unpacked-*")):
        return
    dest.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"unpacking {deb.name}: {r.stderr.strip()}")
    marker.touch()


def fetch(spec: KernelSpec, cache: Path, mirror: str, log) -> Kernel:
    """The kernel of `spec`, downloaded and unpacked (reused from the cache when there)."""
    archive = Archive(cache, spec.suite, mirror, log)
    archive.update()
    image, version = _image_package(archive, spec.package, spec.arch)
    release = image.removeprefix("linux-image-").removesuffix("-unsigned")
    debs = cache / "debs"
    tree = cache / "kernels" / f"{image}_{version}"
    for package in [image, *_split_parts(archive, image, spec.arch, version)]:
        _unpack(archive.download(package, spec.arch, version, debs), tree)
    kernel_file = _installed(tree, release, f"boot/vmlinuz-{release}", "vmlinuz")
    if not kernel_file.exists():
        raise LabError(
            f"{image} {version} (with the packages it is split into) holds no boot/vmlinuz-{release} "
            f"or usr/lib/modules/{release}/vmlinuz"
        )
    bb_version = archive.show("busybox-static", spec.arch)["Version"]
    bb_tree = cache / "busybox" / f"{spec.arch}_{bb_version.replace(':', '%3a')}"
    _unpack(archive.download("busybox-static", spec.arch, bb_version, debs), bb_tree)
    busybox = next((p for p in (bb_tree / "bin/busybox", bb_tree / "usr/bin/busybox") if p.exists()), None)
    if busybox is None:
        raise LabError(f"busybox-static {bb_version} ({spec.arch}) holds no bin/busybox")
    return Kernel(spec, version, release, tree, busybox)


def default_cache() -> Path:
    env = os.environ.get("RTLAB_LAB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rtlab-lab"
