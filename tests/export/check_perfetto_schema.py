#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks the vendored subset of Perfetto's trace format against Perfetto's
own merged perfetto_trace.proto (protos/perfetto/trace/perfetto_trace.proto
of the commit the subset names):

    check_perfetto_schema.py SUBSET.proto UPSTREAM.proto

Every message, field and enum value of the subset must be upstream's: the
same full name, field number, type (and message or enum type), label and
oneof; every enum value the same number. A trace written against the
subset is then read by Perfetto as the subset means it. Both files are
compiled by protoc into descriptor sets.
"""
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2


def fail(msg):
    print(f"check_perfetto_schema: {msg}")
    sys.exit(1)


def descriptors(proto):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "set.pb")
        subprocess.run(["protoc", f"--proto_path={os.path.dirname(os.path.abspath(proto))}", "-o", out,
                        os.path.basename(proto)], check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(open(out, "rb").read())
    messages, enums = {}, {}

    def walk(prefix, msgs, ens):
        for e in ens:
            enums[f"{prefix}.{e.name}"] = {v.name: v.number for v in e.value}
        for m in msgs:
            name = f"{prefix}.{m.name}"
            messages[name] = m
            walk(name, m.nested_type, m.enum_type)

    for f in fds.file:
        walk("." + f.package, f.message_type, f.enum_type)
    return messages, enums


def oneof_of(msg, field):
    return msg.oneof_decl[field.oneof_index].name if field.HasField("oneof_index") else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sub_msgs, sub_enums = descriptors(sys.argv[1])
    up_msgs, up_enums = descriptors(sys.argv[2])
    fields = values = 0
    for name, m in sub_msgs.items():
        up = up_msgs.get(name)
        if up is None:
            fail(f"message {name} is not upstream's")
        up_fields = {f.name: f for f in up.field}
        for f in m.field:
            u = up_fields.get(f.name)
            if u is None:
                fail(f"{name}.{f.name} is not upstream's")
            mine = (f.number, f.type, f.type_name, f.label, oneof_of(m, f))
            theirs = (u.number, u.type, u.type_name, u.label, oneof_of(up, u))
            if mine != theirs:
                fail(f"{name}.{f.name}: (number, type, type name, label, oneof) {mine}, upstream {theirs}")
            fields += 1
    for name, vals in sub_enums.items():
        up = up_enums.get(name)
        if up is None:
            fail(f"enum {name} is not upstream's")
        for v, number in vals.items():
            if up.get(v) != number:
                fail(f"{name}.{v} = {number}, upstream {up.get(v)}")
            values += 1
    print(f"  {len(sub_msgs)} messages, {fields} fields and {len(sub_enums)} enums ({values} values) of the subset "
          f"are upstream's ({len(up_msgs)} messages)")
    print("check_perfetto_schema: OK")


if __name__ == "__main__":
    main()
