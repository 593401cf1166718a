/* Input splits of the text file source, made and handed out by its split
 * enumerator on the JobMaster (file_source.c): the files at a path (a file,
 * or the regular files of a folder, sorted) cut into splits of about
 * split_size bytes; each split owns the lines that start inside it. The
 * assigner gives the next unassigned split to whichever subtask asks, so fast
 * subtasks take more. Owned by the JobMaster's endpoint; no locks. */
#ifndef SPATE_CONNECTORS_FILE_SPLITS_H
#define SPATE_CONNECTORS_FILE_SPLITS_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

struct file_split {
    char *path;
    uint64_t start;
    uint64_t length;
};

struct split_assigner {
    struct file_split *splits;
    size_t count;
    size_t next;
    size_t *returned; /* indexes of splits given back, handed out first */
    size_t nreturned, returned_cap;
};

/* Without a split size, the files' total is cut into
 * FILE_SPLITS_PER_SUBTASK splits per subtask of the source, each between
 * FILE_SPLIT_MIN_SIZE and FILE_SPLIT_DEFAULT_SIZE bytes. */
#define FILE_SPLIT_DEFAULT_SIZE (8u << 20)
#define FILE_SPLIT_MIN_SIZE     (1u << 20)
#define FILE_SPLITS_PER_SUBTASK 4

/* Lists the files at path and cuts them into splits of split_size bytes
 * (0: sized from the source's parallelism, above); an empty file makes no
 * split. A missing path is an error naming it. */
int split_assigner_init(struct split_assigner *a, const char *path, uint64_t split_size,
                        int parallelism, spate_error *err);
void split_assigner_release(struct split_assigner *a);
/* The next split, or NULL when all are taken. Valid until release. */
const struct file_split *split_assigner_next(struct split_assigner *a);
/* Puts a split back (its reader failed before finishing it). */
void split_assigner_return(struct split_assigner *a, const struct file_split *split);
/* Puts back a split given as its fields (copied): the one of a's list with
 * them, else a new one; it goes out next. */
void split_assigner_add_back(struct split_assigner *a, const struct file_split *split);

#endif
