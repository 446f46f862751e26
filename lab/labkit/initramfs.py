"""The initramfs a lab VM boots: busybox, the static rtlab, the guest scripts and modules.

This module owns the archive's layout (busybox init with lab/guest/inittab and rc, rtlab at
/usr/bin/rtlab, lab/guest/* under /lab, a scenario's Debian packages where Debian installs
them), choosing the kernel modules the guest needs (the disk, file systems, hot-plugged
devices) with their dependencies from each module's .modinfo, unpacking them (.ko.xz, .ko.zst,
.ko.gz) and writing the newc cpio archive itself, uncompressed (every kernel boots it; no cpio
or gzip tool needed). Images are cached by content: one per kernel without packages, and one per
kernel and package set (`initramfs-RELEASE-LABEL-HASH.cpio`, LABEL `base` or the packages).
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from .errors import LabError
from .kernels import Kernel
from .packages import Bundle, loader_links

# What the scenarios need that Debian builds as modules: the PCI transport for virtio on 6.1,
# the disk that outlives a reboot, the file systems boards keep data on, the virtio-serial
# device hot-plugged through the monitor, and vfat's code pages.
WANTED = [
    "virtio_pci",
    "virtio_mmio",
    "virtio_blk",
    "virtio_console",
    "crc32c_generic",
    "crc32c_intel",
    "crc32c_arm64",
    "libcrc32c",
    "ext4",
    "vfat",
    "nls_cp437",
    "nls_iso8859-1",
    "nls_ascii",
    "f2fs",
]


def _decompress(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        r = subprocess.run(["zstd", "-dc", str(path)], capture_output=True)
        if r.returncode != 0:
            raise LabError(f"{path.name}: zstd -dc failed (apt-get install zstd)")
        return r.stdout
    return data


def _module_name(rel: str) -> str:
    base = rel.rsplit("/", 1)[-1]
    for ext in (".ko.xz", ".ko.zst", ".ko.gz", ".ko"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return base.replace("-", "_")


def modinfo(ko: bytes) -> dict[str, str]:
    """The `.modinfo` section of a 64-bit little-endian kernel module (amd64, arm64)."""
    if ko[:4] != b"\x7fELF" or ko[4] != 2 or ko[5] != 1:
        raise LabError("not a 64-bit little-endian ELF module")
    shoff = int.from_bytes(ko[0x28:0x30], "little")
    shentsize = int.from_bytes(ko[0x3A:0x3C], "little")
    shnum = int.from_bytes(ko[0x3C:0x3E], "little")
    shstrndx = int.from_bytes(ko[0x3E:0x40], "little")

    def section(i: int) -> tuple[int, int, int]:
        h = ko[shoff + i * shentsize : shoff + (i + 1) * shentsize]
        name = int.from_bytes(h[0:4], "little")
        return name, int.from_bytes(h[0x18:0x20], "little"), int.from_bytes(h[0x20:0x28], "little")

    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name_off, off, size = section(i)
        name = ko[stroff + name_off : ko.index(b"\0", stroff + name_off)]
        if name == b".modinfo":
            info: dict[str, str] = {}
            for item in ko[off : off + size].split(b"\0"):
                if b"=" in item:
                    k, v = item.split(b"=", 1)
                    info.setdefault(k.decode(errors="replace"), v.decode(errors="replace"))
            return info
    return {}


def modules_in_order(kernel: Kernel, wanted: list[str]) -> list[tuple[str, bytes]]:
    """The modules to insmod, dependencies first, as (name, ELF bytes); modules built into this
    kernel or absent from it are left out. Dependencies come from each module's `.modinfo`
    (`depends=`), so no modules.dep (made by depmod at install) is needed."""
    files: dict[str, Path] = {}
    for path in (kernel.modules / "kernel").rglob("*.ko*"):
        files[_module_name(path.name)] = path
    if not files:
        raise LabError(f"{kernel.spec.name}: no modules under {kernel.modules}")
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen or name not in files:
            return
        seen.add(name)
        ko = _decompress(files[name])
        for dep in filter(None, modinfo(ko).get("depends", "").split(",")):
            visit(dep)
        order.append((name, ko))

    for name in wanted:
        visit(name)
    return order


class Cpio:
    """A newc archive written entry by entry."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.ino = 1
        self.dirs: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"", nlink: int = 1) -> None:
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0]
        self.ino += 1
        self.out += b"070701" + b"".join(b"%08X" % f for f in fields) + name_b
        self.out += b"\0" * (-len(self.out) % 4)
        self.out += data
        self.out += b"\0" * (-len(self.out) % 4)

    def dir(self, name: str) -> None:
        if name in self.dirs:
            return
        self.dirs.add(name)
        self._entry(name, 0o040755, nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, 0o100000 | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, 0o120777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        self.out += b"\0" * (-len(self.out) % 512)
        return bytes(self.out)


# The top directories of the image that are real directories (a package's files go inside).
ROOT_DIRS = ["bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "tmp", "run",
             "root", "state", "var", "var/lib", "var/lib/rtlab", "lib", "lib/modules", "lab"]  # fmt: skip


def build(kernel: Kernel, rtlab: Path, guest: Path, out_dir: Path, packages: Bundle | None = None) -> Path:
    """The initramfs for `kernel` with `rtlab` (and a scenario's unpacked `packages`), cached
    under `out_dir` by content."""
    if not rtlab.exists():
        raise LabError(f"{rtlab}: no such binary; build it with packaging/dist (or pass --bin-dir)")
    mods = modules_in_order(kernel, WANTED)
    h = hashlib.sha256()
    for p in [rtlab, kernel.busybox, *sorted(guest.iterdir())]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    h.update(kernel.release.encode())
    h.update(" ".join(name for name, _ in mods).encode())
    label = "base"
    if packages is not None:
        label = packages.label
        h.update(f"{packages.suite} {packages.arch}\n{packages.manifest}".encode())
    target = out_dir / f"initramfs-{kernel.release}-{label}-{h.hexdigest()[:12]}.cpio"
    if target.exists():
        return target
    c = Cpio()
    for d in ROOT_DIRS:
        c.dir(d)
    c.file("bin/busybox", kernel.busybox.read_bytes(), 0o755)
    c.symlink("bin/sh", "busybox")
    c.symlink("init", "bin/busybox")
    c.file("usr/bin/rtlab", rtlab.read_bytes(), 0o755)
    for p in sorted(guest.iterdir()):
        if p.name in ("inittab", "rc", "profile"):
            c.file(f"etc/{p.name}", p.read_bytes(), 0o755)
        else:
            c.file(f"lab/{p.name}", p.read_bytes(), 0o755)
    names = []
    for name, ko in mods:
        c.file(f"lib/modules/{name}.ko", ko)
        names.append(f"{name}.ko")
    c.file("lib/modules/order", ("\n".join(names) + "\n").encode())
    # Where Debian keeps the kernel's config (no /proc/config.gz): audit and kconfig read it.
    c.dir("boot")
    c.file(f"boot/config-{kernel.release}", kernel.config.read_bytes())
    c.file("etc/lab-kernel", f"{kernel.spec.name} {kernel.release}\n".encode())
    if packages is not None:
        _add_tree(c, packages.tree)
        for link, to in sorted(loader_links(packages.tree, set(ROOT_DIRS)).items()):
            c.symlink(link, to)
        c.file("etc/lab-packages", packages.manifest.encode())
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(c.finish())
    tmp.replace(target)
    # The previous image of the same kernel and package set (and one named before the label).
    legacy = re.compile(rf"initramfs-{re.escape(kernel.release)}-[0-9a-f]{{12}}\.cpio")
    for old in out_dir.glob(f"initramfs-{kernel.release}-*.cpio"):
        if old != target and (old.name.startswith(f"initramfs-{kernel.release}-{label}-") or
                              (label == "base" and legacy.fullmatch(old.name))):  # fmt: skip
            old.unlink()
    return target


def _add_tree(c: Cpio, tree: Path) -> None:
    """Every directory, file and symlink of an unpacked package tree, at the same path; the
    image's own files come first and are not replaced (a package's /bin/sh is not busybox's)."""
    for base, dirs, files in os.walk(tree):
        dirs.sort()
        rel = os.path.relpath(base, tree)
        for name in dirs + sorted(files):
            path = Path(base) / name
            inside = name if rel == "." else f"{rel}/{name}"
            if (rel == "." and name.startswith(".")) or inside in ("bin/sh", "init", "bin/busybox"):
                continue
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                c.symlink(inside, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                c.dir(inside)
            elif stat.S_ISREG(st.st_mode):
                c.file(inside, path.read_bytes(), stat.S_IMODE(st.st_mode))


def have(tool: str) -> bool:
    return shutil.which(tool) is not None
