/* libFuzzer target for the configuration parsers: the YAML reader, every
 * typed getter over what it read, and the value parsers on raw text. None may
 * crash, leak, or read out of bounds, whatever the bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config *conf = config_new();
    char *text = malloc(size + 1);
    spate_error err;
    union {
        int64_t i;
        uint64_t u;
        double d;
        bool b;
        int e;
        const char *s;
    } v;
    int lo, hi;

    memcpy(text, data, size);
    text[size] = '\0';

    if (config_load_string(conf, text, size, "fuzz.yaml", &err) == 0) {
        config_validate(conf, &err);
        for (size_t i = 0; i < CONFIG_OPTION_COUNT; i++) {
            const struct config_option *o = &config_options[i];

            switch (o->type) {
            case CONFIG_STRING:
                config_get_string(conf, o, &v.s, &err);
                break;
            case CONFIG_INT:
                config_get_int(conf, o, &v.i, &err);
                break;
            case CONFIG_DOUBLE:
                config_get_double(conf, o, &v.d, &err);
                break;
            case CONFIG_BOOL:
                config_get_bool(conf, o, &v.b, &err);
                break;
            case CONFIG_DURATION:
                config_get_duration_ms(conf, o, &v.i, &err);
                break;
            case CONFIG_MEMORY:
                config_get_memory_bytes(conf, o, &v.u, &err);
                break;
            case CONFIG_ENUM:
                config_get_enum(conf, o, &v.e, &err);
                break;
            }
        }
    }
    config_apply_override(conf, text, &err);
    config_parse_duration_ns(text, &v.i, &err);
    config_parse_memory_size(text, &v.u, &err);
    config_parse_int(text, &v.i, &err);
    config_parse_double(text, &v.d, &err);
    config_parse_bool(text, &v.b, &err);
    config_parse_enum(text, "none|fixed-delay|exponential-delay", &v.e, &err);
    config_parse_port_range(text, &lo, &hi, &err);

    config_free(conf);
    free(text);
    return 0;
}
