/* The connectors' operator tables, one per kind, for connectors.c's table;
 * private to src/connectors/. */
#ifndef SPATE_CONNECTORS_CONNECTORS_INT_H
#define SPATE_CONNECTORS_CONNECTORS_INT_H

#include <spate/sink.h>
#include <spate/source.h>

#include "streaming/operator.h"

/* The sources on the Source API (source_operator.h). */
extern const spate_source file_source; /* file_source.c */
/* The sinks on the Sink API (sink_operator.c). */
extern const spate_committing_sink file_sink;  /* file_sink.c */
extern const spate_committing_sink named_sink; /* named_sink.c */

/* The connectors built into libspate behind the plugin interface
 * (connector_plugin.h), found by connector_factory.c before any library. */
struct connector_plugin;
extern const struct connector_plugin upsert_file_sink_plugin; /* upsert_file_sink.c */

/* The sink of an operator kind built on the Sink API (NULL: the kind is
 * not), with the configuration its writer and committer get. */
const spate_committing_sink *sink_operator_sink(const struct operator_settings *settings,
                                                const void **config);
/* Where a restored state's elements go: a committable, or an element of a
 * writer's state, of writer subtask `writer`. */
struct sink_restore {
    void (*committable)(void *arg, uint32_t writer, const void *bytes, size_t len);
    void (*writer_state)(void *arg, uint32_t writer, const void *bytes, size_t len);
};
/* The file sink's state before the Sink API (an element per writer): its
 * pending files, each a committable, and its next part, its writer state. */
int file_sink_upgrade_state(const uint8_t *bytes, size_t len, const struct sink_restore *to,
                            void *arg, spate_error *err);
/* A connector sink's state before the Sink API (split list state: each
 * element a plugin's committable of this subtask's). */
void named_sink_upgrade_state(const uint8_t *bytes, size_t len, const struct sink_restore *to,
                              void *arg, uint32_t subtask);
/* For the sinks built in: the operator running ctx's sink, and its
 * committer's object (the writer's create may share it). */
struct stream_operator *sink_context_operator(spate_sink_context *ctx);
void *sink_context_committer(spate_sink_context *ctx);

extern const struct operator_vtable collection_source_vtable; /* collection_source.c */
extern const struct operator_vtable generator_source_vtable;  /* generator_source.c */
extern const struct operator_vtable socket_source_vtable;     /* socket_source.c */
extern const struct operator_vtable source_operator_vtable;   /* source_operator.c */
extern const struct operator_vtable sink_operator_vtable;     /* sink_operator.c */
extern const struct operator_vtable print_sink_vtable;        /* print_sink.c */
extern const struct operator_vtable named_source_vtable;      /* named_source.c */

struct connector_context;
struct named_connector_config;
/* c's options but the formats' (formats.h): key, value, ..., NULL, which
 * the caller frees; *n pairs (named_source.c). */
const char **connector_own_options(const struct named_connector_config *c, size_t *n);
/* The context a named connector's plugin gets for op (named_source.c):
 * c's options but the formats' (formats.h), in *options, which the caller
 * frees after the plugin's reader or writer is closed. */
void connector_context_init(struct connector_context *ctx, const struct stream_operator *op,
                            const struct named_connector_config *c, const char ***options);

#endif
