/* The runner of the Criterion-compatible subset (criterion/criterion.h in this
 * folder): runs every registered test in a forked child, one at a time, and
 * reports like Criterion's synthesis line. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criterion/criterion.h"

#define SHIM_MAX_TESTS 512

static struct shim_test *shim_tests[SHIM_MAX_TESTS];
static int shim_count;

void
shim_register(struct shim_test *t)
{
    if (shim_count < SHIM_MAX_TESTS)
        shim_tests[shim_count++] = t;
}

void
shim_check(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    if (ok)
        return;
    fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n[----]   ", file, line, expr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    _exit(1);
}

static int
shim_run(struct shim_test *t)
{
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        alarm(t->timeout > 0 ? (unsigned)t->timeout + 1 : 60);
        t->fn();
        fflush(NULL);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    if (t->signal != 0)
        return WIFSIGNALED(status) && WTERMSIG(status) == t->signal;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "[----] %s::%s: crashed with signal %d\n", t->suite, t->name,
                WTERMSIG(status));
        return 0;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == t->exit_code;
}

int
main(void)
{
    int passed = 0, failed = 0;

    for (int i = 0; i < shim_count; i++) {
        struct shim_test *t = shim_tests[i];

        if (t->disabled)
            continue;
        if (shim_run(t)) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "[FAIL] %s::%s\n", t->suite, t->name);
        }
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d\n", passed + failed,
            passed, failed);
    return failed != 0;
}
