/* Configuration: conf/config.yaml in Flink 1.19+ style (nested or flat keys,
 * both accepted, parsed with libyaml) plus `-D key=value` overrides, read
 * through typed getters that know each option's type, range and spate's
 * default (config_options.h). A malformed value is an error naming the key,
 * the value, where it came from and what was expected; it never falls back to
 * the default. A config is built on one thread, then only read: any thread may
 * read it concurrently. */
#ifndef SPATE_CORE_CONFIG_H
#define SPATE_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/config_options.h"

struct config;

struct config *config_new(void);
void config_free(struct config *conf);
struct config *config_copy(const struct config *conf);

/* Adds the keys of a YAML file. A missing file is SPATE_ENOENT. */
int config_load_file(struct config *conf, const char *path, spate_error *err);
/* Adds the keys of YAML text; `name` stands for the file in messages. */
int config_load_string(struct config *conf, const char *text, size_t len, const char *name,
                       spate_error *err);
/* Sets (or replaces) one key; origin says where it came from ("-D", a file:line). */
void config_set(struct config *conf, const char *key, const char *value, const char *origin);
/* Applies "key=value", as given to -D. */
int config_apply_override(struct config *conf, const char *assignment, spate_error *err);
/* Parses every known key that is set, so that a bad value fails at start-up. */
int config_validate(const struct config *conf, spate_error *err);
/* A key set that spate does not know but that is a few edits from one it
 * does (a misspelling, which would otherwise leave the option at its
 * default without a word): a warning naming both and where the key was
 * set. Keys far from every known one (a connector's, a user's) pass. The
 * number of warnings. */
int config_warn_misspelled(const struct config *conf);

/* Whether key holds a secret (a password, token, secret or credentials, not
 * a file that holds one): shown as CONFIG_HIDDEN, never passed on a command
 * line. */
#define CONFIG_HIDDEN "******"
bool config_key_is_sensitive(const char *key);

/* The raw value of key, or NULL when unset; valid until the key is set again. */
const char *config_lookup(const struct config *conf, const char *key);
/* The value that applies to opt (its key, else its fallback key, else its
 * default) and where it came from ("default", "file:line", "-D"); *value is
 * NULL when there is none. Valid until the key is set again. */
void config_effective(const struct config *conf, const struct config_option *opt,
                      const char **value, const char **origin);
bool config_is_set(const struct config *conf, const struct config_option *opt);
size_t config_count(const struct config *conf);
/* The i-th key, value and origin (i < config_count), in the order they were set. */
void config_entry(const struct config *conf, size_t i, const char **key, const char **value,
                  const char **origin);

/* Typed getters: the key's value, else its fallback key's, else the option's
 * default. A value that does not parse, or is out of the option's range, is
 * SPATE_ECONFIG with a message naming key, value, origin and expectation. */
int config_get_string(const struct config *conf, const struct config_option *opt, const char **out,
                      spate_error *err);
int config_get_int(const struct config *conf, const struct config_option *opt, int64_t *out,
                   spate_error *err);
int config_get_double(const struct config *conf, const struct config_option *opt, double *out,
                      spate_error *err);
int config_get_bool(const struct config *conf, const struct config_option *opt, bool *out,
                    spate_error *err);
int config_get_duration_ms(const struct config *conf, const struct config_option *opt, int64_t *out,
                           spate_error *err);
int config_get_memory_bytes(const struct config *conf, const struct config_option *opt,
                            uint64_t *out, spate_error *err);
/* The index of the value in opt->enum_values ("a|b|c"), compared ignoring case. */
int config_get_enum(const struct config *conf, const struct config_option *opt, int *out,
                    spate_error *err);

/* The value parsers behind the getters, on their own (also for the fuzzer).
 * Messages say what was expected; the getters prefix them with the key. */
int config_parse_int(const char *text, int64_t *out, spate_error *err);
int config_parse_double(const char *text, double *out, spate_error *err);
int config_parse_bool(const char *text, bool *out, spate_error *err);
/* Flink's duration syntax: "10 s", "500ms", "1 min", "2 h", "1 d", "100 us",
 * "5 ns"; a bare number is milliseconds. */
int config_parse_duration_ns(const char *text, int64_t *out, spate_error *err);
/* Flink's memory sizes, powers of 1024: "32 kb", "64m", "1 gb", "2 tebibytes";
 * a bare number is bytes. */
int config_parse_memory_size(const char *text, uint64_t *out, spate_error *err);
int config_parse_enum(const char *text, const char *values, int *out, spate_error *err);
/* "6123", "0" or a range "50100-50200": *lo and *hi inclusive. */
int config_parse_port_range(const char *text, int *lo, int *hi, spate_error *err);

#endif
