/* Loads the ZooKeeper plugin (coord.h) on demand, so that a process that
 * does not use ZooKeeper HA never maps libzookeeper. Looked up in
 * $SPATE_PLUGIN_DIR, beside libspate (plugins/), beside the executable
 * (../lib/plugins/), then the build's own folder. Any thread. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "ha/ha_int.h"

#define ZK_PLUGIN_FILE "libspate_zookeeper.so"

static void *
plugin_try(const char *dir, char *tried, size_t tried_size)
{
    char path[PATH_MAX];
    size_t l = strlen(tried);

    snprintf(path, sizeof path, "%s/%s", dir, ZK_PLUGIN_FILE);
    if (l + strlen(path) + 3 < tried_size)
        snprintf(tried + l, tried_size - l, "%s%s", l ? ", " : "", path);
    if (access(path, R_OK) != 0)
        return NULL;
    /* RTLD_NODELETE: libzookeeper's threads must never outlive its code. */
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}

int
ha_plugin_load_zookeeper(const struct coord_plugin **out, spate_error *err)
{
    char tried[2048] = "", dir[PATH_MAX];
    const char *env = getenv("SPATE_PLUGIN_DIR");
    coord_plugin_entry_fn entry;
    const struct coord_plugin *p;
    void *h = NULL;
    Dl_info info;

    if (env != NULL && *env)
        h = plugin_try(env, tried, sizeof tried);
    if (h == NULL && dladdr((void *)ha_plugin_load_zookeeper, &info) != 0 &&
        info.dli_fname != NULL) {
        char copy[PATH_MAX];

        snprintf(copy, sizeof copy, "%s", info.dli_fname);
        snprintf(dir, sizeof dir, "%s/plugins", dirname(copy));
        h = plugin_try(dir, tried, sizeof tried);
        if (h == NULL) {
            snprintf(copy, sizeof copy, "%s", info.dli_fname);
            snprintf(dir, sizeof dir, "%s/../lib/plugins", dirname(copy));
            h = plugin_try(dir, tried, sizeof tried);
        }
    }
#ifdef SPATE_BUILD_PLUGIN_DIR
    if (h == NULL)
        h = plugin_try(SPATE_BUILD_PLUGIN_DIR, tried, sizeof tried);
#endif
    if (h == NULL)
        return spate_error_set(err, SPATE_ENOENT, "cannot load the ZooKeeper plugin (tried %s): %s",
                               tried, dlerror() ? dlerror() : "no such file");
    entry = (coord_plugin_entry_fn)dlsym(h, COORD_PLUGIN_SYMBOL);
    if (entry == NULL || (p = entry()) == NULL || p->abi_version != COORD_ABI_VERSION)
        return spate_error_set(err, SPATE_EPROTO,
                               "the ZooKeeper plugin is not one this spate can use (ABI %d)",
                               COORD_ABI_VERSION);
    *out = p;
    return 0;
}
