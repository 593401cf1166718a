/* Unit tests of src/rest/rest_web: the dashboard's files by path (the web
 * root and nothing outside it: "." and ".." segments, backslashes), and
 * which Accept-Encoding headers take gzip. The e2e test test_dashboard.py
 * serves them over HTTP and inflates each gzip. */
#include <criterion/criterion.h>
#include <string.h>

#include "rest/rest_int.h"
#include "rest/web_assets.h"

Test(rest_web, root_is_the_index)
{
    const struct web_asset *a = rest_web_find("/");

    cr_assert_not_null(a);
    cr_assert_eq(a, rest_web_find("/index.html"));
    cr_assert_str_eq(a->content_type, "text/html; charset=utf-8");
    cr_assert(memmem(a->data, a->len, "<script type=\"module\" src=\"js/app.js\">", 38) != NULL);
}

Test(rest_web, every_file_has_a_type_an_etag_and_its_gzip)
{
    size_t n = 0;

    /* (The e2e test inflates each gzip and compares it with web/.) */
    for (const struct web_asset *a = web_assets; a->path != NULL; a++, n++) {
        cr_assert_eq(rest_web_find(a->path), a, "%s", a->path);
        cr_assert(strlen(a->etag) == 22 && a->etag[0] == '"', "%s: %s", a->path, a->etag);
        cr_assert_gt(strlen(a->content_type), 0);
        cr_assert(a->gzip_len > 18 && a->gzip[0] == 0x1f && a->gzip[1] == 0x8b, "%s", a->path);
    }
    cr_assert_gt(n, 5);
    cr_assert_not_null(rest_web_find("/js/app.js"));
    cr_assert_not_null(rest_web_find("/style.css"));
}

Test(rest_web, nothing_outside_the_root)
{
    static const char *const refused[] = {
        "/..",
        "/../index.html",
        "/js/../index.html",
        "/js/../../etc/passwd",
        "/./index.html",
        "/js/./app.js",
        "/js/.",
        "/..\\index.html",
        "/js\\app.js",
        "index.html",
        "",
        "/README.md",
        "/nothing.html",
        "/index.html/",
        "//index.html",
    };

    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        cr_assert_null(rest_web_find(refused[i]), "%s", refused[i]);
    /* A file whose name starts with dots is no segment of "." or "..". */
    cr_assert_null(rest_web_find("/..index.html"));
}

Test(rest_web, accept_encoding)
{
    cr_assert(rest_web_takes_gzip("gzip"));
    cr_assert(rest_web_takes_gzip("gzip, deflate, br"));
    cr_assert(rest_web_takes_gzip("br;q=1.0, GZIP;q=0.8"));
    cr_assert(rest_web_takes_gzip("deflate,gzip"));
    cr_assert(rest_web_takes_gzip("br, gzip ; q=0.5"));
    cr_assert_not(rest_web_takes_gzip(NULL));
    cr_assert_not(rest_web_takes_gzip(""));
    cr_assert_not(rest_web_takes_gzip("identity"));
    cr_assert_not(rest_web_takes_gzip("br, deflate"));
    cr_assert_not(rest_web_takes_gzip("gzip;q=0"));
    cr_assert_not(rest_web_takes_gzip("gzip;q=0.000"));
    cr_assert_not(rest_web_takes_gzip("x-gzip2, gzipped"));
}
