// What the JobManager's and a TaskManager's pages share: a process's log
// files (one shown) and its thread dump.
import { get, text } from "../api.js";
import { el, table, bytes } from "../dom.js";

// base: the REST path of the process ("taskmanagers/<id>", "jobmanager");
// page: its page's hash ("#/taskmanager/<id>"); file: the log to show
// (undefined: the first *.log, if show is set).
export async function logsView(body, base, page, file, show) {
    const { logs } = await get(`${base}/logs`);
    const view = el("pre", { id: "log-text" });
    body.append(table([
        { title: "Log File", value: (l) => el("a", {
            href: `${page}/logs/${encodeURIComponent(l.name)}` }, l.name) },
        { title: "Size", value: (l) => bytes(l.size), num: true },
    ], logs), view);
    const shown = file || (show ? logs.find((l) => l.name.endsWith(".log"))?.name : undefined);
    if (shown) {
        body.insertBefore(el("h2", {}, shown), view);
        view.textContent = await text(`${base}/logs/${encodeURIComponent(shown)}`);
    }
}

export async function threadDumpView(body, base) {
    const { threadInfos } = await get(`${base}/thread-dump`);
    body.append(el("p", { class: "note" }, `${threadInfos.length} threads`),
        el("pre", { id: "thread-dump" }, threadInfos.map((t) => t.stringifiedThreadInfo).join("\n")));
}
