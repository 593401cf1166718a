/* Folders on the local file system: make a path with its parents, remove a
 * tree. Checkpoint folders (the JobMaster's), HA storage. Blocking; any
 * thread. */
#ifndef SPATE_CORE_FS_H
#define SPATE_CORE_FS_H

#include <spate/error.h>

/* mkdir -p: every missing folder of dir (0755); existing ones are fine. */
int fs_mkdirs(const char *dir, spate_error *err);
/* rm -r: path and everything below it, symbolic links not followed. A
 * missing path is fine. Errors name the first entry that would not go. */
int fs_remove_tree(const char *path, spate_error *err);

#endif
