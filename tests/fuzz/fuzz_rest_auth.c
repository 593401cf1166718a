/* libFuzzer target for REST authentication (rest/rest_auth.h): the input's
 * first line is an Authorization header's value, checked against fixed
 * tokens and credentials; the rest is written as both a token file and a
 * credentials file, loaded, and the header checked against what they hold.
 * Nothing may crash, leak or read out of bounds, and the fixed token and
 * credentials must always pass. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "rest/rest_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[] = "/tmp/fuzz-rest-auth-XXXXXX";
static char fuzz_tokens[64], fuzz_basic[64];

static void
fuzz_write(const char *path, const void *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0 || (len > 0 && write(fd, text, len) != (ssize_t)len) || close(fd) != 0)
        abort();
}

static struct rest_auth *
fuzz_load(void)
{
    struct config *conf = config_new();
    struct rest_auth *a = NULL;
    spate_error err;

    config_set(conf, "rest.authentication.token-file", fuzz_tokens, "fuzz");
    config_set(conf, "rest.authentication.credentials-file", fuzz_basic, "fuzz");
    if (rest_auth_new(conf, &a, &err) != 0)
        a = NULL;
    config_free(conf);
    return a;
}

static void
fuzz_cleanup(void)
{
    unlink(fuzz_tokens);
    unlink(fuzz_basic);
    rmdir(fuzz_dir);
}

/* The authentication of fixed files, made on the first input and kept (the
 * folder goes at exit). */
static const struct rest_auth *
fuzz_fixed(void)
{
    static struct rest_auth *a;
    static const char tokens[] = "# a comment\nfuzz-token\n";
    static const char basic[] = "user:pass\n";

    if (a != NULL)
        return a;
    if (mkdtemp(fuzz_dir) == NULL)
        abort();
    atexit(fuzz_cleanup);
    snprintf(fuzz_tokens, sizeof fuzz_tokens, "%s/tokens", fuzz_dir);
    snprintf(fuzz_basic, sizeof fuzz_basic, "%s/basic", fuzz_dir);
    fuzz_write(fuzz_tokens, tokens, sizeof tokens - 1);
    fuzz_write(fuzz_basic, basic, sizeof basic - 1);
    if ((a = fuzz_load()) == NULL)
        abort();
    return a;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct rest_auth *fixed = fuzz_fixed();
    char *header = malloc(size + 1), *nl;
    const char *why = NULL, *files = "";
    struct rest_auth *a;

    memcpy(header, data, size);
    header[size] = '\0';
    if ((nl = memchr(header, '\n', size)) != NULL) {
        *nl = '\0';
        files = nl + 1;
    }
    /* "user:pass" in base64, and the token: the fixed ones always pass. */
    if (!rest_auth_valid(fixed, "Basic dXNlcjpwYXNz", &why) ||
        !rest_auth_valid(fixed, "Bearer fuzz-token", &why))
        abort();
    if (!rest_auth_valid(fixed, header, &why) && why == NULL)
        abort();
    if (nl != NULL) {
        size_t len = size - (size_t)(files - header);

        fuzz_write(fuzz_tokens, files, len);
        fuzz_write(fuzz_basic, files, len);
        if ((a = fuzz_load()) != NULL) {
            why = NULL;
            if (!rest_auth_valid(a, header, &why) && why == NULL)
                abort();
            rest_auth_free(a);
        }
    }
    free(header);
    return 0;
}
