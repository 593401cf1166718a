/* SQL's operator kinds, as the table a task finds them in
 * (task_info.connectors, streaming/operator.h), searched before the
 * connectors' (connectors_builtin), which it leads to: whoever runs tasks
 * installs this one table. Constant; any thread. */
#ifndef SPATE_SQL_SQL_OPERATORS_H
#define SPATE_SQL_SQL_OPERATORS_H

#include "streaming/operator.h"

const struct connector_table *sql_operator_table(void);

extern const struct operator_vtable sql_calc_vtable;
extern const struct operator_vtable sql_agg_vtable;
extern const struct operator_vtable sql_join_vtable;
extern const struct operator_vtable sql_rank_vtable;
extern const struct operator_vtable sql_over_vtable;
extern const struct operator_vtable sql_lookup_join_vtable;

#endif
