"""A trace file's EXITS blocks (docs/trace-format.md), as the nested checks
read them: each vCPU thread's cumulative numbers, account, halts and their
wake-ups, and interrupts at every block, and the stops of a guest that was stopped
(SIGSTOP) while the recording ran."""
import struct

STATES = ('guest', 'kvm', 'vmm', 'wait', 'halted', 'blocked')
WAKE_CLASSES, WAKE_SLOTS = ('timer', 'vector', 'none'), 36
# A thread's halts (struct ht_vcpu_halts): their fields in the tuple of a halts block.
HALTS_FIELDS = ('halts', 'polled', 'caught', 'caught_ns', 'slept', 'slept_ns', 'poll_ns', 'poll_unknown', 'slept_poll_ns')
# The classes of an interrupt delivered to a vCPU (enum ht_irq_class).
IRQ_CLASSES = ('timer', 'ipi', 'device')


def format_version(data):
    return struct.unpack_from('<I', data, 8)[0]


def exits_header_size(data):
    """An EXITS block's header: 64 bytes from format version 7 (causes_not_theirs), 56 in 6 (lost_causes), 48 before."""
    v = format_version(data)
    return 64 if v >= 7 else 56 if v >= 6 else 48


def thread_rec_size(data):
    """A thread record: 2440 bytes from format version 15 (the timer wake-ups from their due time), 2120
    in 13 and 14 (the interrupts), 1128 in 12 (the slept halts' polling), 1120 in 10 and 11 (the halts'
    wake-ups), 176 in 9 (the halts), 120 before."""
    v = format_version(data)
    return 2440 if v >= 15 else 2120 if v >= 13 else 1128 if v >= 12 else 1120 if v >= 10 else 176 if v >= 9 else 120


class ExitsBlocks:
    """Per block, by thread id: states (the account: STATES, in ns), halts
    (HALTS_FIELDS), wakes (per class (count, total ns, wait ns), and
    'reblocked'), irqs (per class of IRQ_CLASSES (count, total ns, wait ns,
    woken ns), and 'accepted', 'overlapped', 'stale', 'level'; none before
    format version 13), dues (the timer wake-ups from their due time:
    (count, total ns, wait ns, fire ns, longest ns); none before version 15). identity_bad: the blocks whose account does not add up to
    its thread's time, or whose wait is not the account's. switches: by
    thread id, its last (preempt_count, preempt_ns, voluntary_count,
    voluntary_ns); lost_switches: the last block's lost_vcpu_switches;
    final: a block was the recording's last (flag 1); times: each block's
    time_ns (CLOCK_MONOTONIC when its numbers were read)."""

    def __init__(self, path):
        data = open(path, 'rb').read()
        self.version = format_version(data)
        self.states, self.halts, self.wakes, self.irqs, self.identity_bad = [], [], [], [], []
        self.dues = []
        state, hstate, wstate, istate, dstate = {}, {}, {}, {}, {}
        self.switches, self.lost_switches, self.final, self.times = {}, None, False, []
        trec, off = thread_rec_size(data), 256
        while off + 24 <= len(data):
            magic, typ, enc, plen, count, raw, crc = struct.unpack_from('<IHHIIII', data, off)
            if typ == 4:
                p = off + 24
                t, ns, nt, flags = struct.unpack_from('<QIII', data, p)
                self.lost_switches = struct.unpack_from('<Q', data, p + 40)[0]
                self.final = self.final or bool(flags & 1)
                p += exits_header_size(data) + ns * 376
                for i in range(nt):
                    f = struct.unpack_from('<IIHHIQQQQQQQ6Q', data, p + i * trec)
                    if trec >= 176:
                        # slept_poll_ns (at 1120) last; None in files before it
                        hstate[f[1]] = struct.unpack_from('<6QII', data, p + i * trec + 120) + \
                            (struct.unpack_from('<Q', data, p + i * trec + 1120)[0] if trec >= 1128 else None,)
                    if trec >= 1120:
                        # per class: count (the sum of its slots), total ns, wait ns; then reblocked
                        w, at = {}, p + i * trec + 176
                        for c in WAKE_CLASSES:
                            total, wait, longest = struct.unpack_from('<3Q', data, at)
                            w[c] = (sum(struct.unpack_from('<%dQ' % WAKE_SLOTS, data, at + 24)), total, wait)
                            at += 24 + 8 * WAKE_SLOTS
                        w['reblocked'] = struct.unpack_from('<Q', data, at)[0]
                        wstate[f[1]] = w
                    if trec >= 2120:
                        # struct ht_vcpu_irqs at 1128: per class total, wait, longest and slots; woken per class; counts
                        q, at = {}, p + i * trec + 1128
                        woken = struct.unpack_from('<3Q', data, at + 3 * (24 + 8 * WAKE_SLOTS))
                        for k, c in enumerate(IRQ_CLASSES):
                            total, wait, longest = struct.unpack_from('<3Q', data, at)
                            q[c] = (sum(struct.unpack_from('<%dQ' % WAKE_SLOTS, data, at + 24)), total, wait, woken[k])
                            at += 24 + 8 * WAKE_SLOTS
                        q.update(zip(('accepted', 'overlapped', 'stale', 'level'),
                                     struct.unpack_from('<4Q', data, at + 24)))
                        istate[f[1]] = q
                    if trec >= 2440:
                        # struct ht_vcpu_timer_due at 2120: total, wait, longest, slots, then fire ns
                        at = p + i * trec + 2120
                        total, wait, longest = struct.unpack_from('<3Q', data, at)
                        count = sum(struct.unpack_from('<%dQ' % WAKE_SLOTS, data, at + 24))
                        fire = struct.unpack_from('<Q', data, at + 24 + 8 * WAKE_SLOTS)[0]
                        dstate[f[1]] = (count, total, wait, fire, longest)
                    tid, wait, start, as_of, st = f[1], f[5], f[10], f[11], list(f[12:18])
                    self.switches[tid] = f[6:10]
                    # The identity, at every block: the states add up to the thread's time, to the nanosecond.
                    if sum(st) != as_of - start:
                        self.identity_bad.append('tid %d block %d: states %d ns, as_of - start %d ns' %
                                                 (tid, len(self.states), sum(st), as_of - start))
                    if wait != st[3]:
                        self.identity_bad.append('tid %d block %d: wait_ns %d, the account\'s wait %d' %
                                                 (tid, len(self.states), wait, st[3]))
                    state[tid] = st
                self.states.append(dict(state))
                self.halts.append(dict(hstate))
                self.wakes.append(dict(wstate))
                self.irqs.append(dict(istate))
                self.dues.append(dict(dstate))
                self.times.append(t)
            off += 24 + plen

    def stopped(self, tids):
        """The blocks in which no thread of tids was in guest, kvm, vmm or
        wait for a moment since the block before: blocks of a stopped guest."""
        b = self.states
        return [k for k in range(1, len(b))
                if all(t in b[k] and t in b[k - 1] and b[k][t][:4] == b[k - 1][t][:4] for t in tids)]

    def stops(self, tids):
        """The first block of each stop: each run of stopped blocks."""
        s = self.stopped(tids)
        return [k for i, k in enumerate(s) if i == 0 or s[i - 1] != k - 1]


# The polling of the halts that slept (slept_poll_ns: from each halt's
# start, its kvm_vcpu_wakeup's time less its ns, to the thread's switch-out
# into its sleep) against KVM's halt_poll_fail_ns (from the halt's start to
# the polling's end): per halt, ours runs on for the instructions from the
# polling's end to the switch-out (KVM's check for an event, schedule(),
# the sched_switch tracepoint and its programs), and starts late by those
# from KVM's reading of its clock to the tracepoint. In the emulated L1
# (TCG) that is +43 us per halt in the mean, measured quiet;
# POLL_LOST_SLACK_NS bounds it per halt, either way, with room for a host
# under load, where the emulation's instructions take longer. A thread
# preempted between the polling's end and its sleep (a loaded machine:
# KVM ends its polling early when another task is runnable) waits on the
# CPU's run queue in ours, which is wall time; the account's wait over the
# same interval bounds that part from above.
POLL_LOST_SLACK_NS = 150000


def poll_lost_bad(name, ours, kvm_fail, slept_polled, wait_ns=0):
    """Why the slept halts' polling (ours, ns) is not KVM's halt_poll_fail_ns
    but for POLL_LOST_SLACK_NS either way per slept halt that polled, and
    above it for no more than the threads' wait_ns besides; None if it is.
    A difference no wider than the bound could hide (fewer than 5 such
    halts, or KVM's total within the bound of 0) tests nothing: said."""
    slack = slept_polled * POLL_LOST_SLACK_NS
    if ours is None:
        return '%s: the file holds no slept_poll_ns (format version before 12)' % name
    if slept_polled < 5 or kvm_fail <= slack:
        return '%s: %d slept halts polled, KVM halt_poll_fail_ns %d ns: within the slack of 0, nothing tested' % (
            name, slept_polled, kvm_fail)
    if ours - kvm_fail > slack + wait_ns or kvm_fail - ours > slack:
        return ('%s: polling lost %d ns, KVM halt_poll_fail_ns %d ns: %+d ns over %d slept polled halts, more than %d ns '
                'each (and the threads\' wait of %d ns)') % (
            name, ours, kvm_fail, ours - kvm_fail, slept_polled, POLL_LOST_SLACK_NS, wait_ns)
    return None
