/* Unit tests of src/core/execution_state.c. */
#include <criterion/criterion.h>

#include "core/execution_state.h"

Test(execution_state, every_state_has_flinks_name_and_parses_back)
{
    static const char *const flink[EXEC_STATE_COUNT] = {
        "CREATED",  "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING",
        "FINISHED", "CANCELING", "CANCELED",  "FAILED",
    };

    for (int s = 0; s < EXEC_STATE_COUNT; s++) {
        cr_assert_str_eq(execution_state_name((enum execution_state)s), flink[s]);
        cr_assert_eq(execution_state_parse(flink[s]), s);
    }
}

Test(execution_state, unknown_names_and_values_are_refused)
{
    cr_assert_eq(execution_state_parse("RUNING"), -1);
    cr_assert_eq(execution_state_parse("running"), -1);
    cr_assert_eq(execution_state_parse(""), -1);
    cr_assert_eq(execution_state_parse(NULL), -1);
    cr_assert_str_eq(execution_state_name(EXEC_STATE_COUNT), "?");
    cr_assert_str_eq(execution_state_name((enum execution_state) - 1), "?");
}

Test(execution_state, finished_canceled_and_failed_are_terminal)
{
    for (int s = 0; s < EXEC_STATE_COUNT; s++)
        cr_assert_eq(execution_state_is_terminal((enum execution_state)s),
                     s == EXEC_FINISHED || s == EXEC_CANCELED || s == EXEC_FAILED, "%s",
                     execution_state_name((enum execution_state)s));
}
