/* Configuration (config.h): a YAML reader on libyaml's event parser, a flat
 * key table, value parsers with Flink's syntax, and typed getters. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/log.h"
#include "core/nearest.h"
#include "core/util.h"

struct config_entry {
    char *key;
    char *value;
    char *origin;
};

struct config {
    struct config_entry *entries;
    size_t count;
    size_t cap;
};

/* ---- options table ---------------------------------------------------- */

const struct config_option config_options[CONFIG_OPTION_COUNT] = {
#define CONFIG_OPTION_ROW(name, key, type, def, lo, hi, enums, fallback, desc) \
    [CONFIG_##name] = { key, CONFIG_##type, def, lo, hi, enums, fallback, desc },
    CONFIG_OPTIONS(CONFIG_OPTION_ROW)
#undef CONFIG_OPTION_ROW
};

const struct config_option *
config_option_find(const char *key)
{
    for (size_t i = 0; i < CONFIG_OPTION_COUNT; i++) {
        const struct config_option *o = &config_options[i];

        if (strcmp(o->key, key) == 0 || (o->fallback_key && strcmp(o->fallback_key, key) == 0))
            return o;
    }
    return NULL;
}

const char *
config_type_name(enum config_type type)
{
    switch (type) {
    case CONFIG_STRING:
        return "string";
    case CONFIG_INT:
        return "integer";
    case CONFIG_DOUBLE:
        return "number";
    case CONFIG_BOOL:
        return "boolean";
    case CONFIG_DURATION:
        return "duration";
    case CONFIG_MEMORY:
        return "memory size";
    case CONFIG_ENUM:
        return "enum";
    }
    return "?";
}

/* ---- the key table ---------------------------------------------------- */

struct config *
config_new(void)
{
    return xcalloc(1, sizeof(struct config));
}

void
config_free(struct config *conf)
{
    if (conf == NULL)
        return;
    for (size_t i = 0; i < conf->count; i++) {
        free(conf->entries[i].key);
        free(conf->entries[i].value);
        free(conf->entries[i].origin);
    }
    free(conf->entries);
    free(conf);
}

struct config *
config_copy(const struct config *conf)
{
    struct config *c = config_new();

    for (size_t i = 0; i < conf->count; i++)
        config_set(c, conf->entries[i].key, conf->entries[i].value, conf->entries[i].origin);
    return c;
}

static struct config_entry *
config_find(const struct config *conf, const char *key)
{
    for (size_t i = 0; i < conf->count; i++)
        if (strcmp(conf->entries[i].key, key) == 0)
            return &conf->entries[i];
    return NULL;
}

void
config_set(struct config *conf, const char *key, const char *value, const char *origin)
{
    struct config_entry *e = config_find(conf, key);

    if (e == NULL) {
        xgrow((void **)&conf->entries, &conf->cap, conf->count + 1, sizeof *conf->entries);
        e = &conf->entries[conf->count++];
        e->key = xstrdup(key);
    } else {
        free(e->value);
        free(e->origin);
    }
    e->value = xstrdup(value);
    e->origin = xstrdup(origin ? origin : "code");
}

const char *
config_lookup(const struct config *conf, const char *key)
{
    struct config_entry *e = config_find(conf, key);

    return e ? e->value : NULL;
}

size_t
config_count(const struct config *conf)
{
    return conf->count;
}

void
config_entry(const struct config *conf, size_t i, const char **key, const char **value,
             const char **origin)
{
    SPATE_ASSERT(i < conf->count);
    *key = conf->entries[i].key;
    *value = conf->entries[i].value;
    if (origin)
        *origin = conf->entries[i].origin;
}

static int
config_is_blank(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

int
config_apply_override(struct config *conf, const char *assignment, spate_error *err)
{
    const char *eq = strchr(assignment, '=');
    char *key;
    size_t klen;

    if (eq == NULL || eq == assignment)
        return spate_error_set(err, SPATE_ECONFIG, "malformed override '%s': expected key=value",
                               assignment);
    klen = (size_t)(eq - assignment);
    while (klen > 0 && isspace((unsigned char)assignment[klen - 1]))
        klen--;
    key = xstrndup(assignment, klen);
    if (config_is_blank(key)) {
        free(key);
        return spate_error_set(err, SPATE_ECONFIG, "malformed override '%s': expected key=value",
                               assignment);
    }
    eq++;
    while (isspace((unsigned char)*eq))
        eq++;
    config_set(conf, key, eq, "-D");
    free(key);
    return 0;
}

/* ---- YAML ------------------------------------------------------------- */

#define CONFIG_YAML_MAX_DEPTH 32

struct yaml_reader {
    yaml_parser_t parser;
    struct config *conf;
    const char *name;
    struct config *seen; /* keys this document set, for duplicate detection */
    spate_error *err;
};

static int
yaml_next(struct yaml_reader *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev)) {
        return spate_error_set(y->err, SPATE_ECONFIG, "%s:%zu:%zu: %s%s%s", y->name,
                               y->parser.problem_mark.line + 1, y->parser.problem_mark.column + 1,
                               y->parser.problem ? y->parser.problem : "malformed YAML",
                               y->parser.context ? " " : "",
                               y->parser.context ? y->parser.context : "");
    }
    if (ev->type == YAML_ALIAS_EVENT) {
        int rc = spate_error_set(y->err, SPATE_ECONFIG,
                                 "%s:%zu:%zu: anchors and aliases are not supported", y->name,
                                 ev->start_mark.line + 1, ev->start_mark.column + 1);
        yaml_event_delete(ev);
        return rc;
    }
    return 0;
}

static int
yaml_set(struct yaml_reader *y, const char *key, const char *value, const yaml_mark_t *mark)
{
    char origin[512];
    const char *prev;

    snprintf(origin, sizeof origin, "%s:%zu", y->name, mark->line + 1);
    prev = config_lookup(y->seen, key);
    if (prev != NULL)
        return spate_error_set(y->err, SPATE_ECONFIG, "%s: key '%s' is set twice (first at %s)",
                               origin, key, prev);
    config_set(y->seen, key, origin, NULL);
    config_set(y->conf, key, value, origin);
    return 0;
}

/* A sequence of scalars becomes one value, its items joined with ';' (Flink's
 * list separator). Called after SEQUENCE_START. */
static int
yaml_read_sequence(struct yaml_reader *y, const char *key, const yaml_mark_t *mark)
{
    char *joined = xstrdup("");
    int rc = 0;

    for (;;) {
        yaml_event_t ev;
        char *next;

        if ((rc = yaml_next(y, &ev)) != 0)
            break;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            rc = yaml_set(y, key, joined, mark);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            rc = spate_error_set(y->err, SPATE_ECONFIG,
                                 "%s:%zu: key '%s': a list may hold only plain values", y->name,
                                 ev.start_mark.line + 1, key);
            yaml_event_delete(&ev);
            break;
        }
        next = xasprintf("%s%s%s", joined, joined[0] ? ";" : "", (char *)ev.data.scalar.value);
        free(joined);
        joined = next;
        yaml_event_delete(&ev);
    }
    free(joined);
    return rc;
}

/* Called after MAPPING_START; keys of nested mappings are joined with '.'. */
static int
yaml_read_mapping(struct yaml_reader *y, const char *prefix, int depth)
{
    if (depth > CONFIG_YAML_MAX_DEPTH)
        return spate_error_set(y->err, SPATE_ECONFIG, "%s: nested deeper than %d levels", y->name,
                               CONFIG_YAML_MAX_DEPTH);
    for (;;) {
        yaml_event_t kev, vev;
        char *key;
        int rc;

        if ((rc = yaml_next(y, &kev)) != 0)
            return rc;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return 0;
        }
        if (kev.type != YAML_SCALAR_EVENT || kev.data.scalar.length == 0) {
            rc = spate_error_set(y->err, SPATE_ECONFIG, "%s:%zu:%zu: a key must be a plain name",
                                 y->name, kev.start_mark.line + 1, kev.start_mark.column + 1);
            yaml_event_delete(&kev);
            return rc;
        }
        key = prefix[0] ? xasprintf("%s.%s", prefix, (char *)kev.data.scalar.value)
                        : xstrdup((char *)kev.data.scalar.value);
        yaml_event_delete(&kev);

        if ((rc = yaml_next(y, &vev)) != 0) {
            free(key);
            return rc;
        }
        switch (vev.type) {
        case YAML_SCALAR_EVENT:
            rc = yaml_set(y, key, (char *)vev.data.scalar.value, &vev.start_mark);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = yaml_read_mapping(y, key, depth + 1);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = yaml_read_sequence(y, key, &vev.start_mark);
            break;
        default:
            rc = spate_error_set(y->err, SPATE_ECONFIG, "%s:%zu: key '%s' has no usable value",
                                 y->name, vev.start_mark.line + 1, key);
            break;
        }
        yaml_event_delete(&vev);
        free(key);
        if (rc != 0)
            return rc;
    }
}

int
config_load_string(struct config *conf, const char *text, size_t len, const char *name,
                   spate_error *err)
{
    struct yaml_reader y = { .conf = conf, .name = name, .err = err };
    int documents = 0;
    int rc = 0;

    if (!yaml_parser_initialize(&y.parser))
        return spate_error_set(err, SPATE_ENOMEM, "%s: cannot start the YAML parser", name);
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
    y.seen = config_new();

    for (;;) {
        yaml_event_t ev;

        if ((rc = yaml_next(&y, &ev)) != 0)
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1)
                rc = spate_error_set(err, SPATE_ECONFIG, "%s:%zu: more than one YAML document",
                                     name, ev.start_mark.line + 1);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = yaml_read_mapping(&y, "", 0);
            break;
        case YAML_SCALAR_EVENT:
            /* An empty document reads as one empty scalar. */
            if (ev.data.scalar.length != 0)
                rc = spate_error_set(err, SPATE_ECONFIG,
                                     "%s:%zu: expected a mapping of keys to values, found '%.40s'",
                                     name, ev.start_mark.line + 1, (char *)ev.data.scalar.value);
            break;
        default:
            rc = spate_error_set(err, SPATE_ECONFIG, "%s:%zu: expected a mapping of keys to values",
                                 name, ev.start_mark.line + 1);
            break;
        }
        yaml_event_delete(&ev);
        if (rc != 0)
            break;
    }
    config_free(y.seen);
    yaml_parser_delete(&y.parser);
    return rc;
}

int
config_load_file(struct config *conf, const char *path, spate_error *err)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc;

    if (f == NULL)
        return spate_error_set(err, -errno, "cannot open config file '%s': %s", path,
                               spate_strerror(-errno));
    for (;;) {
        size_t n;

        xgrow((void **)&text, &cap, len + 4096, 1);
        n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = spate_error_set(err, SPATE_EIO, "cannot read config file '%s'", path);
    } else {
        rc = config_load_string(conf, text, len, path, err);
    }
    fclose(f);
    free(text);
    return rc;
}

/* ---- value parsers ---------------------------------------------------- */

static const char *
skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

/* Leading decimal digits of s as an unsigned number; *end after them. */
static int
parse_digits(const char *s, uint64_t *out, const char **end, const char *what, spate_error *err)
{
    const char *p = skip_space(s);
    uint64_t v = 0;

    if (!isdigit((unsigned char)*p))
        return spate_error_set(err, SPATE_EINVAL, "cannot parse '%s' as %s: expected a number", s,
                               what);
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');

        if (v > (UINT64_MAX - d) / 10)
            return spate_error_set(err, SPATE_ERANGE, "cannot parse '%s' as %s: number too large",
                                   s, what);
        v = v * 10 + d;
        p++;
    }
    *out = v;
    *end = p;
    return 0;
}

/* The unit after a number: trimmed, lower-cased into buf. */
static int
parse_unit(const char *p, char *buf, size_t size)
{
    size_t n;

    p = skip_space(p);
    n = strlen(p);
    while (n > 0 && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= size)
        return SPATE_EINVAL;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)tolower((unsigned char)p[i]);
    buf[n] = '\0';
    return 0;
}

int
config_parse_int(const char *text, int64_t *out, spate_error *err)
{
    const char *p = skip_space(text);
    char *end;
    long long v;

    errno = 0;
    v = strtoll(p, &end, 10);
    if (end == p || !config_is_blank(end))
        return spate_error_set(err, SPATE_EINVAL, "cannot parse '%s' as an integer", text);
    if (errno == ERANGE)
        return spate_error_set(err, SPATE_ERANGE, "integer '%s' is out of range", text);
    *out = v;
    return 0;
}

int
config_parse_double(const char *text, double *out, spate_error *err)
{
    const char *p = skip_space(text);
    char *end;
    double v;

    errno = 0;
    v = strtod(p, &end);
    if (end == p || !config_is_blank(end) || isnan(v))
        return spate_error_set(err, SPATE_EINVAL, "cannot parse '%s' as a number", text);
    if (errno == ERANGE || isinf(v))
        return spate_error_set(err, SPATE_ERANGE, "number '%s' is out of range", text);
    *out = v;
    return 0;
}

int
config_parse_bool(const char *text, bool *out, spate_error *err)
{
    char buf[8];

    if (parse_unit(text, buf, sizeof buf) == 0) {
        if (strcmp(buf, "true") == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(buf, "false") == 0) {
            *out = false;
            return 0;
        }
    }
    return spate_error_set(err, SPATE_EINVAL,
                           "cannot parse '%s' as a boolean: expected true or false", text);
}

struct unit {
    const char *name;
    uint64_t scale;
};

static const struct unit duration_units[] = {
    { "", 1000000 }, /* a bare number is milliseconds, as in Flink */
    { "ns", 1 },
    { "nano", 1 },
    { "nanos", 1 },
    { "nanosecond", 1 },
    { "nanoseconds", 1 },
    { "us", 1000 },
    { "\xc2\xb5s", 1000 },
    { "micro", 1000 },
    { "micros", 1000 },
    { "microsecond", 1000 },
    { "microseconds", 1000 },
    { "ms", 1000000 },
    { "milli", 1000000 },
    { "millis", 1000000 },
    { "millisecond", 1000000 },
    { "milliseconds", 1000000 },
    { "s", 1000000000 },
    { "sec", 1000000000 },
    { "secs", 1000000000 },
    { "second", 1000000000 },
    { "seconds", 1000000000 },
    { "m", 60000000000 },
    { "min", 60000000000 },
    { "mins", 60000000000 },
    { "minute", 60000000000 },
    { "minutes", 60000000000 },
    { "h", 3600000000000 },
    { "hour", 3600000000000 },
    { "hours", 3600000000000 },
    { "d", 86400000000000 },
    { "day", 86400000000000 },
    { "days", 86400000000000 },
};

static const struct unit memory_units[] = {
    { "", 1 },           { "b", 1 },           { "bytes", 1 },
    { "k", 1ULL << 10 }, { "kb", 1ULL << 10 }, { "kibibytes", 1ULL << 10 },
    { "m", 1ULL << 20 }, { "mb", 1ULL << 20 }, { "mebibytes", 1ULL << 20 },
    { "g", 1ULL << 30 }, { "gb", 1ULL << 30 }, { "gibibytes", 1ULL << 30 },
    { "t", 1ULL << 40 }, { "tb", 1ULL << 40 }, { "tebibytes", 1ULL << 40 },
};

static int
parse_scaled(const char *text, const struct unit *units, size_t nunits, uint64_t limit,
             const char *what, const char *expected, uint64_t *out, spate_error *err)
{
    const char *end = text;
    char unit[16];
    uint64_t v = 0;
    int rc;

    if ((rc = parse_digits(text, &v, &end, what, err)) != 0)
        return rc;
    if (parse_unit(end, unit, sizeof unit) != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "cannot parse '%s' as %s: unknown unit (expected %s)", text, what,
                               expected);
    for (size_t i = 0; i < nunits; i++) {
        if (strcmp(unit, units[i].name) != 0)
            continue;
        if (v > limit / units[i].scale)
            return spate_error_set(err, SPATE_ERANGE, "%s '%s' is too large", what, text);
        *out = v * units[i].scale;
        return 0;
    }
    return spate_error_set(err, SPATE_EINVAL,
                           "cannot parse '%s' as %s: unknown unit '%s' (expected %s)", text, what,
                           unit, expected);
}

int
config_parse_duration_ns(const char *text, int64_t *out, spate_error *err)
{
    uint64_t v;
    int rc = parse_scaled(text, duration_units, ARRAY_SIZE(duration_units), INT64_MAX, "a duration",
                          "ns, us, ms, s, min, h or d", &v, err);

    if (rc == 0)
        *out = (int64_t)v;
    return rc;
}

int
config_parse_memory_size(const char *text, uint64_t *out, spate_error *err)
{
    return parse_scaled(text, memory_units, ARRAY_SIZE(memory_units), UINT64_MAX, "a memory size",
                        "b, kb, mb, gb or tb", out, err);
}

int
config_parse_enum(const char *text, const char *values, int *out, spate_error *err)
{
    char word[64];
    const char *v = values;
    int index = 0;

    if (parse_unit(text, word, sizeof word) == 0) {
        while (*v) {
            size_t n = strcspn(v, "|");

            if (n == strlen(word) && strncasecmp(v, word, n) == 0) {
                *out = index;
                return 0;
            }
            v += n;
            if (*v == '|')
                v++;
            index++;
        }
    }
    return spate_error_set(err, SPATE_EINVAL, "unknown value '%s' (expected one of %s)", text,
                           values);
}

int
config_parse_port_range(const char *text, int *lo, int *hi, spate_error *err)
{
    const char *p = skip_space(text);
    char *end;
    long a, b;

    errno = 0;
    a = strtol(p, &end, 10);
    if (end == p || errno != 0)
        goto bad;
    b = a;
    p = skip_space(end);
    if (*p == '-') {
        p = skip_space(p + 1);
        b = strtol(p, &end, 10);
        if (end == p || errno != 0)
            goto bad;
    }
    if (!config_is_blank(end))
        goto bad;
    if (a < 0 || b > 65535 || a > b || (a == 0 && b != 0))
        return spate_error_set(err, SPATE_ERANGE,
                               "port range '%s' is not within 0 or 1-65535 with low <= high", text);
    *lo = (int)a;
    *hi = (int)b;
    return 0;
bad:
    return spate_error_set(err, SPATE_EINVAL,
                           "cannot parse '%s' as a port or port range (e.g. 6123 or 50100-50200)",
                           text);
}

/* ---- typed getters ---------------------------------------------------- */

void
config_effective(const struct config *conf, const struct config_option *opt, const char **value,
                 const char **origin)
{
    struct config_entry *e = config_find(conf, opt->key);

    if (e == NULL && opt->fallback_key != NULL)
        e = config_find(conf, opt->fallback_key);
    if (e != NULL) {
        *value = e->value;
        *origin = e->origin;
    } else {
        *value = opt->default_value;
        *origin = "default";
    }
}

bool
config_is_set(const struct config *conf, const struct config_option *opt)
{
    return config_find(conf, opt->key) != NULL ||
           (opt->fallback_key != NULL && config_find(conf, opt->fallback_key) != NULL);
}

static int
config_fail(spate_error *err, int code, const struct config_option *opt, const char *origin,
            const char *why)
{
    return spate_error_set(err, code == SPATE_ENOENT ? code : SPATE_ECONFIG,
                           "config key '%s' (%s): %s", opt->key, origin, why);
}

/* Looks up opt of the given type; returns 1 when it has no value at all. */
static int
config_value(const struct config *conf, const struct config_option *opt, enum config_type type,
             const char **value, const char **origin, spate_error *err)
{
    SPATE_ASSERT(opt->type == type);
    config_effective(conf, opt, value, origin);
    if (*value == NULL)
        return spate_error_set(err, SPATE_ENOENT, "config key '%s' is not set", opt->key);
    return 0;
}

static int
config_check_range(const struct config_option *opt, const char *value, const char *origin,
                   int64_t v, const char *unit, spate_error *err)
{
    char why[256];

    if (v >= opt->min && v <= opt->max)
        return 0;
    if (opt->max == CFG_NOLIMIT_HI)
        snprintf(why, sizeof why, "'%s' is out of range: expected at least %lld%s", value,
                 (long long)opt->min, unit);
    else
        snprintf(why, sizeof why, "'%s' is out of range: expected %lld%s to %lld%s", value,
                 (long long)opt->min, unit, (long long)opt->max, unit);
    return config_fail(err, SPATE_ERANGE, opt, origin, why);
}

int
config_get_string(const struct config *conf, const struct config_option *opt, const char **out,
                  spate_error *err)
{
    const char *origin;

    return config_value(conf, opt, CONFIG_STRING, out, &origin, err);
}

int
config_get_int(const struct config *conf, const struct config_option *opt, int64_t *out,
               spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_INT, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_int(value, out, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    return config_check_range(opt, value, origin, *out, "", err);
}

int
config_get_double(const struct config *conf, const struct config_option *opt, double *out,
                  spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_DOUBLE, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_double(value, out, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    if (*out < (double)opt->min || *out > (double)opt->max) {
        char range[256];

        snprintf(range, sizeof range, "'%s' is out of range: expected %g to %g", value,
                 (double)opt->min, (double)opt->max);
        return config_fail(err, SPATE_ERANGE, opt, origin, range);
    }
    return 0;
}

int
config_get_bool(const struct config *conf, const struct config_option *opt, bool *out,
                spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_BOOL, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_bool(value, out, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    return 0;
}

int
config_get_duration_ms(const struct config *conf, const struct config_option *opt, int64_t *out,
                       spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int64_t ns;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_DURATION, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_duration_ns(value, &ns, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    /* Round up: "500 us" is a real wait, not none. */
    *out = ns / 1000000 + (ns % 1000000 != 0);
    return config_check_range(opt, value, origin, *out, " ms", err);
}

int
config_get_memory_bytes(const struct config *conf, const struct config_option *opt, uint64_t *out,
                        spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_MEMORY, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_memory_size(value, out, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    return config_check_range(
        opt, value, origin, *out > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)*out, " bytes", err);
}

int
config_get_enum(const struct config *conf, const struct config_option *opt, int *out,
                spate_error *err)
{
    const char *value, *origin;
    spate_error why;
    int rc;

    if ((rc = config_value(conf, opt, CONFIG_ENUM, &value, &origin, err)) != 0)
        return rc;
    if ((rc = config_parse_enum(value, opt->enum_values, out, &why)) != 0)
        return config_fail(err, rc, opt, origin, why.message);
    return 0;
}

int
config_validate(const struct config *conf, spate_error *err)
{
    for (size_t i = 0; i < CONFIG_OPTION_COUNT; i++) {
        const struct config_option *opt = &config_options[i];
        union {
            const char *s;
            int64_t i;
            double d;
            bool b;
            uint64_t u;
            int e;
        } v;
        int rc = 0;

        if (!config_is_set(conf, opt))
            continue;
        switch (opt->type) {
        case CONFIG_STRING:
            rc = config_get_string(conf, opt, &v.s, err);
            break;
        case CONFIG_INT:
            rc = config_get_int(conf, opt, &v.i, err);
            break;
        case CONFIG_DOUBLE:
            rc = config_get_double(conf, opt, &v.d, err);
            break;
        case CONFIG_BOOL:
            rc = config_get_bool(conf, opt, &v.b, err);
            break;
        case CONFIG_DURATION:
            rc = config_get_duration_ms(conf, opt, &v.i, err);
            break;
        case CONFIG_MEMORY:
            rc = config_get_memory_bytes(conf, opt, &v.u, err);
            break;
        case CONFIG_ENUM:
            rc = config_get_enum(conf, opt, &v.e, err);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

bool
config_key_is_sensitive(const char *key)
{
    static const char *const words[] = { "secret", "password", "token", "credentials" };
    size_t len = strlen(key);

    if (len >= 5 && strcmp(key + len - 5, "-file") == 0)
        return false; /* a path; its file holds the secret */
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasestr(key, words[i]) != NULL)
            return true;
    return false;
}

int
config_warn_misspelled(const struct config *conf)
{
    const char *known[2 * CONFIG_OPTION_COUNT];
    size_t nknown = 0;
    int warned = 0;

    for (size_t i = 0; i < CONFIG_OPTION_COUNT; i++) {
        known[nknown++] = config_options[i].key;
        if (config_options[i].fallback_key != NULL)
            known[nknown++] = config_options[i].fallback_key;
    }
    for (size_t i = 0; i < config_count(conf); i++) {
        const char *key, *value, *origin, *near;
        bool is_known = false;

        config_entry(conf, i, &key, &value, &origin);
        for (size_t k = 0; k < nknown && !is_known; k++)
            is_known = strcmp(key, known[k]) == 0;
        if (is_known)
            continue;
        /* A slip of a letter or two; a longer key may hold a longer slip. */
        near = nearest_name(key, known, nknown, MIN(3, MAX(1, (int)strlen(key) / 10)));
        if (near != NULL && strcasecmp(near, key) != 0) {
            SPATE_LOG_WARN("config", "unknown key '%s' (%s) is ignored: did you mean '%s'?", key,
                           origin, near);
            warned++;
        } else if (near != NULL) {
            SPATE_LOG_WARN("config",
                           "unknown key '%s' (%s) is ignored: keys are case-sensitive; "
                           "did you mean '%s'?",
                           key, origin, near);
            warned++;
        }
    }
    return warned;
}
