// The TaskManagers: the list with slots and memory; one TaskManager's
// metrics, logs and thread dump.
import { get } from "../api.js";
import { el, table, tabs, bytes, duration, count } from "../dom.js";
import { logsView, threadDumpView } from "./process.js";

const TABS = [["metrics", "Metrics"], ["logs", "Logs"], ["thread-dump", "Thread Dump"]];
const GAUGES = ["Status.Process.Memory.RSS", "Status.Process.CPU.Time", "Status.Process.Threads.Count",
    "Status.Shuffle.Netty.UsedMemorySegments", "Status.Shuffle.Netty.TotalMemorySegments"];

export async function taskManagers(root, { live }) {
    const list = el("div", { id: "taskmanager-list" });
    root.append(el("h1", {}, "Task Managers"), list);
    await live(async () => {
        const { taskmanagers } = await get("taskmanagers");
        list.replaceChildren(taskmanagers.length === 0 ? el("p", { class: "note" }, "No TaskManagers.")
            : table([
                { title: "ID", value: (t) => t.id },
                { title: "Address", value: (t) => `${t.path} (data port ${t.dataPort})` },
                { title: "Last Heartbeat", value: (t) => `${duration(t.timeSinceLastHeartbeat)} ago` },
                { title: "Slots", value: (t) => t.slotsNumber, num: true },
                { title: "Free Slots", value: (t) => t.freeSlots, num: true },
                { title: "CPU Cores", value: (t) => t.hardware.cpuCores, num: true },
                { title: "Physical Memory", value: (t) => bytes(t.hardware.physicalMemory), num: true },
                { title: "Free Memory", value: (t) => bytes(t.hardware.freeMemory), num: true },
                { title: "Network Memory", value: (t) => bytes(t.memoryConfiguration?.networkMemory),
                  num: true },
            ], taskmanagers, (t) => { location.hash = `#/taskmanager/${t.id}/metrics`; }));
    });
}

async function metricsTab(body, id, live) {
    await live(async () => {
        const [t, gauges] = await Promise.all([get(`taskmanagers/${id}`),
            get(`taskmanagers/${id}/metrics?get=${GAUGES.join(",")}`)]);
        const m = t.metrics || {};
        const kv = (rows) => table([{ title: "", value: (r) => r[0] }, { title: "", value: (r) => r[1],
            num: true }], rows);
        body.replaceChildren(
            el("h2", {}, "Resources"), kv([
                ["Slots", `${t.freeSlots} free of ${t.slotsNumber}`],
                ["CPU cores", t.hardware.cpuCores],
                ["Physical memory", bytes(t.hardware.physicalMemory)],
                ["Free memory", bytes(t.hardware.freeMemory)],
                ["Process memory (RSS)", bytes(m.heapUsed)],
                ["Network memory segments", `${count(m.nettyShuffleMemorySegmentsUsed)} used of `
                    + `${count(m.nettyShuffleMemorySegmentsTotal)}`],
                ["Network memory", `${bytes(m.nettyShuffleMemoryUsed)} used of `
                    + `${bytes(m.nettyShuffleMemoryTotal)}`],
            ]),
            el("h2", {}, "Memory Configuration"),
            kv(Object.entries(t.memoryConfiguration || {}).map(([k, v]) => [k, bytes(v)])),
            el("h2", {}, "Allocated Slots"),
            table([{ title: "Job", value: (s) => el("a", { href: `#/job/${s.jobId}` }, s.jobId) }],
                t.allocatedSlots || []),
            el("h2", {}, "Metrics"),
            kv(gauges.map((g) => [g.id, g.value])));
    });
}

export async function taskManager(root, { params, live }) {
    const [id, tab = "metrics", file] = params;
    const body = el("div", { id: `taskmanager-${tab}` });
    const page = `#/taskmanager/${id}`, base = `taskmanagers/${id}`;
    root.append(el("h1", {}, `Task Manager ${id}`), tabs(page, TABS, tab), body);
    if (tab === "metrics") await metricsTab(body, id, live);
    else if (tab === "logs") await logsView(body, base, page, file, true);
    else if (tab === "thread-dump") await threadDumpView(body, base);
    else body.append(el("p", { class: "note" }, `No tab '${tab}'.`));
}
