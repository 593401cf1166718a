/* libFuzzer target for what a TLS port reads before and after its handshake
 * (core/tls.h): the bytes go to a server session as a client's, and to a
 * client session (after its ClientHello) as a server's answer, cut into
 * pieces where the input's first byte says; whatever comes out is taken,
 * and after an established handshake the records are read. None may crash,
 * leak or read out of bounds. The certificate is a test one of its own,
 * valid for a century, written to a temporary folder once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fuzz_cert[] = "-----BEGIN CERTIFICATE-----\n"
                                "MIIBgTCCASegAwIBAgIUek6XV/CW4aRse+fcXvipsxMfMQwwCgYIKoZIzj0EAwIw\n"
                                "FTETMBEGA1UEAwwKc3BhdGUgZnV6ejAgFw0yNjEyMDMxNTQzNTZaGA8yMTI2MTEw\n"
                                "OTE1NDM1NlowFTETMBEGA1UEAwwKc3BhdGUgZnV6ejBZMBMGByqGSM49AgEGCCqG\n"
                                "SM49AwEHA0IABHo0t+8PcP3xSgAHRwg6npFVt42ulHbIDDPNtggkVKfWEj3szhak\n"
                                "Y2Qb311uFxfoUZ/xRWcmVmpdMR8c2aRLqvejUzBRMB0GA1UdDgQWBBTfrqpnjCD+\n"
                                "bM5LdmCE1n0PdpxWaTAfBgNVHSMEGDAWgBTfrqpnjCD+bM5LdmCE1n0PdpxWaTAP\n"
                                "BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCcps5vMYulW8nJwwUr\n"
                                "zOIprvArKgOHEzmnfA/OHZUp/QIgci8/ztNaML6eH1ZxXdIhPg9fKWsRlmqMCmyW\n"
                                "pecMXIs=\n"
                                "-----END CERTIFICATE-----\n";
static const char fuzz_key[] = "-----BEGIN PRIVATE KEY-----\n"
                               "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeI5xObYEbWeYhp17\n"
                               "kP5JY6dvrrEvOaSTHYs6XPChByqhRANCAAR6NLfvD3D98UoAB0cIOp6RVbeNrpR2\n"
                               "yAwzzbYIJFSn1hI97M4WpGNkG99dbhcX6FGf8UVnJlZqXTEfHNmkS6r3\n"
                               "-----END PRIVATE KEY-----\n";

static void
fuzz_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

/* The context, made on the first input (and kept: the process's). */
static struct tls_context *
fuzz_context(void)
{
    static struct tls_context *ctx;
    char dir[] = "/tmp/fuzz-tls-XXXXXX", cert[64], key[64];
    struct config *conf;
    spate_error err;

    if (ctx != NULL)
        return ctx;
    if (mkdtemp(dir) == NULL)
        abort();
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    fuzz_write(cert, fuzz_cert);
    fuzz_write(key, fuzz_key);
    conf = config_new();
    config_set(conf, "security.ssl.internal.enabled", "true", "fuzz");
    config_set(conf, "security.ssl.internal.cert", cert, "fuzz");
    config_set(conf, "security.ssl.internal.key", key, "fuzz");
    config_set(conf, "security.ssl.internal.truststore", cert, "fuzz");
    if (tls_context_from_config(conf, TLS_INTERNAL, &ctx, &err) != 0) {
        fprintf(stderr, "fuzz_tls_handshake: %s\n", err.message);
        abort();
    }
    config_free(conf);
    unlink(cert);
    unlink(key);
    rmdir(dir);
    return ctx;
}

/* Feeds data to s in pieces of at most step bytes, driving it as a
 * connection would. */
static void
fuzz_drive(struct tls_session *s, const uint8_t *data, size_t size, size_t step)
{
    uint8_t out[4096];
    spate_error err;

    while (size > 0) {
        size_t n = size < step ? size : step;
        ssize_t got;

        tls_session_put_input(s, data, n);
        data += n;
        size -= n;
        if (!tls_session_established(s) && tls_session_handshake(s, &err) < 0)
            return;
        while (tls_session_take_output(s, out, sizeof out) > 0)
            continue;
        if (!tls_session_established(s))
            continue;
        while ((got = tls_session_read(s, out, sizeof out, &err)) > 0)
            continue;
        if (got < 0)
            return;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tls_context *ctx = fuzz_context();
    struct tls_session *s;
    size_t step;
    uint8_t out[4096];
    spate_error err;

    if (size < 1)
        return 0;
    step = (size_t)data[0] * 8 + 1;
    s = tls_session_new(ctx, TLS_SERVER);
    fuzz_drive(s, data + 1, size - 1, step);
    tls_session_free(s);

    s = tls_session_new(ctx, TLS_CLIENT);
    tls_session_handshake(s, &err); /* the ClientHello */
    while (tls_session_take_output(s, out, sizeof out) > 0)
        continue;
    fuzz_drive(s, data + 1, size - 1, step);
    tls_session_free(s);
    return 0;
}
