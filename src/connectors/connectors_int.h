/* The connectors' operator tables, one per kind, for connectors.c's table;
 * private to src/connectors/. */
#ifndef SPATE_CONNECTORS_CONNECTORS_INT_H
#define SPATE_CONNECTORS_CONNECTORS_INT_H

#include <spate/source.h>

#include "streaming/operator.h"

/* The sources on the Source API (source_operator.h). */
extern const spate_source file_source; /* file_source.c */

extern const struct operator_vtable collection_source_vtable; /* collection_source.c */
extern const struct operator_vtable generator_source_vtable;  /* generator_source.c */
extern const struct operator_vtable socket_source_vtable;     /* socket_source.c */
extern const struct operator_vtable source_operator_vtable;   /* source_operator.c */
extern const struct operator_vtable file_sink_vtable;         /* file_sink.c */
extern const struct operator_vtable print_sink_vtable;        /* print_sink.c */
extern const struct operator_vtable named_source_vtable;      /* named_source.c */
extern const struct operator_vtable named_sink_vtable;        /* named_sink.c */

struct connector_context;
struct named_connector_config;
/* The context a named connector's plugin gets for op (named_source.c):
 * c's options but the formats' (formats.h), in *options, which the caller
 * frees after the plugin's reader or writer is closed. */
void connector_context_init(struct connector_context *ctx, const struct stream_operator *op,
                            const struct named_connector_config *c, const char ***options);

#endif
