/* Flink's JobStatus names (job_status.h). */
#include <string.h>

#include "core/job_status.h"

static const char *const status_names[JOB_STATUS_COUNT] = {
    "INITIALIZING", "CREATED",  "RUNNING",    "FAILING",   "FAILED",      "CANCELLING",
    "CANCELED",     "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING",
};

const char *
job_status_name(enum job_status s)
{
    return (unsigned)s < JOB_STATUS_COUNT ? status_names[s] : "UNKNOWN";
}

int
job_status_parse(const char *name)
{
    for (int i = 0; name != NULL && i < JOB_STATUS_COUNT; i++)
        if (strcmp(status_names[i], name) == 0)
            return i;
    return -1;
}

bool
job_status_is_terminal(enum job_status s)
{
    return s == JOB_FAILED || s == JOB_CANCELED || s == JOB_FINISHED;
}
