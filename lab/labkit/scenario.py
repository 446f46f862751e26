"""Scenarios: TOML files of steps with their expected outcomes, run on one booted kernel.

This module owns the scenario format (checked key by key: an unknown key or a step of no known
kind is refused with its file), choosing the kernels a scenario runs on (by tag), and running
one scenario on one kernel under one boot setup (boots.toml: CPUs, RT CPUs, command line): a
fresh VM with those CPUs, the scenario's memory, command line and state disk (and, with `packages`, an initramfs that holds those Debian packages), its steps in order,
each judged by its exit status, what it printed and the files it left (checks.py: every check
is also tried on the output made wrong for it, and one that still passes fails the step). A
step's failure ends the scenario; the outcome names the step and why.

Step kinds:
  run = "script"       a shell script in the guest (LAB_* variables set); judged by `exit`
                       (default 0; a list: any of them), the checks of checks.py on what it printed (`contains`,
                       `lacks`, `matches`, `json`, `json_nonempty`), and the same checks on
                       files it wrote (`[step.file."/tmp/m.json"]`, fetched after the step)
  monitor = "command"  a QEMU monitor command ({hotplug_bus} filled in); judged by `contains`
                       and `lacks` on its answer
  reset = true         a hard reset (the monitor's system_reset), then the next boot
  boot = true          waits for the next boot (the guest rebooted itself)
  console = "regex"    waits for the console to print a match (e.g. a boot hook's end line)

A run step with `when = "shell test"` runs only where the test succeeds in the guest (a kernel
feature: two steps with opposite tests check each kernel for what it has).
"""

from __future__ import annotations

import base64
import gzip
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import checks
from . import vm as vmmod
from .errors import LabError
from .kernels import Kernel

SCENARIO_KEYS = {"description", "kernels", "cpus", "memory", "cmdline", "disk", "disks", "cgroup", "files",
                 "packages", "boots", "step"}  # fmt: skip
BOOT_KEYS = {"name", "cpus", "rt", "cmdline", "kernels"}
STEP_KEYS = {"name", "run", "monitor", "reset", "boot", "console", "timeout", "exit", "sleep",
             "file", "when"} | checks.KEYS  # fmt: skip
KINDS = ("run", "monitor", "reset", "boot", "console")


def parse_duration(text: str | int | float, where: str) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(text).strip())
    if not m:
        raise LabError(f"{where}: '{text}' is not a duration (e.g. 90s, 5m)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


@dataclass
class Step:
    kind: str
    arg: str
    name: str
    timeout: float
    exit: list[int] | None = field(default_factory=lambda: [0])  # the statuses that pass
    out: checks.Expect = field(default_factory=checks.Expect)  # what it printed (or answered)
    files: dict[str, checks.Expect] = field(default_factory=dict)  # files it left, by path
    sleep: float = 0.0
    when: str = ""  # a guest shell test: the step runs only where it succeeds (a kernel feature)


@dataclass
class Boot:
    """One [[boot]] of boots.toml: CPUs, RT CPUs and the command line a scenario boots with."""

    name: str
    rt: str  # the RT CPU list ("1,3")
    cpus: int | None = None  # None: the scenario's own count
    cmdline: str = ""  # with {rt} and {hk}
    kernels: list[str] = field(default_factory=list)

    def housekeeping(self, cpus: int) -> str:
        """The CPUs of `cpus` that are not RT, as a list ("0,2")."""
        rt = _cpu_list(self.rt)
        return ",".join(str(c) for c in range(cpus) if c not in rt)

    def applies_to(self, kernel_tags: list[str], kernel_name: str) -> bool:
        return not self.kernels or any(t in kernel_tags or t == kernel_name for t in self.kernels)


def _cpu_list(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def load_boots(path: Path) -> dict[str, Boot]:
    """The boot setups of boots.toml, by name; each key and CPU list checked."""
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    boots: dict[str, Boot] = {}
    for raw in doc.get("boot", []):
        name = raw.get("name", "?")
        unknown = set(raw) - BOOT_KEYS
        if unknown:
            raise LabError(f"{path}: boot {name}: unknown key(s) {sorted(unknown)}")
        if not re.fullmatch(r"[\w.-]+", name) or name in boots:
            raise LabError(f"{path}: boot name '{name}' (letters, digits, - and ., once each)")
        rt = str(raw.get("rt", ""))
        if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", rt):
            raise LabError(f"{path}: boot {name}: rt '{rt}' is not a CPU list")
        cpus = raw.get("cpus")
        if cpus is not None and (not 1 <= int(cpus) <= 16 or max(_cpu_list(rt)) >= int(cpus)):
            raise LabError(f"{path}: boot {name}: cpus {cpus} (1 to 16, more than the highest RT CPU)")
        boots[name] = Boot(name, rt, cpus, raw.get("cmdline", ""), list(raw.get("kernels", [])))
    if "plain" not in boots:
        raise LabError(f"{path}: no boot named plain (the default)")
    return boots


@dataclass
class Scenario:
    name: str
    path: Path
    description: str
    kernels: list[str]
    cpus: int
    memory_mb: int
    cmdline: str
    disks: list[str | None]  # one run per state disk (`disk = "ext4"` or `disks = [...]`); [None]: none
    cgroup: str
    steps: list[Step]
    files: list[str] = field(default_factory=list)  # "KERNEL:config": /lab/files/KERNEL.config
    packages: list[str] = field(default_factory=list)  # Debian packages of the kernel's suite
    boots: list[str] = field(default_factory=lambda: ["plain"])  # names in boots.toml

    def applies_to(self, kernel_tags: list[str], kernel_name: str) -> bool:
        if not self.kernels:
            return True
        return any(t in kernel_tags or t == kernel_name for t in self.kernels)


def _step(raw: dict, where: str) -> Step:
    unknown = set(raw) - STEP_KEYS
    if unknown:
        raise LabError(f"{where}: unknown key(s) {sorted(unknown)}")
    kinds = [k for k in KINDS if k in raw]
    if len(kinds) != 1:
        raise LabError(f"{where}: a step has exactly one of {', '.join(KINDS)} (found {kinds or 'none'})")
    kind = kinds[0]
    default_timeout = {"run": 120, "monitor": 10, "reset": 180, "boot": 300, "console": 600}[kind]
    arg = raw[kind]
    if kind in ("reset", "boot") and arg is not True:
        raise LabError(f"{where}: '{kind}' takes true")
    files = raw.get("file", {})
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise LabError(f"{where}: 'file' is a table of paths, each a table of checks")
    if files and kind != "run":
        raise LabError(f"{where}: only a run step has files to check")
    for path, fchecks in files.items():
        if not re.fullmatch(r"/[\w./{}-]+", path):
            raise LabError(f"{where}: file '{path}': an absolute path, of letters, digits and ./_-{{}}")
        unknown = set(fchecks) - checks.KEYS
        if unknown:
            raise LabError(f"{where}: file '{path}': unknown key(s) {sorted(unknown)} (checks are "
                           f"{', '.join(sorted(checks.KEYS))}; a step's own keys go before its file tables)")  # fmt: skip
        if not fchecks:
            raise LabError(f"{where}: file '{path}': no checks")
    name = raw.get("name") or (str(arg).strip().splitlines() or [kind])[0][:60]
    return Step(
        kind=kind,
        arg="" if arg is True else str(arg),
        name=name,
        timeout=parse_duration(raw.get("timeout", default_timeout), where),
        exit=_exit(raw.get("exit", 0), where) if kind == "run" else None,
        out=checks.parse(raw, where),
        files={path: checks.parse(fchecks, f"{where}: file {path}") for path, fchecks in files.items()},
        sleep=parse_duration(raw.get("sleep", 0), where),
        when=_when(raw.get("when", ""), kind, where),
    )


def _exit(value: object, where: str) -> list[int]:
    """`exit = 0` or `exit = [0, 1]`: the statuses a run step may end with."""
    statuses = value if isinstance(value, list) else [value]
    if not statuses or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in statuses):
        raise LabError(f"{where}: 'exit' is a status (0 to 255) or a list of them")
    return list(statuses)


def _when(test: object, kind: str, where: str) -> str:
    if not isinstance(test, str) or (test and kind != "run"):
        raise LabError(f"{where}: 'when' is a shell test, for a run step")
    return test


def _disks(doc: dict, path: Path) -> list[str | None]:
    """The state disks a scenario runs with: `disk = "FS"`, or `disks = [...]` for one run per
    disk (a row each), or none."""
    if "disk" in doc and "disks" in doc:
        raise LabError(f"{path}: give disk or disks, not both")
    disks = doc.get("disks", [doc["disk"]] if "disk" in doc else [None])
    if not isinstance(disks, list) or not disks:
        raise LabError(f"{path}: disks is a list of disk kinds ({', '.join(vmmod.DISKS)})")
    for d in disks:
        if d is not None and d not in vmmod.DISKS:
            raise LabError(f"{path}: disk '{d}': use one of {', '.join(vmmod.DISKS)}")
    return disks


def load(path: Path) -> Scenario:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{path}: {e}") from None
    unknown = set(doc) - SCENARIO_KEYS
    if unknown:
        raise LabError(f"{path}: unknown key(s) {sorted(unknown)}")
    steps = [_step(s, f"{path}: step {i + 1}") for i, s in enumerate(doc.get("step", []))]
    if not steps:
        raise LabError(f"{path}: no [[step]]")
    files = list(doc.get("files", []))
    for f in files:
        if not re.fullmatch(r"[\w.-]+:config", f):
            raise LabError(f"{path}: files entry '{f}' (KERNEL:config)")
    packages = doc.get("packages", [])
    if not isinstance(packages, list) or not all(
        isinstance(p, str) and re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", p) for p in packages
    ):
        raise LabError(f"{path}: packages is a list of Debian package names (packages = [\"rtla\"])")
    cgroup = doc.get("cgroup", "v2")
    if cgroup not in ("v1", "v2"):
        raise LabError(f"{path}: cgroup '{cgroup}' (v1 or v2)")
    cpus = int(doc.get("cpus", 2))
    if not 1 <= cpus <= 16:
        raise LabError(f"{path}: cpus {cpus} (1 to 16)")
    boots = doc.get("boots", ["plain"])
    if not isinstance(boots, list) or not boots or not all(isinstance(b, str) for b in boots):
        raise LabError(f"{path}: boots is a list of boot names from lab/boots.toml")
    return Scenario(
        name=path.stem,
        path=path,
        description=doc.get("description", ""),
        kernels=list(doc.get("kernels", [])),
        cpus=cpus,
        memory_mb=int(doc.get("memory", 1024)),
        cmdline=doc.get("cmdline", ""),
        disks=_disks(doc, path),
        cgroup=cgroup,
        steps=steps,
        files=files,
        packages=list(packages),
        boots=list(boots),
    )


@dataclass
class Outcome:
    ok: bool
    seconds: float
    detail: str = ""  # the failed step and why, or empty
    steps_done: int = 0


def _filled(step: Step, sc: Scenario, boot: Boot) -> Step:
    """The step's checks and file paths with the boot's CPU lists in them."""
    fill = lambda text: _fill(text, sc, boot)  # noqa: E731
    return Step(step.kind, step.arg, step.name, step.timeout, step.exit, step.out.filled(fill),
                {fill(path): e.filled(fill) for path, e in step.files.items()}, step.sleep, step.when)  # fmt: skip


def _judge(step: Step, status: int | None, out: str, files: dict[str, str | None]) -> str | None:
    """Why the step failed, or None: its exit status, then each output's checks, then each
    check tried on its output made wrong (a check that cannot fail fails the step)."""
    if step.exit is not None and status not in step.exit:
        return f"exit status {status}, expected {' or '.join(map(str, step.exit))}"
    outputs = [("the output", step.out, out)]
    for path, e in step.files.items():
        text = files.get(path)
        if text is None:
            return f"{path}: not written"
        outputs.append((path, e, text))
    for what, e, text in outputs:
        why = checks.judge(e, text, what)
        if why:
            return why
    for what, e, text in outputs:
        why = checks.cannot_fail(e, text, what)
        if why:
            return why
    return None


def cpus_of(sc: Scenario, boot: Boot) -> int:
    return boot.cpus or sc.cpus


def _fill(text: str, sc: Scenario, boot: Boot) -> str:
    """`{rt}` and `{hk}` replaced by the boot's RT and housekeeping CPU lists, `{all}` by every
    CPU ("0-3"), `{isolated_or_all}` by the RT CPUs where the boot line isolates them (isolcpus=
    or nohz_full=) and every CPU elsewhere: what a run without a CPU list measures."""
    cpus = cpus_of(sc, boot)
    every = f"0-{cpus - 1}" if cpus > 1 else "0"
    isolates = re.search(r"\b(isolcpus|nohz_full)=", boot.cmdline) is not None
    return (text.replace("{rt}", boot.rt).replace("{hk}", boot.housekeeping(cpus)).replace("{all}", every)
            .replace("{isolated_or_all}", boot.rt if isolates else every))  # fmt: skip


def _env(kernel: Kernel, sc: Scenario, boot: Boot, disk: str | None) -> str:
    rt = "1" if "rt" in kernel.spec.tags else "0"
    return (
        f"export LAB_KERNEL='{kernel.spec.name}' LAB_ARCH={kernel.spec.arch} LAB_RT={rt} "
        f"LAB_CPUS={cpus_of(sc, boot)} LAB_CGROUP={sc.cgroup} LAB_DISK='{disk or ''}' "
        f"LAB_BOOT={boot.name} LAB_RT_CPUS={boot.rt} LAB_HK_CPUS={boot.housekeeping(cpus_of(sc, boot))}\n"
        ". /lab/lib.sh\n"
    )


def _short(out: str, limit: int = 600) -> str:
    out = out.strip()
    return out if len(out) <= limit else "…" + out[-limit:]


def _with_files(initrd: Path, files: dict[str, bytes], workdir: Path) -> Path:
    """`initrd` followed by a second archive holding `files` under /lab/files (the kernel
    unpacks concatenated archives in turn)."""
    if not files:
        return initrd
    from .initramfs import Cpio

    c = Cpio()
    c.dir("lab/files")
    for name, data in sorted(files.items()):
        c.file(f"lab/files/{name}", data)
    out = workdir / "initramfs.cpio"
    out.write_bytes(initrd.read_bytes() + c.finish())
    return out


def run(sc: Scenario, boot: Boot, disk_kind: str | None, kernel: Kernel, initrd: Path, workdir: Path,
        accel: str, files: dict[str, bytes] | None = None) -> Outcome:  # fmt: skip
    """Runs `sc` on `kernel` booted as `boot`, with a state disk of `disk_kind` (or none), in a
    fresh VM; the console and every step go to workdir/log."""
    workdir.mkdir(parents=True, exist_ok=True)
    initrd = _with_files(initrd, files or {}, workdir)
    disk = None
    if disk_kind:
        disk = workdir / "state.img"
        vmmod.make_disk(disk, disk_kind)
    mount_as = vmmod.DISKS[disk_kind][1] if disk_kind else ""
    cmdline = " ".join(
        filter(None, ["loglevel=4", f"lab.disk={mount_as}" if disk_kind else "",
                      "lab.cgroup=v1" if sc.cgroup == "v1" else "", _fill(boot.cmdline, sc, boot),
                      _fill(sc.cmdline, sc, boot)])  # fmt: skip
    )
    machine = vmmod.Machine(kernel.spec.arch, kernel.vmlinuz, initrd, cmdline, cpus_of(sc, boot), sc.memory_mb,
                            disk, accel)  # fmt: skip
    start = time.monotonic()
    done = 0
    log = workdir / "log"
    with vmmod.Vm(machine, workdir, log) as v:
        try:
            v.wait_ready()
            v.note(f"booted in {time.monotonic() - start:.1f} s (boot {boot.name}: {cmdline})")
            for i, step in enumerate(sc.steps):
                v.note(f"step {i + 1}: {step.kind}: {step.name}")
                began = time.monotonic()
                why = _run_step(v, step, kernel, sc, boot, disk_kind)
                v.note(f"step {i + 1} took {time.monotonic() - began:.1f} s")
                if why:
                    return Outcome(False, time.monotonic() - start, f"step {i + 1} ({step.name}): {why}", done)
                done += 1
                if step.sleep:
                    time.sleep(step.sleep)
        except LabError as e:
            return Outcome(False, time.monotonic() - start, f"step {done + 1}: {e}", done)
    return Outcome(True, time.monotonic() - start, "", done)


def _fetch(v: vmmod.Vm, path: str) -> str | None:
    """The text of the guest's file `path` (gzipped and base64-encoded over the console), or
    None when there is no such file."""
    status, out = v.run(f"[ -f '{path}' ] || exit 3\ngzip -c '{path}' | base64\n", 120)
    if status == 3:
        return None
    if status != 0:
        raise LabError(f"fetching {path} from the guest: exit status {status}")
    try:
        data = gzip.decompress(base64.b64decode("".join(out.split()), validate=True))
    except (ValueError, OSError, EOFError) as e:
        raise LabError(f"fetching {path} from the guest: {e}") from None
    v.note(f"fetched {path}: {len(data)} bytes")
    return data.decode(errors="replace")


def _run_step(v: vmmod.Vm, step: Step, kernel: Kernel, sc: Scenario, boot: Boot, disk: str | None) -> str | None:
    if step.kind == "run" and step.when:
        status, _ = v.run(_env(kernel, sc, boot, disk) + _fill(step.when, sc, boot), 60)
        if status != 0:
            v.note(f"not run here: `{step.when}` is false")
            return None
    if step.kind == "run":
        status, out = v.run(_env(kernel, sc, boot, disk) + _fill(step.arg, sc, boot), step.timeout)
        v.note(f"exit status {status}")
        step = _filled(step, sc, boot)
        files = {path: _fetch(v, path) for path in step.files}
        why = _judge(step, status, out, files)
        return f"{why}\n{_short(out)}" if why else None
    if step.kind == "monitor":
        answer = v.monitor(step.arg.replace("{hotplug_bus}", vmmod.hotplug_bus(kernel.spec.arch)))
        return _judge(step, None, answer, {})
    if step.kind == "reset":
        v.monitor("system_reset")
        v.wait_ready(step.timeout)
        return None
    if step.kind == "boot":
        v.wait_ready(step.timeout)
        return None
    # console
    v.wait_for(re.compile(step.arg.encode()), step.timeout, f"waiting for /{step.arg}/")
    return None
