# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The guest's trace lines as boottrace's hypercalls carried them, rebuilt
from the raw arguments of report --csv -n 1150 -n 1151 (the ABI of
include/hypertrace/guest.h, not the product's decoder): for the nested
suites' checks of what reached the host."""
import csv


def _text_of(words, n):
    return b''.join(int(w, 16).to_bytes(8, 'little') for w in words)[:n]


def lines_of(path):
    """The lines of a report --csv -n 1150 -n 1151 file, in the host's
    order: each a dict of ns (the guest trace's time), cpu, len (the text's
    bytes), pid and text (bytes, up to len once whole); [] if the file
    cannot be read."""
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError:
        return []
    lines, by_seq = [], {}
    for r in sorted(rows, key=lambda r: int(r['exit_ns'])):
        a = [int(r['a%d' % i], 16) for i in range(4)]
        if r['nr'] == '1150':
            line = {'ns': a[0], 'cpu': a[1] >> 32 & 0xffff, 'len': a[1] >> 48, 'pid': a[2] & 0xffffffff,
                    'text': _text_of([r['a3']], 8)}
            lines.append(line)
            by_seq[a[1] & 0xffffffff] = line
        elif r['nr'] == '1151' and (a[0] & 0xffffffff) in by_seq:
            line = by_seq[a[0] & 0xffffffff]
            if a[0] >> 32 == len(line['text']):
                line['text'] += _text_of([r['a1'], r['a2'], r['a3']], 24)
    return lines
