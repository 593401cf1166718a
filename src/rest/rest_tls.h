/* The REST server's HTTPS certificate (security.ssl.rest.*): checked and
 * read at start, read again on the first handshake after a SIGHUP
 * (tls_reload_request) and handed to GnuTLS through libmicrohttpd's
 * certificate callback; files that fail the checks keep the old
 * certificate, with a log line saying why. The connection threads call the
 * callback; a mutex guards the current certificate. Replaced ones stay
 * until the server stops: a handshake begun before may still use one. */
#ifndef SPATE_REST_REST_TLS_H
#define SPATE_REST_REST_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "core/config.h"
#include "core/tls.h"

struct rest_cert;

struct rest_tls {
    pthread_mutex_t lock;    /* guards cert and generation */
    struct tls_context *ctx; /* the files, checked as every context's */
    struct rest_cert *cert;  /* the current one (its prev: replaced ones); NULL: HTTP */
    unsigned generation;     /* tls_reload_generation when cert was read */
    char *trust;             /* PEM text: clients' CA when client_auth, else NULL */
    bool client_auth;        /* security.ssl.rest.authentication-enabled */
};

/* Reads the certificate when security.ssl.rest.enabled (else t stays off). */
int rest_tls_init(struct rest_tls *t, const struct config *conf, spate_error *err);
void rest_tls_release(struct rest_tls *t);
bool rest_tls_on(const struct rest_tls *t);

/* MHD_OPTION_HTTPS_CERT_CALLBACK (gnutls_certificate_retrieve_function2). */
int rest_tls_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *privkey);

#endif
