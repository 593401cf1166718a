/* Every thread's name and native stack (Flink's thread dump, the seeds'
 * RequestStackTrace): each thread of the process is sent a signal whose
 * handler records its stack with backtrace(); the caller symbolizes them
 * (exported functions by name, the rest as library+offset). Any thread, one
 * dump at a time per process (a mutex). */
#ifndef SPATE_CORE_THREAD_DUMP_H
#define SPATE_CORE_THREAD_DUMP_H

#include <stddef.h>

#include <spate/error.h>

struct thread_stack {
    int tid;
    char name[16]; /* /proc/self/task/<tid>/comm */
    /* Flink's stringifiedThreadInfo: "\"name\" Id=tid RUNNABLE" (or the
     * state /proc says) and a line per frame, "\tat frame". */
    char *text;
};

/* Every thread's stack, the caller's included; a thread that did not
 * answer within a moment is listed without frames. Free with
 * thread_dump_free. */
int thread_dump_collect(struct thread_stack **out, size_t *n, spate_error *err);
void thread_dump_free(struct thread_stack *t, size_t n);

#endif
