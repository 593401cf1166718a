/* Loads the ZooKeeper plugin (coord.h) on demand, so that a process that
 * does not use ZooKeeper HA never maps libzookeeper; found by
 * core/plugin.h. Any thread. */
#include <dlfcn.h>

#include "core/plugin.h"
#include "ha/ha_int.h"

#define ZK_PLUGIN_FILE "libspate_zookeeper.so"

int
ha_plugin_load_zookeeper(const struct coord_plugin **out, spate_error *err)
{
    char tried[2048];
    coord_plugin_entry_fn entry;
    const struct coord_plugin *p;
    void *h = plugin_open(ZK_PLUGIN_FILE, tried, sizeof tried);

    if (h == NULL)
        return spate_error_set(err, SPATE_ENOENT, "cannot load the ZooKeeper plugin (tried %s)",
                               tried);
    entry = (coord_plugin_entry_fn)dlsym(h, COORD_PLUGIN_SYMBOL);
    if (entry == NULL || (p = entry()) == NULL || p->abi_version != COORD_ABI_VERSION)
        return spate_error_set(err, SPATE_EPROTO,
                               "the ZooKeeper plugin is not one this spate can use (ABI %d)",
                               COORD_ABI_VERSION);
    *out = p;
    return 0;
}
