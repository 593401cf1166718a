/* Unit tests of src/core/job_status.c. */
#include <criterion/criterion.h>

#include "core/job_status.h"

Test(job_status, every_status_has_flinks_name_and_parses_back)
{
    static const char *const flink[JOB_STATUS_COUNT] = {
        "INITIALIZING", "CREATED",  "RUNNING",    "FAILING",   "FAILED",      "CANCELLING",
        "CANCELED",     "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING",
    };

    for (int s = 0; s < JOB_STATUS_COUNT; s++) {
        cr_assert_str_eq(job_status_name((enum job_status)s), flink[s]);
        cr_assert_eq(job_status_parse(flink[s]), s);
    }
}

Test(job_status, unknown_names_and_values_are_refused)
{
    cr_assert_eq(job_status_parse("CANCELING"), -1); /* the ExecutionState's spelling */
    cr_assert_eq(job_status_parse("running"), -1);
    cr_assert_eq(job_status_parse(""), -1);
    cr_assert_eq(job_status_parse(NULL), -1);
    cr_assert_str_eq(job_status_name(JOB_STATUS_COUNT), "UNKNOWN");
    cr_assert_str_eq(job_status_name((enum job_status) - 1), "UNKNOWN");
}

Test(job_status, failed_canceled_and_finished_are_globally_terminal)
{
    for (int s = 0; s < JOB_STATUS_COUNT; s++)
        cr_assert_eq(job_status_is_terminal((enum job_status)s),
                     s == JOB_FAILED || s == JOB_CANCELED || s == JOB_FINISHED, "%s",
                     job_status_name((enum job_status)s));
}
