"""The whole tool's cost against perf kvm stat, as make bench's nested
sections 6 and 6b measure it: each round runs the workload three ways (off,
record, perf) and writes, in the nested machine's files,
  cost.txt       "- WAY ROUND TICKS": the machine's busy time of the way
  cpu.txt        "- WAY ROUND USER SYS": the tool process's CPU
  cpu_start.txt  the same, up to its start (6b)
  rss.txt        "- WAY ROUND KB": the tool process's peak RSS (VmHWM)
in 1/100 s. A way's cost is its busy time minus the off way's of the same
round; the verdict is the median of the rounds' record/perf ratios."""
import os
import statistics


def _rows(path, fields):
    """The lines of path split into fields words each (none if it is absent)."""
    if not os.path.exists(path):
        return []
    return [line.split() for line in open(path) if len(line.split()) == fields]


class Rounds:
    """The rounds' costs: per round what record and perf added to the off way."""

    def __init__(self, F, rounds):
        self.F, self.rounds = F, rounds
        self.ticks = {(way, int(r)): int(t) for _, way, r, t in _rows(F + '/cost.txt', 4)}
        self.rec_costs, self.perf_costs, self.ratios = [], [], []
        for r in range(1, rounds + 1):
            if any((way, r) not in self.ticks for way in ('off', 'record', 'perf')):
                continue
            rc = self.ticks['record', r] - self.ticks['off', r]
            pc = self.ticks['perf', r] - self.ticks['off', r]
            self.rec_costs.append(rc)
            self.perf_costs.append(pc)
            if pc > 0:
                self.ratios.append(max(rc, 0) / pc)

    def print_costs(self, off_label):
        print('  %-58s %s' % (off_label, ' '.join(str(self.ticks.get(('off', r), '-')) for r in range(1, self.rounds + 1))))
        print('  %-58s %s' % ('added by record --exits + report --exits', ' '.join(map(str, self.rec_costs))))
        print('  %-58s %s' % ('added by perf kvm stat record + perf kvm stat report', ' '.join(map(str, self.perf_costs))))

    def print_processes(self, record_label, starts=False):
        """Each tool process's CPU (user + system) per round, and with starts its start apart."""
        cpu, start = {}, {}
        for _, way, r, ut, st in _rows(self.F + '/cpu.txt', 5):
            cpu.setdefault(way, []).append((int(ut), int(st)))
        for _, way, r, ut, st in _rows(self.F + '/cpu_start.txt', 5) if starts else []:
            start.setdefault(way, []).append(int(ut) + int(st))
        for way, label in (('record', record_label), ('perf', 'of which the perf kvm stat record process')):
            if way in cpu:
                print('  %-58s %s  (user + system: %s)' % (label, ' '.join(str(u + k) for u, k in cpu[way]),
                                                           ' '.join('%d+%d' % uk for uk in cpu[way])))
            if way in start:
                print('  %-58s %s' % ('  of which its start (%s)' % ('loading the BPF programs' if way == 'record' else 'opening its events'),
                                      ' '.join(map(str, start[way]))))

    def cpu_verdict(self, name, inconclusive=''):
        """The CPU target's TARGET line. A round whose paired difference is not
        above zero was noise as large as the cost: the verdict is then
        inconclusive (NOT MET), never a made-up ratio."""
        if self.ratios and min(self.rec_costs + self.perf_costs) > 0:
            ratio = statistics.median(self.ratios)
            print('  record/perf per round: %s' % ' '.join('%.3f' % x for x in self.ratios))
            print('TARGET %-52s %6.3fx  (limit 0.25x)  %s' % (name, ratio, 'met' if ratio <= 0.25 else 'NOT MET'))
        else:
            print('TARGET %-52s %7s  (limit 0.25x)  NOT MET (inconclusive: a round measured a cost <= 0%s)' % (name, 'n/a', inconclusive))

    def rss_verdict(self, name):
        """The peak RSS target's TARGET line: each tool process's largest of the rounds'."""
        rss = {}
        for _, way, _, kb in _rows(self.F + '/rss.txt', 4):
            if kb.isdigit():
                rss.setdefault(way, []).append(int(kb))
        if rss.get('record') and rss.get('perf'):
            rec_kb, perf_kb = max(rss['record']), max(rss['perf'])
            print('  %-58s %s' % ('peak RSS of the record process (MB)', ' '.join('%.1f' % (x / 1024) for x in rss['record'])))
            print('  %-58s %s' % ('peak RSS of the perf kvm stat record process (MB)', ' '.join('%.1f' % (x / 1024) for x in rss['perf'])))
            print('TARGET %-52s %6.3fx  (limit 1.00x)  %s' % (name, rec_kb / perf_kb, 'met' if rec_kb <= perf_kb else 'NOT MET'))
        else:
            print('TARGET %-52s %7s  (limit 1.00x)  NOT MET (not measured: %s)' % (name, 'n/a', sorted(rss)))
