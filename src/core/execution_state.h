/* Flink's ExecutionState: the one enum and name table of an execution's
 * states, for the JobMaster (its ExecutionGraph), the TaskManager (its task
 * reports) and REST (the names in its answers). Constant: any thread. */
#ifndef SPATE_CORE_EXECUTION_STATE_H
#define SPATE_CORE_EXECUTION_STATE_H

#include <stdbool.h>

/* In the order an execution goes through them. */
enum execution_state {
    EXEC_CREATED,
    EXEC_SCHEDULED,
    EXEC_DEPLOYING,
    EXEC_INITIALIZING,
    EXEC_RUNNING,
    EXEC_FINISHED,
    EXEC_CANCELING,
    EXEC_CANCELED,
    EXEC_FAILED,
    EXEC_STATE_COUNT,
};

/* "RUNNING" for EXEC_RUNNING; "?" for a value out of range. */
const char *execution_state_name(enum execution_state s);
/* "RUNNING" -> EXEC_RUNNING; -1 for an unknown name or NULL. */
int execution_state_parse(const char *name);
/* FINISHED, CANCELED, FAILED. */
bool execution_state_is_terminal(enum execution_state s);

#endif
