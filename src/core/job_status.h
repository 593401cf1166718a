/* Flink's JobStatus: the one enum and name table of a job's statuses, for
 * the JobMaster, the Dispatcher and REST (the names in its answers).
 * Constant: any thread. */
#ifndef SPATE_CORE_JOB_STATUS_H
#define SPATE_CORE_JOB_STATUS_H

#include <stdbool.h>

/* In Flink's order: the REST "timestamps" of a job follow it. */
enum job_status {
    JOB_INITIALIZING,
    JOB_CREATED,
    JOB_RUNNING,
    JOB_FAILING,
    JOB_FAILED,
    JOB_CANCELLING,
    JOB_CANCELED,
    JOB_FINISHED,
    JOB_RESTARTING,
    JOB_SUSPENDED,
    JOB_RECONCILING, /* Flink's; spate never enters it */
    JOB_STATUS_COUNT,
};

/* "RUNNING" for JOB_RUNNING; "UNKNOWN" for a value out of range. */
const char *job_status_name(enum job_status s);
/* "RUNNING" -> JOB_RUNNING; -1 for an unknown name or NULL. */
int job_status_parse(const char *name);
/* Globally terminal: FAILED, CANCELED, FINISHED (SUSPENDED is not: another
 * JobManager may go on with the job). */
bool job_status_is_terminal(enum job_status s);

#endif
