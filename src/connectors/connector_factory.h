/* Finds a connector by its name (Flink's FactoryUtil and the `connector`
 * option): one built into libspate behind the same interface
 * ("upsert-filesystem", connectors_int.h), else a plugin library:
 * "kafka" is libspate_kafka.so, looked up in
 * $SPATE_PLUGIN_DIR, beside libspate (plugins/), beside the executable
 * (../lib/plugins/), then the build's own folder. Any thread. */
#ifndef SPATE_CONNECTORS_CONNECTOR_FACTORY_H
#define SPATE_CONNECTORS_CONNECTOR_FACTORY_H

#include <spate/error.h>

#include "connectors/connector_plugin.h"

/* The plugin of connector name, loaded once per process and never
 * unloaded (its client library's threads must not outlive its code): 0,
 * or SPATE_ENOENT naming the files tried, SPATE_EPROTO for a library of
 * another ABI, SPATE_EINVAL for a bad name. */
int connector_factory_find(const char *name, const struct connector_plugin **out, spate_error *err);

struct named_connector_config;
/* Checks the options of the named connector c, a source
 * (OP_SOURCE_CONNECTOR) or a sink (OP_SINK_CONNECTOR), with its operator
 * name, parallelism and whether the job checkpoints, when its job is
 * submitted (named_source.c): the connector must load and have that side,
 * a source's value format must be one it reads, and the plugin's check
 * (connector_plugin.h) must pass the options. 0, or SPATE_EINVAL
 * (SPATE_ENOENT, SPATE_EPROTO as connector_factory_find) naming the source
 * or sink. */
int named_connector_check(const struct named_connector_config *c, bool source, const char *name,
                          int parallelism, bool checkpointing, spate_error *err);

#endif
