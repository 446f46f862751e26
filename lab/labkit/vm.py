"""One QEMU virtual machine of the lab: started, driven through its console and monitor, stopped.

This module owns QEMU's command line per architecture (KVM when it can run guests, TCG
otherwise), the serial console (everything it prints goes to the scenario's log; commands are
sent as a script and read back between two markers with their exit status), the human monitor
on a Unix socket (device hot-plug, `system_reset`), waiting for the guest's ready line after a
boot, a reboot or a reset, and the state disk image.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError

# Every number read from the console is matched up to what ends it: the console arrives in
# chunks, and an unended `(\d+)` matches "1" of an exit status 130 whose "30" has not come yet.
READY = re.compile(rb"@@LAB-READY@@ boot=(\d+) ")
PANIC = re.compile(rb"Kernel panic - not syncing[^\r\n]*")


def exit_marker(tag: str) -> re.Pattern[bytes]:
    """The line that ends a command's output: its tag and its whole exit status."""
    return re.compile(rf"@@E{tag}@@ (\d+)\r?\n".encode())


def kvm_usable(arch: str) -> bool:
    """KVM runs guests of the host's own architecture where /dev/kvm opens and the CPU has the
    virtualisation extension (a nested guest without vmx/svm hangs on KVM)."""
    host = os.uname().machine
    if {"amd64": "x86_64", "arm64": "aarch64"}[arch] != host:
        return False
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    if host == "x86_64":
        flags = Path("/proc/cpuinfo").read_text()
        return re.search(r"^flags\s*:.*\b(vmx|svm)\b", flags, re.M) is not None
    return True


@dataclass
class Machine:
    """What to boot."""

    arch: str
    kernel: Path
    initrd: Path
    cmdline: str
    cpus: int = 2
    memory_mb: int = 1024
    disk: Path | None = None
    accel: str = "auto"


def qemu_command(m: Machine, monitor: Path) -> list[str]:
    accel = m.accel if m.accel != "auto" else ("kvm" if kvm_usable(m.arch) else "tcg")
    if m.arch == "amd64":
        cmd = ["qemu-system-x86_64", "-M", "pc"] + ([] if accel == "tcg" else ["-cpu", "host"])
        console = "ttyS0"
    else:
        cpu = "cortex-a72" if accel == "tcg" else "host"
        cmd = ["qemu-system-aarch64", "-M", "virt", "-cpu", cpu]
        # A PCIe root port to hot-plug into (the virt machine's root bus takes no hot-plug).
        cmd += ["-device", "pcie-root-port,id=hp,bus=pcie.0,chassis=1,slot=1"]
        console = "ttyAMA0"
    # x86 under multi-threaded TCG: the kernel's live code patching (static keys flipped when
    # trace events are switched on, through an int3 breakpoint) oopsed ("Oops: int3" in
    # handle_softirqs, 6.12-rt) when one vCPU ran the patched code while another wrote it.
    # One TCG thread for all vCPUs keeps the patching coherent, as on hardware.
    if accel == "tcg" and m.arch == "amd64":
        accel = "tcg,thread=single"
    cmd += ["-accel", accel, "-smp", str(m.cpus), "-m", str(m.memory_mb)]
    cmd += ["-kernel", str(m.kernel), "-initrd", str(m.initrd)]
    cmd += ["-append", f"console={console} {m.cmdline}".strip()]
    cmd += ["-display", "none", "-serial", "stdio", "-no-user-config", "-nodefaults"]
    cmd += ["-monitor", f"unix:{monitor},server=on,wait=off"]
    if m.disk is not None:
        cmd += ["-drive", f"if=none,id=state,file={m.disk},format=raw,cache=writeback"]
        cmd += ["-device", "virtio-blk-pci,drive=state"]
    return cmd


def hotplug_bus(arch: str) -> str:
    """What `device_add` needs to name to hot-plug a PCI device on this machine."""
    return ",bus=hp" if arch == "arm64" else ""


# The state disks a scenario can have: (how the image is made, the type it is mounted as).
# Boards keep state on SD cards and eMMC formatted ext2 or ext4 without a journal, both mounted
# by the ext4 driver (the mount says `ext4`), and on vfat.
DISKS = {
    "ext2": (["mkfs.ext2", "-q", "-F"], "ext2"),
    "ext2-as-ext4": (["mkfs.ext2", "-q", "-F"], "ext4"),
    "ext3": (["mkfs.ext3", "-q", "-F"], "ext3"),
    "ext4": (["mkfs.ext4", "-q", "-F"], "ext4"),
    "ext4-nojournal": (["mkfs.ext4", "-q", "-F", "-O", "^has_journal"], "ext4"),
    "vfat": (["mkfs.vfat"], "vfat"),
    "f2fs": (["mkfs.f2fs", "-q", "-f"], "f2fs"),
}


def make_disk(path: Path, kind: str, size_mb: int = 128) -> None:
    """A raw disk image holding one empty file system of `kind` (a key of DISKS)."""
    if kind not in DISKS:
        raise LabError(f"disk '{kind}': use one of {', '.join(DISKS)}")
    mkfs = DISKS[kind][0]
    with open(path, "wb") as f:
        f.truncate(size_mb * 1024 * 1024)
    try:
        r = subprocess.run([*mkfs, str(path)], capture_output=True, text=True)
    except FileNotFoundError:
        pkg = {"vfat": "dosfstools", "f2fs": "f2fs-tools"}.get(kind, "e2fsprogs")
        raise LabError(f"{mkfs[0]} not found: apt-get install {pkg}") from None
    if r.returncode != 0:
        raise LabError(f"{mkfs[0]} {path}: {r.stderr.strip()}")


class Vm:
    """A running machine. Use as a context manager: the QEMU process never outlives it."""

    def __init__(self, machine: Machine, workdir: Path, log: Path):
        self.machine = machine
        self.monitor_path = workdir / "monitor.sock"
        if self.monitor_path.exists():
            self.monitor_path.unlink()
        self.log = open(log, "wb")
        self.buf = bytearray()
        self.cursor = 0  # where the next wait starts reading
        self.lock = threading.Condition()
        self.boot = 0
        cmd = qemu_command(machine, self.monitor_path)
        self.log.write(("$ " + " ".join(cmd) + "\n").encode())
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT)  # fmt: skip
        except FileNotFoundError:
            pkg = "qemu-system-x86" if machine.arch == "amd64" else "qemu-system-arm"
            raise LabError(f"{cmd[0]} not found: apt-get install {pkg}") from None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def __enter__(self) -> Vm:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            self.log.write(chunk)
            self.log.flush()
            with self.lock:
                self.buf += chunk
                self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def note(self, text: str) -> None:
        """A line of the lab's own in the log, between what the console printed."""
        self.log.write(f"\n[lab] {text}\n".encode())
        self.log.flush()

    def wait_for(self, pattern: re.Pattern[bytes], timeout: float, what: str) -> re.Match[bytes]:
        """The first match of `pattern` after the cursor; the cursor moves past it."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                m = pattern.search(self.buf, self.cursor)
                if m:
                    self.cursor = m.end()
                    return m
                panic = PANIC.search(self.buf, self.cursor)
                if panic:
                    raise LabError(f"{what}: the guest kernel panicked: {panic.group(0).decode(errors='replace')}")
                if self.proc.poll() is not None:
                    raise LabError(f"{what}: QEMU exited (status {self.proc.returncode}); see the log")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LabError(f"{what}: nothing after {timeout:.0f} s")
                self.lock.wait(min(left, 1.0))

    def wait_ready(self, timeout: float = 120) -> int:
        """Waits for the guest's ready line; returns the boot count /state holds (0 without a disk)."""
        m = self.wait_for(READY, timeout, "waiting for the guest to boot")
        self.boot = int(m.group(1))
        # Let the console shell start before the first command is sent.
        time.sleep(0.5)
        return self.boot

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise LabError("QEMU's console is closed (the VM stopped)") from None

    def run(self, script: str, timeout: float) -> tuple[int, str]:
        """Runs `script` in the guest's shell; (exit status, what it printed)."""
        tag = f"{time.monotonic_ns():x}"
        # The markers are split in the command so that an echoed command never matches them.
        body = script if script.endswith("\n") else script + "\n"
        eof = f"__LAB_{tag}_EOF__"
        self.send(f"cat >/tmp/step.sh <<'{eof}'\n{body}{eof}\n")
        self.send(f"echo '@@B{tag}''@@'; sh /tmp/step.sh </dev/null 2>&1; echo \"@@E{tag}@@ $?\"\n")
        self.wait_for(re.compile(rf"@@B{tag}@@\r?\n".encode()), 30, "starting a command")
        start = self.cursor
        m = self.wait_for(exit_marker(tag), timeout, "running a command")
        with self.lock:
            out = bytes(self.buf[start : m.start()])
        text = out.decode(errors="replace").replace("\r\n", "\n").replace("\r", "")
        return int(m.group(1)), text

    def monitor(self, command: str, timeout: float = 10) -> str:
        """One command of QEMU's human monitor; what it answered."""
        self.note(f"monitor: {command}")
        deadline = time.monotonic() + timeout
        while not self.monitor_path.exists():
            if time.monotonic() > deadline:
                raise LabError("QEMU's monitor socket did not appear")
            time.sleep(0.1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.monitor_path))
            got = b""
            while not got.rstrip().endswith(b"(qemu)"):
                got += s.recv(4096)
            s.sendall(command.encode() + b"\n")
            got = b""
            while not got.rstrip().endswith(b"(qemu)"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        answer = re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", got).decode(errors="replace")
        lines = [ln.strip() for ln in answer.replace("\r", "").splitlines()]
        lines = [ln for ln in lines if ln and ln != "(qemu)" and command not in ln]
        self.note("monitor answered: " + " | ".join(lines))
        return "\n".join(lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.monitor("quit", timeout=3)
            except (OSError, LabError):
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(2)
        self.log.close()
