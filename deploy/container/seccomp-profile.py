#!/usr/bin/env python3
"""Writes a seccomp profile for running hypertrace-bpf in a container: the
container runtime's default profile (read from the file given, e.g.
/usr/share/containers/seccomp.json) plus bpf() allowed with CAP_BPF and
perf_event_open() with CAP_PERFMON. Older defaults (Debian 12's podman)
allow both only with CAP_SYS_ADMIN, which this container does not get;
newer ones already allow them with these capabilities, and then the
profile changes nothing.

Usage: seccomp-profile.py DEFAULT_PROFILE OUTPUT
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: seccomp-profile.py DEFAULT_PROFILE OUTPUT")
    with open(sys.argv[1]) as f:
        profile = json.load(f)
    # Rules are matched in order and the first allow for a system call wins:
    # these go first, each for its own capability only.
    profile["syscalls"][:0] = [
        {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_BPF"]}},
        {"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_PERFMON"]}},
    ]
    with open(sys.argv[2], "w") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
