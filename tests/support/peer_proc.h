/* Starting and stopping helper processes for tests and benchmarks: spawn a
 * program whose stdout announces "LISTENING <port>", with its stderr in a
 * log file; signal it by pid. Test thread only. */
#ifndef SPATE_TESTS_PEER_PROC_H
#define SPATE_TESTS_PEER_PROC_H

#include <stdbool.h>
#include <sys/types.h>

struct peer_proc {
    pid_t pid;
    int port;
    char line[128]; /* the whole announcement, for programs that say more */
    char log_path[256];
};

/* argv[0] is the program; log_path may be NULL (stderr inherited). Waits up
 * to 20 s for the LISTENING line. Returns 0 or -1. */
int peer_spawn(struct peer_proc *p, char *const argv[], const char *log_path);
/* Sends sig (if alive); with SIGKILL also reaps it. */
void peer_signal(struct peer_proc *p, int sig);
void peer_kill(struct peer_proc *p);
/* Whether the log file contains text (waits up to timeout_ms for it). */
bool peer_log_contains(const struct peer_proc *p, const char *text, int timeout_ms);

#endif
