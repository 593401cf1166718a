/* Folders and files on the local file system: make a path with its
 * parents, remove a tree, copy a file. Checkpoint folders (the
 * JobMaster's), HA storage, RocksDB's checkpoint files. Blocking; any
 * thread. */
#ifndef SPATE_CORE_FS_H
#define SPATE_CORE_FS_H

#include <stdint.h>

#include <spate/error.h>

/* mkdir -p: every missing folder of dir (0755); existing ones are fine. */
int fs_mkdirs(const char *dir, spate_error *err);
/* rm -r: path and everything below it, symbolic links not followed. A
 * missing path is fine. Errors name the first entry that would not go. */
int fs_remove_tree(const char *path, spate_error *err);
/* Copies the file src to dst, which must not exist (O_EXCL: two copies
 * never write one file), and syncs it; a copy that fails is removed.
 * *size (may be NULL) is the bytes copied. */
int fs_copy_file(const char *src, const char *dst, uint64_t *size, spate_error *err);
/* dst becomes src: a hard link, or a copy where links cannot be made
 * (another file system). */
int fs_link_or_copy(const char *src, const char *dst, spate_error *err);

#endif
