/* Loads connector plugins by name (connector_factory.h). */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "connectors/connector_factory.h"
#include "connectors/connectors_int.h"
#include "core/plugin.h"
#include "core/util.h"

/* Those built in (connectors_int.h): no library to load. */
static const struct connector_plugin *const builtin[] = { &upsert_file_sink_plugin };

int
connector_factory_find(const char *name, const struct connector_plugin **out, spate_error *err)
{
    char tried[2048], file[128];
    connector_plugin_entry_fn entry;
    const struct connector_plugin *p;
    void *h;

    if (name == NULL || !*name || strlen(name) > 64)
        return spate_error_set(err, SPATE_EINVAL, "connector name '%s' is empty or too long",
                               name ? name : "");
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            return spate_error_set(err, SPATE_EINVAL,
                                   "connector name '%s': only letters, digits, '-' and '_'", name);
    for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
        if (strcmp(builtin[i]->name, name) == 0) {
            *out = builtin[i];
            return 0;
        }
    snprintf(file, sizeof file, "libspate_%s.so", name);
    if ((h = plugin_open(file, tried, sizeof tried)) == NULL)
        return spate_error_set(err, SPATE_ENOENT,
                               "unknown connector '%s': cannot load its plugin (tried %s)", name,
                               tried);
    entry = (connector_plugin_entry_fn)dlsym(h, CONNECTOR_PLUGIN_SYMBOL);
    if (entry == NULL || (p = entry()) == NULL || p->abi_version != CONNECTOR_ABI_VERSION)
        return spate_error_set(err, SPATE_EPROTO,
                               "the plugin of connector '%s' is not one this spate can use "
                               "(ABI %d)",
                               name, CONNECTOR_ABI_VERSION);
    *out = p;
    return 0;
}
