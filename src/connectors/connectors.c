/* The table of the built-in sources and sinks (connectors.h). */
#include "connectors/connectors.h"
#include "connectors/connectors_int.h"
#include "core/util.h"

static const struct connector_entry builtin[] = {
    { OP_SOURCE_COLLECTION, &collection_source_vtable },
    { OP_SOURCE_GENERATOR, &generator_source_vtable },
    { OP_SOURCE_SOCKET, &socket_source_vtable },
    { OP_SOURCE_FILE, &source_operator_vtable },
    { OP_SOURCE, &source_operator_vtable },
    { OP_SINK_PRINT, &print_sink_vtable },
    { OP_SINK_FILE, &sink_operator_vtable },
    { OP_SINK_API, &sink_operator_vtable },
    { OP_SOURCE_CONNECTOR, &named_source_vtable },
    { OP_SINK_CONNECTOR, &sink_operator_vtable },
};

const struct connector_table connectors_builtin_table = { builtin, ARRAY_SIZE(builtin), NULL };

const struct connector_table *
connectors_builtin(void)
{
    return &connectors_builtin_table;
}
