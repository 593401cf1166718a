/* Every thread's name and native stack (Flink's thread dump, the seeds'
 * RequestStackTrace): each thread of the process is sent a signal whose
 * handler records its stack with backtrace(); the caller symbolizes them
 * (exported functions by name, the rest as library+offset). Any thread, one
 * dump at a time per process (a mutex). */
#ifndef SPATE_CORE_THREAD_DUMP_H
#define SPATE_CORE_THREAD_DUMP_H

#include <stdbool.h>
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

/* One sample of thread tid (Flink's thread info sample, for flame graphs):
 * up to max return addresses, innermost first, into frames, and whether it
 * was on a CPU (/proc's state R) into *on_cpu. 0 frames: it did not answer. */
int thread_dump_sample(int tid, void **frames, int max, bool *on_cpu);

/* Names of return addresses: "function" from the ELF symbol tables of the
 * object each is in (static functions too, unless stripped), else
 * "object+0xoffset". One symbolizer caches the objects it opened. */
struct thread_symbolizer;
struct thread_symbolizer *thread_symbolizer_new(void);
void thread_symbolizer_free(struct thread_symbolizer *s);
void thread_symbolize(struct thread_symbolizer *s, void *addr, char *buf, size_t cap);

#endif
