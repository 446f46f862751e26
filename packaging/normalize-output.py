#!/usr/bin/env python3
"""Normalise rtlab's outputs for packaging/test-emulated, so that the outputs of one command run
by binaries for different targets can be compared byte for byte.

Only what describes the host running the command, the build, or the moment it ran is removed:
  json  parsed with the json module; the keys in DROPPED_KEYS are dropped wherever they occur,
        and the document is written back with sorted keys (output that does not parse is kept
        as text and marked, so a difference still shows)
  text  random run ids, clock-time stamps, the audit's own run time, the measuring threads' ids
        in cyclictest lines and the binary's work directory become placeholders
  html  as text
  sane-measure  not a comparison: whether a real measurement's JSON has a plausible sample
        count on every CPU (timings differ from run to run), as one line
  clean-exit    not a comparison: whether rtlab ran or failed with a one-line error, rather
        than crashing (a signal, a panic, the time limit)

Usage: normalize-output.py records DIR   turns the runs listed in DIR/manifest (written by
       test-emulated) into one record per check in DIR/out/NAME
       normalize-output.py MODE FILE     writes FILE normalised to standard output
"""

import json
import os
import re
import sys

# The build (`build`: version, commit, target, libc, linkage, profile), the time a command ran
# at or took (`started_at`, `ended_at`, `elapsed_us`, `generated_at`), the process (`tid`: the
# measuring threads' ids).
DROPPED_KEYS = {"build", "started_at", "ended_at", "elapsed_us", "generated_at", "tid"}

TEXT_RULES = [
    # The target triple, where text names the build (the HTML report's "rtlab" fact).
    (re.compile(r"\b(?:x86_64|aarch64|armv7|arm|i686)-unknown-linux-(?:gnu|musl)[a-z]*\b"), "<target>"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "<run-id>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"(\d+ checks in )\d+ ms"), r"\1<elapsed>"),
    (re.compile(r"^(T:\s*\d+\s*\()\s*\d+\)", re.M), r"\1<tid>)"),
]


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in DROPPED_KEYS}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def text(data):
    for pattern, replacement in TEXT_RULES:
        data = pattern.sub(replacement, data)
    return data


def as_json(data):
    if not data.strip():
        return ""
    try:
        doc = json.loads(data)
    except ValueError as err:
        return f"<not JSON: {err}>\n" + text(data)
    return json.dumps(strip(doc), indent=1, sort_keys=True) + "\n"


def sane_measure(data):
    try:
        run = json.loads(data)
        cpus = run["cpus"]
        periods = run["params"]["periods"]
        if run.get("status") != "complete" or not cpus:
            return f"bad: status {run.get('status')!r}, {len(cpus)} CPUs\n"
        for cpu in cpus:
            count, overruns = cpu["stats"]["count"], cpu["stats"]["overruns"]
            if not (0 < count <= periods and count + overruns <= periods):
                return f"bad: CPU {cpu['cpu']}: {count} samples, {overruns} overruns, {periods} periods\n"
            if sum(cpu["series"]["count"]) != count:
                return f"bad: CPU {cpu['cpu']}: the per-second counts do not add up to {count}\n"
    except (ValueError, KeyError, TypeError) as err:
        return f"bad: not an rtlab.measure result ({err!r})\n"
    return f"ok: {len(cpus)} CPUs, {periods} periods each, every CPU sampled\n"


MODES = {"json": as_json, "text": text, "html": text, "sane-measure": sane_measure}


def read(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return f.read()


def exit_line(mode, rc, stderr):
    if mode != "clean-exit":
        return str(rc)
    if rc <= 2 and "panicked" not in stderr:
        return "one of rtlab's (0-2)"
    return f"{rc}: a crash or the time limit"


def stderr_part(mode, quiet, rc, stderr):
    """What of standard error is compared."""
    if mode == "clean-exit":
        if "panicked" in stderr:
            return "<panicked>\n" + stderr
        if rc in (0, 1):
            return "<ran>\n"  # 1: a verdict failed, as on any machine that is not ready
        lines = [line for line in stderr.splitlines() if line.strip()]
        if lines and all(line.startswith("rtlab: ") for line in lines):
            return "<one-line error>\n"
        return "<failed without a one-line rtlab: error>\n" + stderr
    if quiet:
        stderr = "".join(
            line for line in stderr.splitlines(True) if "panicked" in line or line.startswith("rtlab: ")
        )
    return text(stderr)


def record(dirname, name, mode, quiet, rc, files):
    raw = os.path.join(dirname, "raw", name)
    stdout, stderr = read(raw + ".stdout"), read(raw + ".stderr")
    parts = [f"exit status: {exit_line(mode, rc, stderr)}\n", f"--- stdout ({mode})\n"]
    if mode != "clean-exit":
        parts.append(MODES[mode](stdout))
    parts += ["--- stderr\n", stderr_part(mode, quiet, rc, stderr)]
    for i, spec in enumerate(files):
        path, file_mode = spec.rsplit(":", 1)
        parts.append(f"--- file {path} ({file_mode})\n")
        kept = f"{raw}.file{i}"
        parts.append(MODES[file_mode](read(kept)) if os.path.exists(kept) else "<not written>\n")
    # The binary's own directory (its store, its files) reads the same for every binary.
    return "".join(parts).replace(dirname, "<work>")


def records(dirname):
    os.makedirs(os.path.join(dirname, "out"), exist_ok=True)
    with open(os.path.join(dirname, "manifest"), encoding="utf-8") as f:
        for line in f:
            name, mode, quiet, rc, *files = line.rstrip("\n").split("\t")
            out = record(dirname, name, mode, quiet == "1", int(rc), [s for s in files if s])
            with open(os.path.join(dirname, "out", name), "w", encoding="utf-8") as o:
                o.write(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "records":
        records(os.path.abspath(path))
    elif mode in MODES:
        sys.stdout.write(MODES[mode](read(path)))
    else:
        sys.exit(f"normalize-output.py: unknown mode {mode!r}\n\n{__doc__}")


if __name__ == "__main__":
    main()
