/* A process's own folders under io.tmp.dirs, and the sweep of those whose
 * process is gone.
 *
 * Each folder is "<base>/spate-<kind>-<random id>" and holds ".lock", a file
 * the process keeps locked (flock) for as long as it lives. A process killed
 * by kill -9 cannot remove its folders (Flink's blob and web folders stay
 * too); the kernel drops its locks, so the next process to start sweeps
 * every such folder whose ".lock" it can take (Flink's io.tmp.dirs
 * clean-up, done by lock rather than by age). The lock file is locked
 * before it gets its name, so a sweep never sees the ".lock" of a live
 * process unlocked. */
#ifndef SPATE_CORE_TMP_DIR_H
#define SPATE_CORE_TMP_DIR_H

#include <stddef.h>

#include "core/config.h"
#include "spate/error.h"

struct tmp_dir {
    char *path;  /* NULL when there is none */
    int lock_fd; /* the locked ".lock"; -1 with no folder */
};

/* The first folder of io.tmp.dirs ("a;b" from a YAML list, or "a:b"; unset,
 * $TMPDIR, else /tmp), into buf. */
const char *tmp_dir_base(const struct config *conf, char *buf, size_t size);

/* Makes "<base>/spate-<kind>-<random id>" (mode 0700) and locks it. */
int tmp_dir_make(const char *base, const char *kind, struct tmp_dir *out, spate_error *err);
/* Removes the folder with everything in it, then lets go of the lock. */
void tmp_dir_remove(struct tmp_dir *d);

/* Removes every "spate-*" folder under base whose ".lock" no process holds;
 * the number removed (each with a log line). Folders without a ".lock"
 * (an older spate's, or not yet complete) are left alone. */
int tmp_dir_sweep(const char *base);
/* The sweep of each folder a daemon makes its own in: the first of
 * io.tmp.dirs, state.backend.rocksdb.localdir (RocksDB's working
 * folders), blob.storage.directory and web.upload.dir. */
int tmp_dir_sweep_config(const struct config *conf);

#endif
