/* Helper processes for tests and benchmarks (peer_proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/peer_proc.h"

int
peer_spawn(struct peer_proc *p, char *const argv[], const char *log_path)
{
    int out[2];
    char line[128];
    size_t got = 0;

    memset(p, 0, sizeof *p);
    p->pid = -1;
    if (log_path != NULL)
        snprintf(p->log_path, sizeof p->log_path, "%s", log_path);
    if (pipe(out) != 0)
        return -1;
    p->pid = fork();
    if (p->pid < 0)
        return -1;
    if (p->pid == 0) {
        /* Never outlive the test, whatever way it ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        if (log_path != NULL) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);

            if (fd >= 0) {
                dup2(fd, 2);
                close(fd);
            }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    /* Read the announcement, one byte at a time up to its newline. */
    while (got < sizeof line - 1) {
        struct pollfd pfd = { .fd = out[0], .events = POLLIN };
        ssize_t n;

        if (poll(&pfd, 1, 20000) <= 0)
            break;
        n = read(out[0], line + got, 1);
        if (n <= 0)
            break;
        if (line[got] == '\n')
            break;
        got += (size_t)n;
    }
    line[got] = '\0';
    close(out[0]);
    snprintf(p->line, sizeof p->line, "%s", line);
    if (sscanf(line, "LISTENING %d", &p->port) != 1) {
        peer_kill(p);
        return -1;
    }
    return 0;
}

void
peer_signal(struct peer_proc *p, int sig)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, sig);
    if (sig == SIGKILL) {
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        p->pid = -1;
    }
}

void
peer_kill(struct peer_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGCONT);
        peer_signal(p, SIGKILL);
    }
}

bool
peer_log_contains(const struct peer_proc *p, const char *text, int timeout_ms)
{
    struct timespec ts = { 0, 20 * 1000000 };

    for (int waited = 0;; waited += 20) {
        FILE *f = fopen(p->log_path, "r");
        char buf[4096];
        bool found = false;

        if (f != NULL) {
            /* Lines are short; a match across two reads is not needed. */
            while (!found && fgets(buf, sizeof buf, f) != NULL)
                found = strstr(buf, text) != NULL;
            fclose(f);
        }
        if (found)
            return true;
        if (waited >= timeout_ms)
            return false;
        nanosleep(&ts, NULL);
    }
}
