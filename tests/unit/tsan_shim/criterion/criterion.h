/* A Criterion-compatible subset for the ThreadSanitizer build: Criterion's
 * runner cannot start under TSan (its inheritable arena collides with TSan's
 * memory layout, Snaipe/Criterion#274), so build-tsan compiles the same test
 * sources against this header and tsan_runner.c. Each test runs in a forked
 * child (taken while the runner has one thread), with a timeout and an
 * expected signal, as with Criterion. */
#ifndef SPATE_TSAN_SHIM_CRITERION_H
#define SPATE_TSAN_SHIM_CRITERION_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct shim_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    double timeout;
    int signal;
    int exit_code;
    bool disabled;
};

void shim_register(struct shim_test *t);
void shim_check(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define Test(suite, name, ...)                                                            \
    static void suite##_##name##_fn(void);                                                \
    static struct shim_test suite##_##name##_test = { #suite, #name, suite##_##name##_fn, \
                                                      __VA_ARGS__ };                      \
    __attribute__((constructor)) static void suite##_##name##_reg(void)                   \
    {                                                                                     \
        shim_register(&suite##_##name##_test);                                            \
    }                                                                                     \
    static void suite##_##name##_fn(void)

#define SHIM_CHECK(cond, expr, ...)  shim_check(!!(cond), expr, __FILE__, __LINE__, "" __VA_ARGS__)
#define cr_assert(cond, ...)         SHIM_CHECK(cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...)         SHIM_CHECK(cond, #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...)     SHIM_CHECK(!(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_fail(...)          SHIM_CHECK(0, "fail", __VA_ARGS__)
#define cr_assert_eq(a, b, ...)      SHIM_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)     SHIM_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)      SHIM_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)     SHIM_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)      SHIM_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)     SHIM_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)       SHIM_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)   SHIM_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)  SHIM_CHECK(strcmp((a), (b)) == 0, #a " == " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) SHIM_CHECK(strcmp((a), (b)) != 0, #a " != " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) \
    SHIM_CHECK((a) - (b) <= (eps) && (b) - (a) <= (eps), #a " == " #b " +- " #eps, __VA_ARGS__)

#endif
