#!/usr/bin/env python3
"""Fills a man page source (scdoc) with a command's --help text.

Usage: mangen.py PAGE.scd < HELP > PAGE.full.scd

A line '%help PART' in PAGE.scd is replaced by that part of the --help text
read on stdin, in scdoc markup:
  synopsis     the Usage: lines
  description  the paragraphs between Usage: and the first heading
  commands     the "Commands:" block
  options      every other heading block ("Options:", "Selection (...):",
               ...) and the paragraphs after them, up to EXAMPLES:
  examples     the EXAMPLES: block
So an option exists in a man page exactly when it is in --help: the options
are never written twice. Everything else on the page (EXIT STATUS,
ENVIRONMENT, FILES, SEE ALSO, ...) is written in PAGE.scd.

--help layout this reads (the commands' help texts keep to it): a heading is
an unindented line ending in ':'; an option entry is an indented line
starting with '-': its term ends at the first run of two spaces (or at the
end of the line, the description then following on deeper-indented lines);
under "Commands:" an entry is an indented word and its description.
"""
import re
import sys

OPTION_TOKEN = re.compile(r'(-{1,2}[A-Za-z0-9?][A-Za-z0-9-]*)')


def esc(text):
    """scdoc text: backslash, '*' and '_' are markup."""
    return text.replace('\\', '\\\\').replace('*', '\\*').replace('_', '\\_')


def esc_literal(text):
    return text.replace('\\', '\\\\')


def indent_of(line):
    return len(line) - len(line.lstrip(' '))


def is_heading(line):
    return bool(line) and not line[0].isspace() and line.rstrip().endswith(':')


def term_markup(term):
    """'-o, --output FILE' -> '*-o, --output* _FILE_' (options bold, values underlined)."""
    out = []
    for piece in re.split(r'(\s*,\s*|\s+)', term):
        if not piece:
            continue
        if piece.strip() in ('', ','):
            out.append(piece)
        elif OPTION_TOKEN.fullmatch(piece):
            out.append('*' + esc(piece) + '*')
        else:
            out.append('_' + esc(piece) + '_')
    return ''.join(out)


def split_entry(text):
    """'--nr N    desc' -> ('--nr N', 'desc'); a term alone -> (term, '')."""
    m = re.search(r'\S {2,}(?=\S)', text)
    if not m:
        return text.strip(), ''
    return text[:m.start() + 1].strip(), text[m.end():].strip()


def parse(help_text):
    lines = help_text.rstrip('\n').split('\n')
    i = 0
    usage = []
    if lines and lines[0].startswith('Usage:'):
        usage.append(lines[0][len('Usage:'):].strip())
        i = 1
        while i < len(lines) and lines[i].strip() and lines[i][0].isspace():
            usage.append(lines[i].strip())
            i += 1
    desc, blocks, examples = [], [], []
    # Paragraphs before the first heading: the description.
    para = []
    while i < len(lines) and not is_heading(lines[i]):
        if lines[i].strip():
            para.append(lines[i].strip())
        elif para:
            desc.append(' '.join(para))
            para = []
        i += 1
    if para:
        desc.append(' '.join(para))
    # Heading blocks and paragraphs, up to EXAMPLES:.
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.strip().upper() == 'EXAMPLES:':
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i][0].isspace()):
                examples.append(lines[i][4:] if lines[i].startswith('    ') else lines[i].strip())
                i += 1
            while examples and not examples[-1].strip():
                examples.pop()
            continue
        if is_heading(line):
            heading = line.strip()[:-1]
            commands = heading == 'Commands'
            entries, i = parse_entries(lines, i + 1, commands)
            blocks.append(('heading', heading, entries))
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not is_heading(lines[i]):
            para.append(lines[i].strip())
            i += 1
        blocks.append(('para', ' '.join(para), None))
    return usage, desc, blocks, examples


def parse_entries(lines, i, commands):
    """Indented lines under a heading: [('entry', term, desc) | ('literal', text, None)]."""
    entries = []
    while i < len(lines) and lines[i].strip() and lines[i][0].isspace():
        line = lines[i]
        ind = indent_of(line)
        body = line.strip()
        if body.startswith('-') or commands:
            term, desc = split_entry(body)
            i += 1
            parts = [desc] if desc else []
            # Deeper lines continue the description, but a line starting
            # with '-' a little deeper ("  -D, --dump" then "      --per-vm")
            # is the next entry.
            while i < len(lines) and lines[i].strip() and indent_of(lines[i]) > ind:
                if lines[i].strip().startswith('-') and indent_of(lines[i]) <= ind + 4:
                    break
                parts.append(lines[i].strip())
                i += 1
            entries.append(('entry', term, ' '.join(parts)))
        else:
            entries.append(('literal', body, None))
            i += 1
    return entries, i


def render(part, parsed, cmdname):
    usage, desc, blocks, examples = parsed
    out = []
    if part == 'synopsis':
        for u in usage:
            if not out and cmdname and u.startswith(cmdname):
                out.append('*' + esc(cmdname) + '*' + esc(u[len(cmdname):]))
            else:
                out.append(esc(u))
        return [' '.join(out)]
    if part == 'description':
        for p in desc:
            out += [esc(p), '']
        return out[:-1]
    if part == 'examples':
        return ['```'] + [esc_literal(e) for e in examples] + ['```']
    if part in ('options', 'commands'):
        for kind, text, entries in blocks:
            if (text == 'Commands') != (part == 'commands'):
                continue
            if kind == 'para':
                out += [esc(text), '']
                continue
            if text not in ('Options', 'Commands'):
                out += ['## ' + esc(text.upper() if len(text) < 12 else text), '']
            literal = []
            for ekind, term, edesc in entries:
                if ekind == 'literal':
                    literal.append(term)
                    continue
                if literal:
                    out += ['```'] + [esc_literal(t) for t in literal] + ['```', '']
                    literal = []
                out.append(term_markup(term))
                if edesc:
                    out.append('\t' + esc(edesc))
                out.append('')
            if literal:
                out += ['```'] + [esc_literal(t) for t in literal] + ['```', '']
        while out and not out[-1]:
            out.pop()
        return out
    raise SystemExit(f'mangen: unknown part %help {part}')


def main():
    if len(sys.argv) != 2:
        raise SystemExit('usage: mangen.py PAGE.scd < HELP > PAGE.full.scd')
    with open(sys.argv[1], encoding='utf-8') as f:
        source = f.read().split('\n')
    help_text = sys.stdin.read()
    parsed = parse(help_text) if help_text.strip() else None
    # The command as its synopsis names it: "hypertrace-bpf record".
    cmdname = ''
    if parsed and parsed[0]:
        m = re.match(r'[^\s\[(]+(?: [a-z][a-z-]*(?= |$))?', parsed[0][0])
        cmdname = m.group(0) if m else ''
    out = []
    for line in source:
        m = re.fullmatch(r'%help (\w+)', line)
        if not m:
            out.append(line)
            continue
        if parsed is None:
            raise SystemExit(f'mangen: {sys.argv[1]} uses %help but no --help text was given')
        out += render(m.group(1), parsed, cmdname)
    sys.stdout.write('\n'.join(out))


if __name__ == '__main__':
    main()
