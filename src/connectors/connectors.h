/* The built-in sources and sinks, as the table a task finds them in
 * (task_info.connectors, operator.h): installed by whoever runs tasks (the
 * TaskManager, the unit tests' runners), so that streaming makes them by
 * kind without including this folder. Constant; any thread. */
#ifndef SPATE_CONNECTORS_CONNECTORS_H
#define SPATE_CONNECTORS_CONNECTORS_H

#include "streaming/operator.h"

/* Collection, generator, socket and file sources; print and file sinks. */
const struct connector_table *connectors_builtin(void);
/* The same table, for a table that leads to it (connector_table.next). */
extern const struct connector_table connectors_builtin_table;

#endif
