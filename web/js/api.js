// The REST API of the JobManager that serves this page, by relative paths
// (so that a proxy may serve the dashboard under a prefix). Failures carry
// the server's own words (Flink's {"errors": [...]}). Under
// rest.authentication a refused request (401) asks the user for
// credentials (auth.js) and is sent again with them.
import { authorization, forget, signIn } from "./auth.js";

async function failure(r) {
    let why = `${r.status} ${r.statusText}`;
    try {
        const body = await r.json();
        if (body.errors && body.errors.length) why = body.errors.join("; ");
    } catch (e) {
        // not JSON: the status line says enough
    }
    return new Error(`${r.url.replace(location.origin, "")}: ${why}`);
}

// fetch with the session's credentials; a 401 asks for others and tries
// again, until the user cancels (then the refusal is the error).
async function request(path, init = {}) {
    for (;;) {
        const headers = { ...init.headers };
        const auth = authorization();
        if (auth) headers.Authorization = auth;
        const r = await fetch(path, { ...init, headers });
        if (r.status !== 401) return r;
        const refusal = await failure(r);
        if (auth) forget();
        const scheme = (r.headers.get("WWW-Authenticate") || "Bearer").split(" ")[0];
        if (!await signIn(scheme, refusal.message)) throw refusal;
    }
}

export async function get(path) {
    const r = await request(path, { headers: { Accept: "application/json" } });
    if (!r.ok) throw await failure(r);
    return r.json();
}

export async function text(path) {
    const r = await request(path);
    if (!r.ok) throw await failure(r);
    return r.text();
}

// PATCH, POST, DELETE: body is JSON, FormData or nothing.
export async function send(method, path, body) {
    const init = { method };
    if (body instanceof FormData) init.body = body;
    else if (body !== undefined) {
        init.body = JSON.stringify(body);
        init.headers = { "Content-Type": "application/json" };
    }
    const r = await request(path, init);
    if (!r.ok) throw await failure(r);
    const t = await r.text();
    return t ? JSON.parse(t) : {};
}
