# Shell helper for the export suites: a guest's boot-time ftrace text with
# initcalls, for tests/tools/boottrace_gen to replay. Sourced after
# tests/lib.sh.
# shellcheck shell=bash

# initcall_trace FILE: tests/cli/test_initcalls_cli.sh's sample (levels from
# the boot task, an initcall of another CPU, a module's init, a lost-events
# line, a name with a terminal escape and a quote, a line longer than 1024
# bytes), then a module's init that overlaps the first one (another task's)
# and one that never returns. report --initcalls --csv reads it as 4 levels
# and 8 initcalls, 1 without its return.
initcall_trace() {
	local esc long
	esc=$(printf '\033')
	long=$(head -c 1500 /dev/zero | tr '\0' 'x')
	cat >"$1" <<EOT
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [000] d..1.     0.061234: initcall_level: level=console
          <idle>-0       [000] d..1.     0.061240: initcall_start: func=con_init+0x0/0x250
          <idle>-0       [000] d..1.     0.061990: initcall_finish: func=con_init+0x0/0x250 ret=0
       swapper/0-1       [000] .....     0.210000: initcall_level: level=early
       swapper/0-1       [000] .....     0.210005: initcall_start: func=init_hw_perf_events+0x0/0x6a0
       swapper/0-1       [000] .....     0.211500: initcall_finish: func=init_hw_perf_events+0x0/0x6a0 ret=0
       swapper/0-1       [000] .....     0.300000: initcall_level: level=core
       swapper/0-1       [000] .....     0.300010: initcall_start: func=pcpu_init+0x0/0x60
       swapper/0-1       [000] .....     0.300020: initcall_finish: func=pcpu_init+0x0/0x60 ret=-19
       swapper/0-1       [001] .....     0.300030: initcall_start: func=evil_${esc}[31m"x_init+0x0/0x10
       swapper/0-1       [001] .....     0.350030: initcall_finish: func=evil_${esc}[31m"x_init+0x0/0x10 ret=0
CPU:1 [LOST 3 EVENTS]
       swapper/0-1       [001] .....     0.400000: initcall_level: level=late
       swapper/0-1       [001] .....     0.400100: initcall_start: func=late_thing+0x0/0x10
       swapper/0-1       [001] .....     0.420100: initcall_finish: func=late_thing+0x0/0x10 ret=0
       swapper/0-1       [001] .....     0.430000: user_event: $long
          insmod-80      [001] .....     2.000000: initcall_start: func=virtio_net_driver_init+0x0/0x1000 [virtio_net]
          insmod-80      [001] .....     2.003000: initcall_finish: func=virtio_net_driver_init+0x0/0x1000 [virtio_net] ret=0
          insmod-81      [000] .....     2.001000: initcall_start: func=e1000_init_module+0x0/0x80 [e1000]
          insmod-81      [000] .....     2.005000: initcall_finish: func=e1000_init_module+0x0/0x80 [e1000] ret=0
        modprobe-90      [001] .....     2.010000: initcall_start: func=hang_init+0x0/0x10 [hang]
EOT
}
