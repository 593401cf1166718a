/* The line splitter the line sources share (socket_source.c,
 * file_source.c): a read buffer over a descriptor, cut at newlines, each
 * line emitted as a spate_str; a file split's lines end where the split
 * does. Task thread only. */
#ifndef SPATE_CONNECTORS_LINE_READER_H
#define SPATE_CONNECTORS_LINE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

struct spate_reader_output;

/* A line splitter over a read buffer: buf[off, len) is read and not yet
 * emitted; emitting advances off, reading moves the rest to the front only
 * when the buffer is full. */
struct line_reader {
    int fd;
    uint8_t *buf;
    size_t off, len, cap;
    bool eof;
    /* file splits */
    uint64_t split_end; /* absolute offset where this split's last line may start */
    uint64_t pos;       /* absolute offset of buf[off] */
    bool in_split;
    bool skip_first;
    char *path; /* the split's file */
    /* Restored splits not started yet: a subtask of a job resumed at a
     * lower parallelism gets the splits in progress of several. */
    struct split_at *restored;
    size_t nrestored, restored_cap;
};

/* Where a split is being read: the absolute offset of the next line (or
 * of the byte before the split's first line), and of the last byte a line
 * of it may start at. */
struct split_at {
    char *path;
    uint64_t pos, split_end;
    bool skip_first;
};

struct line_reader *line_reader_new(void);
/* Emits the complete lines in the buffer, up to budget (with flush_tail,
 * the incomplete last one too); returns how many it emitted. */
int line_reader_emit(struct spate_reader_output *out, struct line_reader *l, int budget,
                     bool flush_tail);
/* Reads more into the buffer: the bytes read (0 at the end, which sets
 * eof, or when nothing is there now), or an error naming `what`. */
int line_reader_fill(struct line_reader *l, spate_error *err, const char *what);
/* Whether bytes read are not emitted yet. */
static inline bool
line_reader_pending(const struct line_reader *l)
{
    return l->off < l->len;
}
void line_reader_free(struct line_reader *l);

#endif
