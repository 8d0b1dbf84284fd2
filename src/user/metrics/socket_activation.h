/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The listening socket of `record --metrics systemd`, passed by systemd's
 * socket activation (sd_listen_fds(3)): the service manager binds the port
 * and keeps it bound across restarts of the service, so no other local
 * process can take it while the exporter restarts.
 *
 * The protocol, read here without libsystemd: LISTEN_PID is the pid the
 * sockets are for, LISTEN_FDS how many there are, from fd 3 on
 * (SD_LISTEN_FDS_START), LISTEN_FDNAMES their names, ':'-separated
 * (FileDescriptorName= of the socket unit).
 */
#ifndef HT_SOCKET_ACTIVATION_H
#define HT_SOCKET_ACTIVATION_H

#include <stddef.h>

#define HT_LISTEN_FDS_START 3
/* The name hypertrace-exporter.socket gives its sockets; those served when several are passed. */
#define HT_METRICS_FD_NAME "metrics"

/*
 * Takes the listening TCP sockets systemd passed to this process: the only
 * one, or every one named HT_METRICS_FD_NAME among several (a port on both
 * loopbacks is two sockets). Each must be a listening SOCK_STREAM socket of
 * AF_INET or AF_INET6; each is made close-on-exec and nonblocking, and
 * every other passed fd close-on-exec. LISTEN_PID, LISTEN_FDS and
 * LISTEN_FDNAMES are removed from the environment whatever happens, so
 * that no child (record -- CMD) takes them as its own. Returns how many
 * were put in fds (at most max), or -1 with a one-line reason that says
 * what to do in err.
 */
int ht_socket_activation_take(int *fds, size_t max, char *err, size_t errlen);

#endif
