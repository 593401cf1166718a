/* Finds and opens plugin libraries (plugin.h). */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/plugin.h"

static void *
plugin_try(const char *dir, const char *file, char *tried, size_t tried_size)
{
    char path[PATH_MAX];
    size_t l = strlen(tried);

    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (l + strlen(path) + 3 < tried_size)
        snprintf(tried + l, tried_size - l, "%s%s", l ? ", " : "", path);
    if (access(path, R_OK) != 0)
        return NULL;
    /* RTLD_NODELETE: a client library's threads must never outlive its
     * code; dlopen counts references, so each open returns the one copy. */
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}

void *
plugin_open(const char *file, char *tried, size_t tried_size)
{
    const char *env = getenv("SPATE_PLUGIN_DIR");
    char dir[PATH_MAX], copy[PATH_MAX];
    const char *dlerr;
    void *h = NULL;
    Dl_info info;

    tried[0] = '\0';
    if (env != NULL && *env)
        h = plugin_try(env, file, tried, tried_size);
    if (h == NULL && dladdr((void *)plugin_open, &info) != 0 && info.dli_fname != NULL) {
        snprintf(copy, sizeof copy, "%s", info.dli_fname);
        snprintf(dir, sizeof dir, "%s/plugins", dirname(copy));
        h = plugin_try(dir, file, tried, tried_size);
        if (h == NULL) {
            snprintf(copy, sizeof copy, "%s", info.dli_fname);
            snprintf(dir, sizeof dir, "%s/../lib/plugins", dirname(copy));
            h = plugin_try(dir, file, tried, tried_size);
        }
    }
#ifdef SPATE_BUILD_PLUGIN_DIR
    if (h == NULL)
        h = plugin_try(SPATE_BUILD_PLUGIN_DIR, file, tried, tried_size);
#endif
    if (h == NULL) {
        size_t l = strlen(tried);

        dlerr = dlerror();
        snprintf(tried + l, tried_size - l, ": %s", dlerr ? dlerr : "no such file");
    }
    return h;
}
