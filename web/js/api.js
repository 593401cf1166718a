// The REST API of the JobManager that serves this page, by relative paths
// (so that a proxy may serve the dashboard under a prefix). Failures carry
// the server's own words (Flink's {"errors": [...]}).

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

export async function get(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" } });
    if (!r.ok) throw await failure(r);
    return r.json();
}

export async function text(path) {
    const r = await fetch(path);
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
    const r = await fetch(path, init);
    if (!r.ok) throw await failure(r);
    const t = await r.text();
    return t ? JSON.parse(t) : {};
}
