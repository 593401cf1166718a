/* Flink's ExecutionState names (execution_state.h). */
#include <string.h>

#include "core/execution_state.h"

static const char *const state_names[EXEC_STATE_COUNT] = {
    "CREATED",  "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING",
    "FINISHED", "CANCELING", "CANCELED",  "FAILED",
};

const char *
execution_state_name(enum execution_state s)
{
    return (unsigned)s < EXEC_STATE_COUNT ? state_names[s] : "?";
}

int
execution_state_parse(const char *name)
{
    for (int i = 0; name != NULL && i < EXEC_STATE_COUNT; i++)
        if (strcmp(state_names[i], name) == 0)
            return i;
    return -1;
}

bool
execution_state_is_terminal(enum execution_state s)
{
    return s == EXEC_FINISHED || s == EXEC_CANCELED || s == EXEC_FAILED;
}
