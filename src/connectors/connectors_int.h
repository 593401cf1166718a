/* The connectors' operator tables, one per kind, for connectors.c's table;
 * private to src/connectors/. */
#ifndef SPATE_CONNECTORS_CONNECTORS_INT_H
#define SPATE_CONNECTORS_CONNECTORS_INT_H

#include "streaming/operator.h"

extern const struct operator_vtable collection_source_vtable; /* collection_source.c */
extern const struct operator_vtable generator_source_vtable;  /* generator_source.c */
extern const struct operator_vtable socket_source_vtable;     /* socket_source.c */
extern const struct operator_vtable file_source_vtable;       /* file_source.c */
extern const struct operator_vtable file_sink_vtable;         /* file_sink.c */
extern const struct operator_vtable print_sink_vtable;        /* print_sink.c */

#endif
