/* The line splitter of the line sources (line_reader.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <spate/source.h>

#include "connectors/line_reader.h"
#include "connectors/source_operator.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/operator.h"
#include "streaming/watermark_generator.h"

int
line_reader_emit(struct spate_reader_output *out, struct line_reader *l, int budget,
                 bool flush_tail)
{
    /* Lines are split 0's records without timestamps of their own: the
     * output's plain run, held in a local so that its fields stay in
     * registers across the downstream calls. */
    struct source_run run = out->run;
    size_t start = l->off;
    int emitted = 0;

    SPATE_ASSERT(out->nsplits == 0);

    while (emitted < budget) {
        uint8_t *nl = memchr(l->buf + start, '\n', l->len - start);
        size_t end;
        spate_str line;

        if (nl == NULL) {
            if (!flush_tail || start == l->len)
                break;
            end = l->len;
        } else {
            end = (size_t)(nl - l->buf);
        }
        if (l->in_split && l->pos + (start - l->off) > l->split_end) {
            /* Lines starting after the split's end belong to the next one. */
            l->len = start;
            l->in_split = false;
            break;
        }
        line.data = (const char *)l->buf + start;
        line.len = end - start;
        if (line.len > 0 && line.data[line.len - 1] == '\r')
            line.len--;
        if (l->skip_first) {
            l->skip_first = false;
        } else {
            source_run_emit(&run, &line);
            emitted++;
        }
        start = nl ? end + 1 : end;
    }
    out->run = run;
    l->pos += start - l->off;
    l->off = start;
    return emitted;
}

int
line_reader_fill(struct line_reader *l, spate_error *err, const char *what)
{
    ssize_t n;

    if (l->len == l->cap) {
        /* The consumed bytes make room; a line longer than the buffer
         * grows it. Moving once per filled buffer, not per emit. */
        if (l->off > 0) {
            memmove(l->buf, l->buf + l->off, l->len - l->off);
            l->len -= l->off;
            l->off = 0;
        } else {
            l->cap *= 2;
            l->buf = xrealloc(l->buf, l->cap);
        }
    } else if (l->off == l->len) {
        l->off = l->len = 0;
    }
    n = read(l->fd, l->buf + l->len, l->cap - l->len);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        return spate_error_set(err, -errno, "cannot read %s: %s", what, spate_strerror(-errno));
    }
    if (n == 0)
        l->eof = true;
    l->len += (size_t)n;
    return (int)n;
}

struct line_reader *
line_reader_new(void)
{
    struct line_reader *l = xcalloc(1, sizeof *l);

    l->fd = -1;
    l->cap = 1 << 20;
    l->buf = xmalloc(l->cap);
    return l;
}

void
line_reader_free(struct line_reader *l)
{
    if (l == NULL)
        return;
    if (l->fd >= 0)
        close(l->fd);
    free(l->buf);
    free(l->path);
    for (size_t i = 0; i < l->nrestored; i++)
        free(l->restored[i].path);
    free(l->restored);
    free(l);
}
