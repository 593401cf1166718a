/* Unit tests of src/core/error.c. */
#include <criterion/criterion.h>
#include <string.h>

#include <spate/error.h>

Test(error, set_returns_code_and_formats)
{
    spate_error err = { 0 };

    cr_assert_eq(spate_error_set(&err, SPATE_EIO, "cannot open '%s'", "x"), SPATE_EIO);
    cr_assert_eq(err.code, SPATE_EIO);
    cr_assert_str_eq(err.message, "cannot open 'x'");
}

Test(error, null_error_object_is_fine)
{
    cr_assert_eq(spate_error_set(NULL, SPATE_EINVAL, "ignored %d", 1), SPATE_EINVAL);
}

Test(error, wrap_prefixes)
{
    spate_error err = { 0 };

    spate_error_set(&err, SPATE_ENOENT, "no such file");
    cr_assert_eq(spate_error_wrap(&err, "loading '%s'", "job.so"), SPATE_ENOENT);
    cr_assert_str_eq(err.message, "loading 'job.so': no such file");
}

Test(error, long_messages_are_truncated_not_overflowed)
{
    spate_error err = { 0 };
    char big[2000];

    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    spate_error_set(&err, SPATE_EINVAL, "%s", big);
    cr_assert_eq(strlen(err.message), SPATE_ERROR_MESSAGE_MAX - 1);
    spate_error_wrap(&err, "%s", big);
    cr_assert_eq(strlen(err.message), SPATE_ERROR_MESSAGE_MAX - 1);
}

Test(error, names_and_descriptions)
{
    cr_assert_str_eq(spate_err_name(SPATE_EFENCED), "SPATE_EFENCED");
    cr_assert_str_eq(spate_strerror(SPATE_EFENCED), "fencing token rejected");
    cr_assert_str_eq(spate_strerror(SPATE_ETIMEDOUT), "timed out");
    cr_assert_str_eq(spate_strerror(0), "success");
    cr_assert_str_eq(spate_err_name(-99999), "SPATE_EUNKNOWN");
    cr_assert_str_eq(spate_strerror(-99999), "unknown error");
    /* A system error outside the table still reads like one. */
    cr_assert_str_eq(spate_strerror(-ENOTDIR), "Not a directory");
    cr_assert_eq(SPATE_ECONNREFUSED, -ECONNREFUSED);
}
