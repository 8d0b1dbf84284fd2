#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Every event `convert --lttng` writes that lttng-modules declares must have
lttng-modules' name, field names and field types, for one kernel version's
branch of its #ifs.

    check_lttng_modules.py SRC KERNEL_RELEASE METADATA...

SRC is an unpacked lttng-modules source tree (Debian's lttng-modules-dkms:
usr/src/lttng-modules-*). The LTTNG_TRACEPOINT_EVENT* macros of the headers
below are parsed after their #if/#elif/#else are resolved for KERNEL_RELEASE
(not an RT, Ubuntu, RHEL or SLE kernel; CONFIG_* options off), and each
ctf_*() field is turned into the CTF type lttng-modules writes for it on
x86-64 (src/lttng-events.c: integers byte-aligned, char arrays UTF8). The
kretprobe events (src/probes/lttng-kretprobes.c: NAME_entry, NAME_exit with
ip and parent_ip) and the pid, tid and procname contexts are read from their
sources the same way. Prints every comparison and exits 1 on any difference
(or if an expected event is missing from the metadata)."""
import re
import sys
from pathlib import Path

HEADERS = ["include/instrumentation/events/arch/x86/kvm/trace.h",
           "include/instrumentation/events/lttng-statedump.h",
           "include/instrumentation/events/sched.h",
           "include/instrumentation/events/irq.h"]
KRETPROBES = "src/probes/lttng-kretprobes.c"
CONTEXTS = {"pid": "src/lttng-context-pid.c", "tid": "src/lttng-context-tid.c",
            "procname": "src/lttng-context-procname.c"}
CONSTANTS = {"TASK_COMM_LEN": 16, "sizeof(current->comm)": 16}

# x86-64 sizes and signedness of the C types lttng-modules traces with.
C_TYPES = {
    "char": (8, True), "signed char": (8, True), "unsigned char": (8, False), "u8": (8, False),
    "uint8_t": (8, False), "__u8": (8, False), "bool": (8, False), "short": (16, True), "s16": (16, True),
    "unsigned short": (16, False), "u16": (16, False), "__u16": (16, False), "uint16_t": (16, False),
    "int": (32, True), "s32": (32, True), "pid_t": (32, True), "int32_t": (32, True),
    "unsigned int": (32, False), "unsigned": (32, False), "u32": (32, False), "__u32": (32, False),
    "uint32_t": (32, False), "dev_t": (32, False), "long": (64, True), "long long": (64, True),
    "s64": (64, True), "int64_t": (64, True), "unsigned long": (64, False), "unsigned long long": (64, False),
    "u64": (64, False), "__u64": (64, False), "uint64_t": (64, False), "size_t": (64, False),
}


def version_code(release):
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release)
    if not m:
        sys.exit(f"cannot read a kernel version in '{release}'")
    a, b, c = (int(x or 0) for x in m.groups())
    return (a << 16) + (b << 8) + min(c, 255)


def eval_condition(expr, code):
    """A preprocessor condition of lttng-modules, for kernel `code`."""
    e = re.sub(r"/\*.*?\*/", " ", expr)
    e = re.sub(r"LTTNG_KERNEL_VERSION\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)",
               lambda m: str((int(m[1]) << 16) + (int(m[2]) << 8) + int(m[3])), e)
    # Distribution kernel ranges (RT, Ubuntu, RHEL, SLE, ...): not this kernel.
    e = re.sub(r"LTTNG_(\w+_)?KERNEL_RANGE\s*\([^)]*\)", "0", e)
    e = re.sub(r"\b[A-Za-z_]\w*\s*\([^()]*\)", "0", e)  # any other function-like macro
    e = re.sub(r"\bdefined\s*\(\s*\w+\s*\)|\bdefined\s+\w+", "0", e)
    e = e.replace("LTTNG_LINUX_VERSION_CODE", str(code))
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    e = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: m[0] if m[0] in ("and", "or", "not") else "0", e)
    return bool(eval(e, {"__builtins__": {}}))  # only numbers and operators are left


def preprocess(text, code):
    """The lines that the kernel `code` compiles: #if/#ifdef/#ifndef/#elif/#else resolved."""
    text = re.sub(r"\\\n", " ", text)
    out, stack = [], []  # stack of (this branch on, some branch taken, parent on)
    for line in text.split("\n"):
        s = line.strip()
        m = re.match(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", s)
        if not m:
            if all(on for on, _, _ in stack):
                out.append(line)
            continue
        kw, rest = m[1], m[2].strip()
        parent = all(on for on, _, _ in stack)
        if kw == "if":
            v = eval_condition(rest, code)
            stack.append((v, v, parent))
        elif kw == "ifdef":
            stack.append((False, False, parent))  # no CONFIG_* option, no guard, is defined
        elif kw == "ifndef":
            stack.append((True, True, parent))
        elif kw == "elif":
            on, taken, par = stack.pop()
            v = not taken and eval_condition(rest, code)
            stack.append((v, taken or v, par))
        elif kw == "else":
            on, taken, par = stack.pop()
            stack.append((not taken, True, par))
        else:
            stack.pop()
    return "\n".join(out)


def balanced(text, start):
    """The text inside the parentheses opening at text[start] ('('), and the index after them."""
    depth, i = 0, start
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
        i += 1
    raise ValueError("unbalanced parentheses")


def split_args(s):
    args, depth, cur = [], 0, ""
    for ch in s:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


def c_integer(ctype, base=10, encoding="none"):
    ctype = " ".join(ctype.replace("const", "").split())
    if ctype.endswith("*"):
        return ("integer", 64, False, base, encoding)  # a pointer: unsigned long on x86-64
    if ctype not in C_TYPES:
        return ("unknown C type", ctype)  # an event the export does not write, or a difference
    size, signed = C_TYPES[ctype]
    return ("integer", size, signed, base, encoding)


def ctf_fields(body):
    """The fields of a TP_FIELDS(...) body as (name, type)."""
    fields, pos = [], 0
    for m in re.finditer(r"\b(ctf_\w+)\s*\(", body):
        if m.start() < pos:
            continue
        inner, pos = balanced(body, m.end() - 1)
        kind, a = m[1], split_args(inner)
        if kind in ("ctf_integer", "ctf_integer_nowrite", "ctf_user_integer"):
            fields.append((a[1], c_integer(a[0])))
        elif kind in ("ctf_integer_hex", "ctf_user_integer_hex"):
            fields.append((a[1], c_integer(a[0], 16)))
        elif kind in ("ctf_array_text", "ctf_user_array_text"):
            fields.append((a[1], ("array", c_integer(a[0], 10, "UTF8"), CONSTANTS.get(a[3], a[3]))))
        elif kind in ("ctf_string", "ctf_user_string"):
            fields.append((a[0], ("string",)))
        else:
            fields.append((a[1] if len(a) > 1 else a[0], ("unsupported", kind)))
    return fields


def lttng_events(src, code):
    """Event name -> fields, from the headers' LTTNG_TRACEPOINT_EVENT* macros."""
    classes, events = {}, {}
    for h in HEADERS:
        text = preprocess((src / h).read_text(), code)
        for m in re.finditer(r"\bLTTNG_TRACEPOINT_EVENT(_[A-Z_]+)?\s*\(", text):
            variant = m[1] or ""
            args = split_args(balanced(text, m.end() - 1)[0])
            body = next((a for a in args if a.startswith("TP_FIELDS")), None)
            fields = ctf_fields(balanced(body, body.index("("))[0]) if body else None
            if variant in ("_CLASS", "_CLASS_CODE", "_CLASS_CODE_NOARGS", "_CLASS_NOARGS"):
                classes[args[0]] = fields
            elif variant in ("", "_CODE", "_NOARGS", "_CODE_NOARGS"):
                events[args[0]] = fields
            elif variant in ("_MAP", "_CODE_MAP", "_MAP_NOARGS", "_CODE_MAP_NOARGS"):
                events[args[1]] = fields
            elif variant in ("_INSTANCE", "_INSTANCE_NOARGS"):
                events[args[1]] = classes[args[0]]
            elif variant in ("_INSTANCE_MAP", "_INSTANCE_MAP_NOARGS"):
                events[args[2]] = classes[args[0]]
    return events


def static_fields(text):
    """lttng_kernel_static_event_field("NAME", TYPE, ...) declarations of a probe or context source."""
    fields = []
    for m in re.finditer(r"lttng_kernel_static_event_field\s*\(", text):
        a = split_args(balanced(text, m.end() - 1)[0])
        name, t = a[0].strip('"'), a[1]
        m2 = re.match(r"lttng_kernel_static_type_integer_from_type\s*\((.*)\)$", t, re.S)
        m3 = re.match(r"lttng_kernel_static_type_array_text\s*\((.*)\)$", t, re.S)
        if m2:
            ta = split_args(m2[1])
            fields.append((name, c_integer(ta[0], int(ta[2]))))
        elif m3:
            fields.append((name, ("array", c_integer("char", 10, "UTF8"), CONSTANTS.get(m3[1].strip(), m3[1]))))
        else:
            fields.append((name, ("unsupported", t)))
    return fields


def kretprobe_decl(src):
    text = (src / KRETPROBES).read_text()
    suffixes = re.findall(r'suffix\s*=\s*"([^"]+)"', text)
    return suffixes, static_fields(text)


def tsdl_type(t):
    t = t.strip()
    if t == "string" or t.startswith("string "):
        return ("string",)
    m = re.match(r"integer\s*\{([^}]*)\}", t)
    if not m:
        return ("unsupported", t)
    attrs = dict(kv.split("=") for kv in (x.replace(" ", "") for x in m[1].split(";")) if "=" in kv)
    signed = attrs.get("signed", "0") in ("1", "true")
    return ("integer", int(attrs["size"]), signed, int(attrs.get("base", "10")), attrs.get("encoding", "none"))


def tsdl_fields(struct_body):
    out = []
    for line in struct_body.split("\n"):
        line = line.strip().rstrip(";")
        if not line:
            continue
        m = re.match(r"(.*\S)\s+_(\w+)(?:\[(\d+)\])?$", line, re.S)
        if not m:
            raise ValueError(f"cannot read TSDL field '{line}'")
        t = tsdl_type(m[1])
        out.append((m[2], ("array", t, int(m[3])) if m[3] else t))
    return out


def metadata_events(path):
    text = Path(path).read_text()
    events = {}
    for m in re.finditer(r"event \{\s*name = \"((?:[^\"\\]|\\.)*)\";.*?fields := struct \{(.*?)\n\t\};", text, re.S):
        events[m[1]] = tsdl_fields(m[2])
    ctx = re.search(r"event\.context := struct \{(.*?)\n\t\};", text, re.S)
    context = tsdl_fields(ctx[1]) if ctx else []
    pctx = re.search(r"struct packet_context \{(.*?)\};", text, re.S)
    return events, context, pctx[1].split() if pctx else []


def show(t):
    if t[0] == "integer":
        return f"{'s' if t[2] else 'u'}{t[1]}" + (" hex" if t[3] == 16 else "") + (f" {t[4]}" if t[4] != "none" else "")
    if t[0] == "array":
        return f"{show(t[1])}[{t[2]}]"
    return "/".join(str(x) for x in t)


def compare(what, ours, theirs, problems):
    if ours == theirs:
        print(f"  same: {what}: " + ", ".join(f"{n} {show(t)}" for n, t in ours))
    else:
        problems.append(f"{what}: export has [{', '.join(f'{n} {show(t)}' for n, t in ours)}], "
                        f"lttng-modules has [{', '.join(f'{n} {show(t)}' for n, t in theirs)}]")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src, release, metadata = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    code = version_code(release)
    declared = lttng_events(src, code)
    suffixes, kret_fields = kretprobe_decl(src)
    ctx_decl = {n: static_fields((src / f).read_text())[0][1] for n, f in CONTEXTS.items()}
    # The C string literals that print struct packet_context, joined and unescaped.
    decl = re.search(r'"struct packet_context \{\\n"(.*?)"\};', (src / "src/lttng-events.c").read_text(), re.S)
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', decl[1])).replace("\\t", " ").replace("\\n", " ")
    packet_context = re.findall(r"(\w[\w ]*\w) (\w+);", text)
    problems, checked, foreign = [], set(), set()
    print(f"lttng-modules {src.name} for Linux {release}: {len(declared)} tracepoint events declared; "
          f"kretprobe suffixes {suffixes}")
    for path in metadata:
        events, context, pctx = metadata_events(path)
        print(f"{path}: {len(events)} event classes")
        for name, fields in events.items():
            if name in declared:
                compare(name, fields, declared[name], problems)
                checked.add(name)
            elif any(name.endswith(s) for s in suffixes) and [n for n, _ in fields] == [n for n, _ in kret_fields]:
                compare(f"{name} (kretprobe)", fields, kret_fields, problems)
                checked.add("kretprobe" + next(s for s in suffixes if name.endswith(s)))
            else:
                foreign.add(name)
        for n, t in context:
            if n in ctx_decl:
                compare(f"context {n}", [(n, t)], [(n, ctx_decl[n])], problems)
            else:
                problems.append(f"context {n} is none of lttng-modules' {sorted(ctx_decl)}")
        ours_pctx = re.findall(r"(\w[\w ]*\w) (\w+);", " ".join(pctx))
        if ours_pctx != packet_context or not packet_context:
            problems.append(f"{path}: packet context {ours_pctx} is not lttng-modules' {packet_context}")
        else:
            print("  same: packet context: " + ", ".join(f"{n} {t}" for t, n in ours_pctx))
    print(f"not declared by Debian's lttng-modules (the addons' vmsync events, the project's own): {sorted(foreign)}")
    for want in ("kvm_x86_exit", "kvm_x86_hypercall", "kvm_x86_entry", "sched_switch", "sched_wakeup",
                 "irq_handler_entry", "irq_handler_exit", "kretprobe_entry", "kretprobe_exit"):
        if want not in checked:
            problems.append(f"{want}: not in the export's metadata, so not checked")
    print(f"{len(problems)} differences")
    for p in problems:
        print(f"  DIFFERENT: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
