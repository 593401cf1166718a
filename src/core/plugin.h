/* Opens a plugin library (the ZooKeeper HA plugin, connector plugins) by
 * its file name, looked up in $SPATE_PLUGIN_DIR, beside libspate
 * (plugins/), beside the executable (../lib/plugins/), then the build's own
 * folder. Never unloaded: a client library's threads must not outlive its
 * code. Any thread. */
#ifndef SPATE_CORE_PLUGIN_H
#define SPATE_CORE_PLUGIN_H

#include <stddef.h>

/* The dlopen handle of file, or NULL with tried (tried_size bytes) naming
 * the paths tried and why the last failed. */
void *plugin_open(const char *file, char *tried, size_t tried_size);

#endif
