/* A process's log files, as Flink's REST API lists and serves them
 * (/jobmanager/logs, /taskmanagers/:id/logs, RequestTaskManagerLog): the
 * folder of the file the process logs to (its standard error, when that is
 * a regular file), else env.log.dir when it is a folder; the regular files
 * in it; one of them by name (a plain name in that folder, nothing else).
 * Any thread. */
#ifndef SPATE_CORE_LOG_FILES_H
#define SPATE_CORE_LOG_FILES_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/config.h"

struct log_file {
    char *name;
    int64_t size;
    int64_t mtime_ms;
};

/* The folder into dir; SPATE_ENOENT when the process has none. */
int log_files_dir(const struct config *conf, char *dir, size_t cap, spate_error *err);
/* The regular files of dir, by name; free with log_files_free. */
size_t log_files_list(const char *dir, struct log_file **out);
void log_files_free(struct log_file *f, size_t n);
/* The last max_bytes (0: all) of dir/name into a new buffer. SPATE_EINVAL
 * for a name that is not a plain file name, SPATE_ENOENT for none. */
int log_files_read(const char *dir, const char *name, size_t max_bytes, char **data, size_t *len,
                   spate_error *err);

#endif
