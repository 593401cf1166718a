/* The REST server's HTTPS certificate (rest_tls.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "rest/rest_int.h"
#include "rest/rest_tls.h"

#define REST_CERT_CHAIN_MAX 8

struct rest_cert {
    gnutls_pcert_st pcert[REST_CERT_CHAIN_MAX];
    unsigned int n;
    gnutls_privkey_t key;
    struct rest_cert *prev;
};

static void
rest_cert_free(struct rest_cert *c)
{
    for (unsigned int i = 0; i < c->n; i++)
        gnutls_pcert_deinit(&c->pcert[i]);
    if (c->key != NULL)
        gnutls_privkey_deinit(c->key);
    free(c);
}

static char *
rest_read_pem(const char *key, const char *path, spate_error *err)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        spate_error_set(err, SPATE_ECONFIG, "%s: cannot read '%s': %s", key, path, strerror(errno));
        return NULL;
    }
    do {
        if (cap - len < 4096)
            buf = xrealloc(buf, cap = cap * 2 + 4096);
        n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
    } while (n > 0);
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* The context's certificate chain and key, as GnuTLS hands them out. The
 * files passed tls.c's checks (PEM, the key matches, not expired) first. */
static int
rest_cert_read(struct tls_context *ctx, struct rest_cert **out, spate_error *err)
{
    struct rest_cert *c = xcalloc(1, sizeof *c);
    const char *cert_path = tls_context_cert_file(ctx), *key_path = tls_context_key_file(ctx);
    char *pem = rest_read_pem(CFG(SECURITY_SSL_REST_CERT)->key, cert_path, err), *key = NULL;
    gnutls_datum_t d;
    int rc = SPATE_ECONFIG, g;

    if (pem == NULL ||
        (key = rest_read_pem(CFG(SECURITY_SSL_REST_KEY)->key, key_path, err)) == NULL)
        goto out;
    c->n = REST_CERT_CHAIN_MAX;
    d = (gnutls_datum_t){ (unsigned char *)pem, (unsigned int)strlen(pem) };
    if ((g = gnutls_pcert_list_import_x509_raw(c->pcert, &c->n, &d, GNUTLS_X509_FMT_PEM, 0)) < 0) {
        c->n = 0;
        spate_error_set(err, SPATE_ECONFIG, "%s: '%s': %s", CFG(SECURITY_SSL_REST_CERT)->key,
                        cert_path, gnutls_strerror(g));
        goto out;
    }
    d = (gnutls_datum_t){ (unsigned char *)key, (unsigned int)strlen(key) };
    if ((g = gnutls_privkey_init(&c->key)) < 0 ||
        (g = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        spate_error_set(err, SPATE_ECONFIG, "%s: '%s': %s", CFG(SECURITY_SSL_REST_KEY)->key,
                        key_path, gnutls_strerror(g));
        goto out;
    }
    *out = c;
    c = NULL;
    rc = 0;
out:
    if (c != NULL)
        rest_cert_free(c);
    free(pem);
    free(key);
    return rc;
}

int
rest_tls_init(struct rest_tls *t, const struct config *conf, spate_error *err)
{
    int rc;

    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    if ((rc = tls_context_from_config(conf, TLS_REST, &t->ctx, err)) != 0 || t->ctx == NULL)
        return rc;
    config_get_bool(conf, CFG(SECURITY_SSL_REST_AUTHENTICATION_ENABLED), &t->client_auth, NULL);
    if (tls_context_cert_file(t->ctx) == NULL)
        return spate_error_set(err, SPATE_ECONFIG,
                               "%s: not set (HTTPS needs the REST server's certificate)",
                               CFG(SECURITY_SSL_REST_CERT)->key);
    t->generation = tls_reload_generation();
    if ((rc = rest_cert_read(t->ctx, &t->cert, err)) != 0)
        return rc;
    if (t->client_auth &&
        (t->trust = rest_read_pem(CFG(SECURITY_SSL_REST_TRUSTSTORE)->key,
                                  tls_context_truststore_file(t->ctx), err)) == NULL)
        return SPATE_ECONFIG;
    return 0;
}

void
rest_tls_release(struct rest_tls *t)
{
    while (t->cert != NULL) {
        struct rest_cert *c = t->cert;

        t->cert = c->prev;
        rest_cert_free(c);
    }
    tls_context_unref(t->ctx);
    t->ctx = NULL;
    free(t->trust);
    t->trust = NULL;
    pthread_mutex_destroy(&t->lock);
}

bool
rest_tls_on(const struct rest_tls *t)
{
    return t->cert != NULL;
}

/* The current certificate, read again first when a reload was asked for
 * since it was read. Under the lock. */
static struct rest_cert *
rest_tls_current(struct rest_tls *t)
{
    unsigned gen = tls_reload_generation();
    struct rest_cert *c;
    spate_error err = { 0 };

    if (t->generation == gen)
        return t->cert;
    t->generation = gen;
    if (tls_context_reload(t->ctx, &err) != 0 || rest_cert_read(t->ctx, &c, &err) != 0) {
        SPATE_LOG_ERROR(REST_LOG, "REST certificates not reloaded, the old ones stay: %s",
                        err.message);
        return t->cert;
    }
    c->prev = t->cert;
    t->cert = c;
    SPATE_LOG_INFO(REST_LOG, "REST certificates reloaded from '%s'", tls_context_cert_file(t->ctx));
    return c;
}

int
rest_tls_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                     const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                     gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    struct MHD_Connection *conn = gnutls_session_get_ptr(session);
    struct rest_server *rs = rest_conns_server(conn);
    struct rest_cert *c;

    (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    if (rs == NULL)
        return -1; /* no server: the handshake fails */
    pthread_mutex_lock(&rs->tls.lock);
    c = rest_tls_current(&rs->tls);
    pthread_mutex_unlock(&rs->tls.lock);
    *pcert = c->pcert;
    *pcert_length = c->n;
    *privkey = c->key;
    return 0;
}
