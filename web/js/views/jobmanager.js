// The JobManager: its configuration, logs and thread dump.
import { get } from "../api.js";
import { el, table, tabs } from "../dom.js";
import { logsView, threadDumpView } from "./process.js";

const TABS = [["config", "Configuration"], ["logs", "Logs"], ["thread-dump", "Thread Dump"]];

export async function jobManager(root, { params }) {
    const [tab = "config", file] = params;
    const body = el("div", { id: `jobmanager-${tab}` });
    root.append(el("h1", {}, "Job Manager"), tabs("#/jobmanager", TABS, tab), body);
    if (tab === "config") {
        const entries = await get("jobmanager/config");
        body.append(table([{ title: "Key", value: (e) => e.key }, { title: "Value", value: (e) => e.value }],
            entries.sort((a, b) => a.key.localeCompare(b.key))));
    } else if (tab === "logs") {
        await logsView(body, "jobmanager", "#/jobmanager", file, false);
    } else if (tab === "thread-dump") {
        await threadDumpView(body, "jobmanager");
    } else {
        body.append(el("p", { class: "note" }, `No tab '${tab}'.`));
    }
}
