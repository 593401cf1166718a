/* The print sink (Flink's PrintSink): each record's readable form a line on
 * the TaskManager's print stream (stdout, its .out file), prefixed "n> "
 * by subtask when there are several. Task thread only. */
#include <stdio.h>
#include <stdlib.h>

#include "connectors/connectors_int.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"
#include "streaming/types.h"

struct print_impl {
    FILE *f; /* the TaskManager's: not closed here */
    char prefix[16];
    char *line;
    size_t cap;
};

static int
print_open_file(struct stream_operator *op, FILE *f)
{
    struct print_impl *p = xcalloc(1, sizeof *p);

    p->f = f;
    if (op->ctx.parallelism > 1)
        snprintf(p->prefix, sizeof p->prefix, "%d> ", op->ctx.subtask + 1);
    p->cap = 4096;
    p->line = xmalloc(p->cap);
    op->impl = p;
    return 0;
}

static int
print_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(err);
    return print_open_file(op, op->task->print_out ? op->task->print_out : stdout);
}

static void
print_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    const struct print_sink_config *c = op->conf;
    struct print_impl *p = op->impl;
    int n;

    UNUSED(meta);
    n = types_format(c->type, rec, p->line, p->cap);
    if ((size_t)n >= p->cap) {
        p->cap = (size_t)n + 1;
        p->line = xrealloc(p->line, p->cap);
        n = types_format(c->type, rec, p->line, p->cap);
    }
    /* One line at a time: the subtasks of a job share the stream. */
    flockfile(p->f);
    if (p->prefix[0])
        fputs_unlocked(p->prefix, p->f);
    fwrite_unlocked(p->line, 1, (size_t)n, p->f);
    fputc_unlocked('\n', p->f);
    funlockfile(p->f);
}

static void
print_close(struct stream_operator *op)
{
    struct print_impl *p = op->impl;

    if (p == NULL)
        return;
    fflush(p->f);
    free(p->line);
    free(p);
    op->impl = NULL;
}

const struct operator_vtable print_sink_vtable = {
    .state = OPERATOR_STATELESS,
    .open = print_open,
    .process = print_process,
    .close = print_close,
};
