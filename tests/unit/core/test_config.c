/* Unit tests of src/core/config: YAML reading, overrides, the value parsers
 * and typed getters, and the messages bad input gets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"

static struct config *
load(const char *yaml, int expect_rc, spate_error *err)
{
    struct config *c = config_new();
    int rc = config_load_string(c, yaml, strlen(yaml), "test.yaml", err);

    cr_assert_eq(rc, expect_rc, "rc %d (%s), want %d", rc, err->message, expect_rc);
    return c;
}

static void
assert_contains(const char *haystack, const char *needle)
{
    cr_assert(strstr(haystack, needle) != NULL, "message '%s' lacks '%s'", haystack, needle);
}

Test(config, nested_and_flat_keys_are_the_same_key)
{
    spate_error err = { 0 };
    struct config *c = load("jobmanager:\n  rpc:\n    address: jm1\n"
                            "taskmanager.numberOfTaskSlots: 4\n"
                            "rest: {port: 9000}\n",
                            0, &err);
    const char *s;
    int64_t n;

    cr_assert_eq(config_get_string(c, CFG(JOBMANAGER_RPC_ADDRESS), &s, &err), 0);
    cr_assert_str_eq(s, "jm1");
    cr_assert_eq(config_get_int(c, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &n, &err), 0);
    cr_assert_eq(n, 4);
    cr_assert_eq(config_get_int(c, CFG(REST_PORT), &n, &err), 0);
    cr_assert_eq(n, 9000);
    config_free(c);
}

Test(config, defaults_are_spates)
{
    spate_error err = { 0 };
    struct config *c = config_new();
    int64_t ms;
    uint64_t bytes;
    bool b;

    cr_assert_eq(config_get_duration_ms(c, CFG(HEARTBEAT_INTERVAL), &ms, &err), 0);
    cr_assert_eq(ms, 1000);
    cr_assert_eq(config_get_duration_ms(c, CFG(HEARTBEAT_TIMEOUT), &ms, &err), 0);
    cr_assert_eq(ms, 5000);
    cr_assert_eq(config_get_duration_ms(c, CFG(EXECUTION_BUFFER_TIMEOUT), &ms, &err), 0);
    cr_assert_eq(ms, 5);
    cr_assert_eq(config_get_memory_bytes(c, CFG(TASKMANAGER_MEMORY_SEGMENT_SIZE), &bytes, &err), 0);
    cr_assert_eq(bytes, 32768);
    cr_assert_eq(config_get_bool(c, CFG(WEB_SUBMIT_ENABLE), &b, &err), 0);
    cr_assert(!b, "job upload over REST is off unless asked for (docs/security.md)");
    config_free(c);
}

Test(config, secrets_are_known_by_their_keys)
{
    cr_assert(config_key_is_sensitive("security.rpc.secret"));
    cr_assert(config_key_is_sensitive("s3.secret-key"));
    cr_assert(config_key_is_sensitive("some.sink.password"));
    cr_assert(config_key_is_sensitive("x.auth.token"));
    cr_assert_not(config_key_is_sensitive("security.rpc.secret-file"));
    cr_assert_not(config_key_is_sensitive("rest.authentication.token-file"));
    cr_assert_not(config_key_is_sensitive("rest.port"));
}

Test(config, unset_without_default_is_enoent)
{
    spate_error err = { 0 };
    struct config *c = config_new();
    const char *s;

    cr_assert_eq(config_get_string(c, CFG(STATE_CHECKPOINTS_DIR), &s, &err), SPATE_ENOENT);
    assert_contains(err.message, "'state.checkpoints.dir' is not set");
    config_free(c);
}

Test(config, lists_join_with_semicolons)
{
    spate_error err = { 0 };
    struct config *c = load("env.java.opts: [a, b, c]\n", 0, &err);

    cr_assert_str_eq(config_lookup(c, "env.java.opts"), "a;b;c");
    config_free(c);
}

Test(config, empty_document_is_empty_config)
{
    spate_error err = { 0 };
    struct config *c = load("# only a comment\n", 0, &err);

    cr_assert_eq(config_count(c), 0);
    config_free(c);
}

Test(config, broken_yaml_names_file_and_line)
{
    spate_error err = { 0 };
    struct config *c = load("rest:\n  port: 1\n bad: [unclosed\n", SPATE_ECONFIG, &err);

    assert_contains(err.message, "test.yaml:");
    config_free(c);
}

Test(config, unterminated_quote_is_an_error)
{
    spate_error err = { 0 };
    struct config *c = load("rest.address: \"localhost\n", SPATE_ECONFIG, &err);

    assert_contains(err.message, "test.yaml:");
    config_free(c);
}

Test(config, top_level_must_be_a_mapping)
{
    spate_error err = { 0 };
    struct config *c = load("- a\n- b\n", SPATE_ECONFIG, &err);

    assert_contains(err.message, "expected a mapping");
    config_free(c);
    c = load("just words\n", SPATE_ECONFIG, &err);
    assert_contains(err.message, "expected a mapping");
    config_free(c);
}

Test(config, duplicate_key_names_both_places)
{
    spate_error err = { 0 };
    struct config *c = load("rest.port: 1\nrest:\n  port: 2\n", SPATE_ECONFIG, &err);

    assert_contains(err.message, "'rest.port' is set twice");
    assert_contains(err.message, "test.yaml:1");
    assert_contains(err.message, "test.yaml:3");
    config_free(c);
}

Test(config, aliases_and_nested_lists_are_refused)
{
    spate_error err = { 0 };
    struct config *c = load("a: &x 1\nb: *x\n", SPATE_ECONFIG, &err);

    assert_contains(err.message, "aliases");
    config_free(c);
    c = load("a: [[1, 2]]\n", SPATE_ECONFIG, &err);
    assert_contains(err.message, "plain values");
    config_free(c);
    c = load("? [a, b]\n: 1\n", SPATE_ECONFIG, &err);
    assert_contains(err.message, "plain name");
    config_free(c);
}

Test(config, deep_nesting_is_refused_not_crashed)
{
    char yaml[4096] = "";
    spate_error err = { 0 };
    struct config *c;

    for (int i = 0; i < 100; i++)
        strcat(yaml, "{a: ");
    strcat(yaml, "1");
    for (int i = 0; i < 100; i++)
        strcat(yaml, "}");
    c = load(yaml, SPATE_ECONFIG, &err);
    assert_contains(err.message, "nested deeper");
    config_free(c);
}

Test(config, wrong_type_names_key_value_origin_and_expectation)
{
    spate_error err = { 0 };
    struct config *c = load("taskmanager.numberOfTaskSlots: four\n", 0, &err);
    int64_t n;

    cr_assert_eq(config_get_int(c, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &n, &err), SPATE_ECONFIG);
    assert_contains(err.message, "'taskmanager.numberOfTaskSlots'");
    assert_contains(err.message, "test.yaml:1");
    assert_contains(err.message, "'four'");
    assert_contains(err.message, "integer");
    config_free(c);
}

Test(config, bad_units)
{
    spate_error err = { 0 };
    struct config *c = load("heartbeat.interval: 10 parsecs\n"
                            "taskmanager.memory.segment-size: 32 kilos\n",
                            0, &err);
    int64_t ms;
    uint64_t bytes;

    cr_assert_eq(config_get_duration_ms(c, CFG(HEARTBEAT_INTERVAL), &ms, &err), SPATE_ECONFIG);
    assert_contains(err.message, "'heartbeat.interval'");
    assert_contains(err.message, "unknown unit 'parsecs'");
    assert_contains(err.message, "expected ns, us, ms, s, min, h or d");
    cr_assert_eq(config_get_memory_bytes(c, CFG(TASKMANAGER_MEMORY_SEGMENT_SIZE), &bytes, &err),
                 SPATE_ECONFIG);
    assert_contains(err.message, "unknown unit 'kilos'");
    assert_contains(err.message, "expected b, kb, mb, gb or tb");
    config_free(c);
}

Test(config, out_of_range_numbers)
{
    spate_error err = { 0 };
    struct config *c = load("rest.port: 70000\n"
                            "taskmanager.numberOfTaskSlots: 0\n"
                            "parallelism.default: 99999999999999999999999\n",
                            0, &err);
    int64_t n;

    cr_assert_eq(config_get_int(c, CFG(REST_PORT), &n, &err), SPATE_ECONFIG);
    assert_contains(err.message, "'70000' is out of range: expected 0 to 65535");
    cr_assert_eq(config_get_int(c, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &n, &err), SPATE_ECONFIG);
    assert_contains(err.message, "expected 1 to 65536");
    cr_assert_eq(config_get_int(c, CFG(PARALLELISM_DEFAULT), &n, &err), SPATE_ECONFIG);
    assert_contains(err.message, "out of range");
    config_free(c);
}

Test(config, unknown_enum_value)
{
    spate_error err = { 0 };
    struct config *c = load("high-availability.type: consul\n", 0, &err);
    int v;

    cr_assert_eq(config_get_enum(c, CFG(HIGH_AVAILABILITY_TYPE), &v, &err), SPATE_ECONFIG);
    assert_contains(err.message, "'high-availability.type'");
    assert_contains(err.message,
                    "unknown value 'consul' (expected one of none|embedded|zookeeper)");
    config_set(c, "high-availability.type", "ZooKeeper", "-D");
    cr_assert_eq(config_get_enum(c, CFG(HIGH_AVAILABILITY_TYPE), &v, &err), 0);
    cr_assert_eq(v, 2);
    /* Values written in capitals in the table (Flink's enum names) match
     * any case too. */
    config_set(c, "execution.checkpointing.mode", "at_least_once", "-D");
    cr_assert_eq(config_get_enum(c, CFG(EXECUTION_CHECKPOINTING_MODE), &v, &err), 0, "%s",
                 err.message);
    cr_assert_eq(v, 1);
    config_free(c);
}

Test(config, fallback_key_is_read)
{
    spate_error err = { 0 };
    struct config *c = load("high-availability: zookeeper\n", 0, &err);
    int v;

    cr_assert_eq(config_get_enum(c, CFG(HIGH_AVAILABILITY_TYPE), &v, &err), 0);
    cr_assert_eq(v, 2);
    config_free(c);
}

Test(config, missing_file)
{
    spate_error err = { 0 };
    struct config *c = config_new();

    cr_assert_eq(config_load_file(c, "/nonexistent/config.yaml", &err), SPATE_ENOENT);
    assert_contains(err.message, "cannot open config file '/nonexistent/config.yaml'");
    assert_contains(err.message, "no such file or directory");
    config_free(c);
}

Test(config, file_round_trip)
{
    char path[] = "/tmp/spate-test-config-XXXXXX";
    int fd = mkstemp(path);
    spate_error err = { 0 };
    struct config *c = config_new();
    const char *text = "rest:\n  port: 8082\n";
    int64_t n;

    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(config_load_file(c, path, &err), 0, "%s", err.message);
    cr_assert_eq(config_get_int(c, CFG(REST_PORT), &n, &err), 0);
    cr_assert_eq(n, 8082);
    unlink(path);
    config_free(c);
}

Test(config, overrides_win_and_are_validated)
{
    spate_error err = { 0 };
    struct config *c = load("rest.port: 8082\n", 0, &err);
    int64_t n;

    cr_assert_eq(config_apply_override(c, "rest.port = 9091", &err), 0);
    cr_assert_eq(config_get_int(c, CFG(REST_PORT), &n, &err), 0);
    cr_assert_eq(n, 9091);
    cr_assert_eq(config_apply_override(c, "no-equals-sign", &err), SPATE_ECONFIG);
    assert_contains(err.message, "expected key=value");
    cr_assert_eq(config_apply_override(c, "=value", &err), SPATE_ECONFIG);
    cr_assert_eq(config_apply_override(c, "heartbeat.timeout=soon", &err), 0);
    cr_assert_eq(config_validate(c, &err), SPATE_ECONFIG);
    assert_contains(err.message, "'heartbeat.timeout' (-D)");
    assert_contains(err.message, "'soon'");
    config_free(c);
}

Test(config, validate_accepts_good_config)
{
    spate_error err = { 0 };
    struct config *c = load("heartbeat:\n  interval: 500 ms\n  timeout: 2 min\n"
                            "taskmanager.memory.network.max: 1 gb\n"
                            "web.submit.enable: FALSE\n"
                            "some.unknown.key: anything\n",
                            0, &err);

    cr_assert_eq(config_validate(c, &err), 0, "%s", err.message);
    config_free(c);
}

Test(config_parse, durations)
{
    static const struct {
        const char *text;
        int64_t ns;
    } ok[] = {
        { "10 s", 10000000000LL },
        { "500ms", 500000000LL },
        { "1 min", 60000000000LL },
        { "2h", 7200000000000LL },
        { "1 d", 86400000000000LL },
        { "100 us", 100000LL },
        { "5 ns", 5 },
        { "42", 42000000LL },
        { " 3 SECONDS ", 3000000000LL },
        { "0", 0 },
        { "7 \xc2\xb5s", 7000 },
        { "2 minutes", 120000000000LL },
    };
    static const char *bad[] = {
        "", "s", "-1 s", "1.5 s", "10 parsecs", "ten seconds", "99999999999999999999 d", "106752 d"
    };
    spate_error err;
    int64_t ns;

    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cr_assert_eq(config_parse_duration_ns(ok[i].text, &ns, &err), 0, "'%s': %s", ok[i].text,
                     err.message);
        cr_assert_eq(ns, ok[i].ns, "'%s' -> %lld", ok[i].text, (long long)ns);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(config_parse_duration_ns(bad[i], &ns, &err), 0, "'%s' accepted", bad[i]);
}

Test(config_parse, memory_sizes)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        { "32 kb", 32768 },           { "64m", 67108864 },
        { "1 gb", 1073741824 },       { "100", 100 },
        { "2 TB", 2199023255552ULL }, { "3 bytes", 3 },
        { "1 mebibytes", 1048576 },
    };
    static const char *bad[] = { "", "kb", "1.5 gb", "-1", "10 parsecs", "99999999 tb" };
    spate_error err;
    uint64_t bytes;

    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cr_assert_eq(config_parse_memory_size(ok[i].text, &bytes, &err), 0, "'%s': %s", ok[i].text,
                     err.message);
        cr_assert_eq(bytes, ok[i].bytes, "'%s'", ok[i].text);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(config_parse_memory_size(bad[i], &bytes, &err), 0, "'%s' accepted", bad[i]);
}

Test(config_parse, ints_bools_ports)
{
    spate_error err;
    int64_t n;
    bool b;
    int lo, hi;

    cr_assert_eq(config_parse_int(" -42 ", &n, &err), 0);
    cr_assert_eq(n, -42);
    cr_assert_neq(config_parse_int("42x", &n, &err), 0);
    cr_assert_neq(config_parse_int("", &n, &err), 0);
    cr_assert_eq(config_parse_int("9223372036854775808", &n, &err), SPATE_ERANGE);
    cr_assert_eq(config_parse_bool("True", &b, &err), 0);
    cr_assert(b);
    cr_assert_eq(config_parse_bool("false", &b, &err), 0);
    cr_assert(!b);
    cr_assert_neq(config_parse_bool("yes", &b, &err), 0);
    assert_contains(err.message, "expected true or false");
    cr_assert_eq(config_parse_port_range("50100-50200", &lo, &hi, &err), 0);
    cr_assert_eq(lo, 50100);
    cr_assert_eq(hi, 50200);
    cr_assert_eq(config_parse_port_range("0", &lo, &hi, &err), 0);
    cr_assert_eq(hi, 0);
    cr_assert_neq(config_parse_port_range("200-100", &lo, &hi, &err), 0);
    cr_assert_neq(config_parse_port_range("70000", &lo, &hi, &err), 0);
    cr_assert_neq(config_parse_port_range("80-", &lo, &hi, &err), 0);
    cr_assert_neq(config_parse_port_range("http", &lo, &hi, &err), 0);
}

/* A misspelled key would leave its option at the default without a word:
 * a warning names the key, where it was set and the nearest known key;
 * keys far from every known one (a connector's options) pass. */
Test(config, a_misspelled_key_is_named_with_the_nearest_known_one)
{
    char path[] = "/tmp/spate-config-log-XXXXXX", text[4096];
    spate_error err = { 0 };
    struct config *c = load("taskmanager.numberOfTaskSlot: 4\n"
                            "jobmanager.rpc.adress: jm1\n"
                            "Rest.Port: 9000\n"
                            "rest.port: 8081\n"
                            "properties.bootstrap.servers: k:9092\n"
                            "my.own.key: 1\n",
                            0, &err);
    FILE *f;
    size_t n;
    int fd = mkstemp(path);

    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(log_open_file(path, &err), 0, "%s", err.message);
    cr_assert_eq(config_warn_misspelled(c), 3);
    log_close_file();
    f = fopen(path, "r");
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    assert_contains(text, "unknown key 'taskmanager.numberOfTaskSlot' (test.yaml:1) is ignored: "
                          "did you mean 'taskmanager.numberOfTaskSlots'?");
    assert_contains(text, "did you mean 'jobmanager.rpc.address'?");
    assert_contains(text, "unknown key 'Rest.Port' (test.yaml:3) is ignored: keys are "
                          "case-sensitive; did you mean 'rest.port'?");
    cr_assert_null(strstr(text, "bootstrap"));
    cr_assert_null(strstr(text, "my.own.key"));
    config_free(c);
}
