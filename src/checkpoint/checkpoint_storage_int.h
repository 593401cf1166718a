/* The implementations of checkpoint storage (checkpoint_storage.h), one per
 * URI scheme; checkpoint_storage.c picks one by a pointer's scheme. */
#ifndef SPATE_CHECKPOINT_CHECKPOINT_STORAGE_INT_H
#define SPATE_CHECKPOINT_CHECKPOINT_STORAGE_INT_H

#include "checkpoint/checkpoint_storage.h"

/* Local paths and `file:` URIs (checkpoint_storage_fs.c). */
extern const struct checkpoint_storage_ops checkpoint_storage_fs_ops;

#endif
