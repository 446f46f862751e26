"""Debian packages in the guest: a scenario's `packages`, with what they depend on, unpacked.

This module owns resolving a scenario's packages for one suite and architecture (their
Pre-Depends and Depends, recursively, from the lab's private apt of `kernels.Archive`: the
first alternative the archive has, a virtual package through the package that provides it),
leaving out what a tool run from the console shell does not need (SKIP: maintainer-script and
init machinery), downloading the .debs into the cache beside the kernels, and unpacking them
with `dpkg-deb -x` into one tree per suite, architecture and resolved set (package=version), kept
and reused while the archive serves the same versions. Documentation, manual pages, locales and
gconv modules are removed from the tree. The initramfs copies the tree in as it is (Debian's
layout: merged /usr on trixie, /lib and /lib64 on bookworm); `loader_links` says which links
the programs' ELF interpreter needs in the busybox root, whose /bin, /sbin and /lib are real
directories.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError
from .kernels import Archive

# Never brought into the guest: what a package needs to be installed (maintainer scripts,
# debconf, init systems), not to run. None of these is a library a program loads.
SKIP = {
    "debconf", "debconf-2.0", "cdebconf", "perl-base", "perl", "perl-modules", "dpkg",
    "install-info", "init-system-helpers", "systemd", "systemd-sysv", "sysvinit-utils",
    "lsb-base", "sensible-utils", "base-files", "usrmerge", "usr-is-merged", "libc-bin",
    "coreutils", "bash", "dash", "util-linux", "mount", "adduser", "passwd", "ucf",
    "python3", "python3-minimal",
}  # fmt: skip

# Removed from the unpacked tree: nothing runs them in the guest.
PRUNE = ["usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian",
         "usr/share/bug", "usr/share/i18n", "usr/share/bash-completion", "usr/lib/*/gconv",
         "lib/*/gconv"]  # fmt: skip

NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")


@dataclass
class Bundle:
    """A scenario's packages and their dependencies, unpacked into one tree."""

    suite: str
    arch: str
    requested: list[str]
    resolved: list[tuple[str, str]]  # (package, version), sorted
    tree: Path

    @property
    def label(self) -> str:
        """What the initramfs's file name says about it: `rtla`, `rtla+stress-ng`."""
        return "+".join(sorted(self.requested))

    @property
    def manifest(self) -> str:
        return "".join(f"{p} {v}\n" for p, v in self.resolved)


def _alternatives(field: str) -> list[list[str]]:
    """`a (>= 1) | b, c:any` as [[a, b], [c]]: names only, versions and qualifiers dropped."""
    out = []
    for group in filter(None, (g.strip() for g in field.split(","))):
        names = []
        for alt in group.split("|"):
            m = re.match(r"\s*([a-z0-9][a-z0-9+.-]*)", alt)
            if m:
                names.append(m.group(1))
        if names:
            out.append(names)
    return out


def resolve(archive: Archive, arch: str, names: list[str]) -> list[tuple[str, str]]:
    """The packages `names` need, with their versions: the closure of Pre-Depends and Depends
    less SKIP."""
    found: dict[str, str] = {}
    todo = list(names)
    chain: dict[str, str] = {n: "the scenario" for n in names}
    while todo:
        name = todo.pop(0)
        if name in found or name in SKIP:
            continue
        try:
            fields = archive.show(name, arch)
        except LabError:
            provider = archive.provider(name, arch)
            if provider is None:
                raise LabError(
                    f"package {name}:{arch} (needed by {chain.get(name, '?')}) is not in Debian {archive.suite}"
                ) from None
            chain.setdefault(provider, chain.get(name, "?"))
            todo.append(provider)
            continue
        found[name] = fields["Version"]
        for group in _alternatives(fields.get("Pre-Depends", "")) + _alternatives(fields.get("Depends", "")):
            if any(n in found or n in SKIP for n in group):
                continue
            pick = group[0]
            for alt in group:
                try:
                    archive.show(alt, arch)
                    pick = alt
                    break
                except LabError:
                    continue
            chain.setdefault(pick, name)
            todo.append(pick)
    return sorted(found.items())


def fetch(archive: Archive, arch: str, names: list[str], cache: Path, log) -> Bundle:
    """`names` and what they depend on, for `archive`'s suite and `arch`, downloaded and
    unpacked into one tree (reused when the same versions are already there)."""
    resolved = resolve(archive, arch, names)
    key = hashlib.sha256("".join(f"{p}={v}\n" for p, v in resolved).encode()).hexdigest()[:12]
    tree = cache / "packages" / f"{archive.suite}_{arch}_{'+'.join(sorted(names))}_{key}"
    bundle = Bundle(archive.suite, arch, list(names), resolved, tree)
    if (tree / ".unpacked").exists():
        return bundle
    log(f"packages for {archive.suite}/{arch}: {', '.join(f'{p} {v}' for p, v in resolved)}")
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for package, version in resolved:
        deb = archive.download(package, arch, version, cache / "debs")
        r = subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], capture_output=True, text=True)
        if r.returncode != 0:
            raise LabError(f"unpacking {deb.name}: {r.stderr.strip()}")
    for pattern in PRUNE:
        for p in tree.glob(pattern):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
    (tree / ".manifest").write_text(bundle.manifest)
    (tree / ".unpacked").touch()
    return bundle


def interpreter(elf: bytes) -> str | None:
    """The PT_INTERP path of a 64-bit little-endian ELF executable, or None."""
    if elf[:4] != b"\x7fELF" or len(elf) < 64 or elf[4] != 2 or elf[5] != 1:
        return None
    phoff = int.from_bytes(elf[0x20:0x28], "little")
    phentsize = int.from_bytes(elf[0x36:0x38], "little")
    phnum = int.from_bytes(elf[0x38:0x3A], "little")
    for i in range(phnum):
        h = elf[phoff + i * phentsize : phoff + (i + 1) * phentsize]
        if int.from_bytes(h[0:4], "little") == 3:  # PT_INTERP
            off = int.from_bytes(h[8:16], "little")
            size = int.from_bytes(h[32:40], "little")
            return elf[off : off + size].rstrip(b"\0").decode()
    return None


def loader_links(tree: Path, root_dirs: set[str]) -> dict[str, str]:
    """The symlinks (path in the image -> target) that make the ELF interpreter of every
    program in the tree's bin and sbin directories resolve in the image: merged-/usr packages
    (trixie's libc6) keep the loader under /usr (usr/lib64/ld-linux-x86-64.so.2,
    usr/lib/ld-linux-aarch64.so.1), where a Debian system reaches it through its /lib64 ->
    usr/lib64 and /lib -> usr/lib links. The busybox root has a real /lib (the modules), so a
    missing top directory becomes a link to its /usr twin and a loader under a real one a link
    to the file."""
    links: dict[str, str] = {}
    for d in ("usr/bin", "usr/sbin", "bin", "sbin"):
        for prog in sorted((tree / d).glob("*")) if (tree / d).is_dir() else []:
            if not prog.is_file() or prog.is_symlink():
                continue
            with open(prog, "rb") as f:
                head = f.read(4096)
            interp = interpreter(head)
            if not interp or not interp.startswith("/"):
                continue
            rel = interp.lstrip("/")
            if (tree / rel).exists() or (tree / rel).is_symlink() or rel.startswith("usr/"):
                continue
            if not (tree / "usr" / rel).exists():
                raise LabError(f"{prog.relative_to(tree)}: its ELF interpreter {interp} is in no unpacked package")
            top = rel.split("/", 1)[0]
            if top not in root_dirs and not (tree / top).exists():
                links[top] = f"usr/{top}"
            else:
                depth = rel.count("/")
                links[rel] = "../" * depth + f"usr/{rel}"
    return links
