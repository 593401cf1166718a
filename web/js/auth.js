// rest.authentication: when the JobManager answers 401, a dialog asks for
// what its WWW-Authenticate header names (a bearer token, or a user and
// password for Basic) and gives the Authorization header it makes; the
// header is kept for this tab's session (sessionStorage) and sent with
// every request after. Nothing is asked while the server asks nothing.
import { el } from "./dom.js";

const KEY = "spate.authorization";

export function authorization() {
    return sessionStorage.getItem(KEY);
}

export function forget() {
    sessionStorage.removeItem(KEY);
}

// scheme: "Bearer" or "Basic"; reason: the server's refusal. Resolves to
// the Authorization header value, or null when the user cancels.
export function signIn(scheme, reason) {
    const basic = scheme.toLowerCase() === "basic";
    const fields = basic
        ? [el("label", {}, "User ", el("input", { id: "auth-user", autocomplete: "username" })),
            el("label", {}, "Password ", el("input", { id: "auth-password", type: "password",
                autocomplete: "current-password" }))]
        : [el("label", {}, "Token ", el("input", { id: "auth-token", type: "password",
            autocomplete: "off" }))];
    const submit = el("button", { id: "sign-in-submit", type: "submit" }, "Sign in");
    const cancel = el("button", { id: "sign-in-cancel", type: "button" }, "Cancel");
    const form = el("form", { method: "dialog" },
        el("h2", {}, "Sign in"),
        el("p", { class: "note", "data-field": "auth-reason" }, reason),
        el("p", { class: "note" }, basic ? "This JobManager wants a user and password "
            + "(rest.authentication.credentials-file) for changes."
            : "This JobManager wants a bearer token (rest.authentication.token-file) for changes."),
        ...fields, el("div", { class: "actions" }, submit, cancel));
    const dialog = el("dialog", { id: "sign-in" }, form);
    document.body.append(dialog);
    return new Promise((resolve) => {
        const done = (value) => {
            dialog.close();
            dialog.remove();
            if (value) sessionStorage.setItem(KEY, value);
            resolve(value);
        };
        cancel.addEventListener("click", () => done(null));
        dialog.addEventListener("cancel", () => done(null));
        form.addEventListener("submit", (e) => {
            e.preventDefault();
            if (basic) {
                const user = form.querySelector("#auth-user").value;
                const password = form.querySelector("#auth-password").value;
                // btoa takes Latin-1: UTF-8 bytes first, as curl sends them.
                const bytes = new TextEncoder().encode(`${user}:${password}`);
                done(`Basic ${btoa(String.fromCharCode(...bytes))}`);
            } else {
                done(`Bearer ${form.querySelector("#auth-token").value.trim()}`);
            }
        });
        dialog.showModal();
        form.querySelector("input").focus();
    });
}
