// One job: its dataflow graph with each vertex's live figures, its
// checkpoints, exceptions, configuration and flame graphs; cancel where
// web.cancel.enable allows.
import { get, send } from "../api.js";
import { el, table, tabs, state, bytes, duration, time, rate, count, watermark } from "../dom.js";
import { dataflowGraph } from "../graph.js";
import { flameGraph } from "../flamegraph.js";

const TERMINAL = new Set(["FINISHED", "FAILED", "CANCELED"]);
const TABS = [["overview", "Overview"], ["checkpoints", "Checkpoints"],
    ["exceptions", "Exceptions"], ["configuration", "Configuration"],
    ["flamegraph", "Flame Graph"]];
// Each flame graph makes the TaskManagers sample their task threads (50
// samples 10 ms apart): at most one every 10 s, as Flink's cache of them
// (rest.flamegraph.refresh-interval) keeps the samplers from running
// back to back; "Sample Again" asks at once.
const FLAME_REFRESH_MS = 10000;
const FIGURES = ["numRecordsInPerSecond", "numRecordsOutPerSecond", "busyTimeMsPerSecond",
    "backPressuredTimeMsPerSecond"];

// Flink's back pressure levels from backPressuredTimeMsPerSecond.
function level(ratio) {
    return ratio > 0.5 ? "high" : ratio > 0.1 ? "low" : "ok";
}

// A vertex's figures: rates summed over its subtasks, busy and back
// pressure at their busiest subtask, the lowest input watermark.
async function vertexFigures(jid, vid) {
    const base = `jobs/${jid}/vertices/${vid}`;
    const [agg, wms] = await Promise.all([
        get(`${base}/subtasks/metrics?get=${FIGURES.join(",")}&agg=sum,max`),
        get(`${base}/watermarks`)]);
    const m = Object.fromEntries(agg.map((a) => [a.id, a]));
    const marks = wms.map((w) => Number(w.value)).filter((w) => !Number.isNaN(w));
    return {
        inRate: m.numRecordsInPerSecond?.sum,
        outRate: m.numRecordsOutPerSecond?.sum,
        busy: m.busyTimeMsPerSecond ? m.busyTimeMsPerSecond.max / 1000 : undefined,
        backpressure: m.backPressuredTimeMsPerSecond ? m.backPressuredTimeMsPerSecond.max / 1000
            : undefined,
        watermark: marks.length ? Math.min(...marks) : undefined,
    };
}

function pct(x) {
    return x === undefined ? "–" : `${Math.round(x * 100)}%`;
}

// The job's heading, made once per page (so that a refresh keeps the
// cancel button's state: its first click asks, its second cancels);
// update(j) shows the job's latest details.
function jobHeader(root, config, jid) {
    const name = el("h1", { "data-field": "job-name" }), meta = el("div", { class: "meta" });
    const status = el("span"), cancel = el("button", { class: "danger", id: "cancel-job" }, "Cancel Job");
    let armed = false;
    cancel.addEventListener("click", async () => {
        if (!armed) {
            armed = true;
            cancel.textContent = "Confirm: cancel this job";
            return;
        }
        cancel.disabled = true;
        cancel.textContent = "Cancelling…";
        try {
            await send("PATCH", `jobs/${jid}?mode=cancel`);
        } catch (e) {
            // Refused (rest.authentication, say): its reason, and try again.
            cancel.disabled = armed = false;
            cancel.textContent = "Cancel Job";
            cancel.title = e.message;
            meta.textContent = `Cancel failed: ${e.message}`;
        }
    });
    root.replaceChildren(name, meta, status);
    return (j) => {
        name.textContent = j.name;
        meta.textContent = `Job ID ${j.jid} · started ${time(j["start-time"])} · `
            + `duration ${duration(j.duration)}`;
        status.replaceChildren(state(j.state));
        const offer = config.features["web-cancel"] && !TERMINAL.has(j.state);
        if (offer && !cancel.isConnected) root.append(cancel);
        else if (!offer && cancel.isConnected) cancel.remove();
    };
}

async function overviewTab(body, jid, live, header) {
    let graph = null;
    const vertexTable = el("div");
    body.append(el("div", { class: "graph", id: "dataflow" }), el("h2", {}, "Vertices"), vertexTable);
    await live(async () => {
        const j = await get(`jobs/${jid}`);
        header(j);
        if (!graph) {
            graph = dataflowGraph(j.plan, Object.fromEntries(j.vertices.map((v) => [v.id, v.name])));
            body.querySelector("#dataflow").append(graph.node);
        }
        const running = j.state === "RUNNING";
        const figures = await Promise.all(j.vertices.map((v) => (running
            ? vertexFigures(jid, v.id).catch(() => ({})) : Promise.resolve({}))));
        j.vertices.forEach((v, i) => {
            const f = figures[i], lv = f.backpressure === undefined ? undefined : level(f.backpressure);
            graph.update(v.id, [
                { field: "parallelism", text: `Parallelism: ${v.parallelism} · ${v.status}`,
                  value: v.parallelism },
                { field: "records-in-rate", text: `Records in: ${rate(f.inRate)}/s`, value: f.inRate },
                { field: "records-out-rate", text: `Records out: ${rate(f.outRate)}/s`,
                  value: f.outRate },
                { field: "busy", text: `Busy (max): ${pct(f.busy)}`, value: f.busy },
                { field: "backpressure", text: `Backpressured (max): ${pct(f.backpressure)}`
                    + `${lv ? ` · ${lv.toUpperCase()}` : ""}`, value: f.backpressure },
                { field: "watermark", text: `Low Watermark: ${watermark(f.watermark)}`,
                  value: f.watermark },
            ], lv);
        });
        vertexTable.replaceChildren(table([
            { title: "Name", value: (v) => v.name },
            { title: "Status", value: (v) => state(v.status) },
            { title: "Parallelism", value: (v) => v.parallelism, num: true },
            { title: "Records Received", value: (v) => count(v.metrics?.["read-records"]), num: true },
            { title: "Records Sent", value: (v) => count(v.metrics?.["write-records"]), num: true },
            { title: "Bytes Received", value: (v) => bytes(v.metrics?.["read-bytes"]), num: true },
            { title: "Bytes Sent", value: (v) => bytes(v.metrics?.["write-bytes"]), num: true },
            { title: "Duration", value: (v) => duration(v.duration), num: true },
            { title: "", value: (v) => el("a", { href: `#/job/${jid}/flamegraph/${v.id}` },
                "Flame Graph") },
        ], j.vertices));
    });
}

async function checkpointDetails(target, jid, id) {
    const d = await get(`jobs/${jid}/checkpoints/details/${id}`);
    const tasks = Object.entries(d.tasks || {}).map(([vid, t]) => ({ vid, ...t }));
    const subtasks = el("div", { id: "checkpoint-subtasks" });
    target.replaceChildren(el("h2", {}, `Checkpoint ${id}`), table([
        { title: "Vertex", value: (t) => t.vid },
        { title: "Status", value: (t) => state(t.status || d.status) },
        { title: "Acknowledged", value: (t) => `${t.num_acknowledged_subtasks}/${t.num_subtasks}`, num: true },
        { title: "Latest Acknowledgement", value: (t) => time(t.latest_ack_timestamp) },
        { title: "End to End Duration", value: (t) => duration(t.end_to_end_duration), num: true },
        { title: "Checkpointed Data Size", value: (t) => bytes(t.checkpointed_size), num: true },
        { title: "Full Checkpoint Data Size", value: (t) => bytes(t.state_size), num: true },
    ], tasks, async (t) => {
        const s = await get(`jobs/${jid}/checkpoints/details/${id}/subtasks/${t.vid}`);
        subtasks.replaceChildren(el("h2", {}, `Subtasks of ${t.vid}`), table([
            { title: "Subtask", value: (x) => x.index, num: true },
            { title: "Status", value: (x) => x.status },
            { title: "Acknowledged", value: (x) => time(x.ack_timestamp) },
            { title: "End to End Duration", value: (x) => duration(x.end_to_end_duration), num: true },
            { title: "Checkpointed Data Size", value: (x) => bytes(x.checkpointed_size), num: true },
            { title: "Sync Duration", value: (x) => duration(x.checkpoint?.sync), num: true },
            { title: "Async Duration", value: (x) => duration(x.checkpoint?.async), num: true },
        ], s.subtasks || []));
    }), subtasks);
}

async function checkpointsTab(body, jid, live) {
    const counts = el("div", { class: "cards" }), history = el("div", { id: "checkpoint-history" });
    const details = el("div", { id: "checkpoint-details" });
    body.append(counts, el("h2", {}, "History"), history, details);
    await live(async () => {
        let s;
        try {
            s = await get(`jobs/${jid}/checkpoints`);
        } catch (e) {
            counts.replaceChildren(el("p", { class: "note" }, e.message));
            return;
        }
        const card = (label, v) => el("div", { class: "card" }, el("div", { class: "value" }, v),
            el("div", { class: "label" }, label));
        const c = s.counts;
        counts.replaceChildren(card("Triggered", c.total), card("In Progress", c.in_progress),
            card("Completed", c.completed), card("Failed", c.failed), card("Restored", c.restored),
            card("Latest Completed", s.latest?.completed ? `#${s.latest.completed.id}` : "–"));
        history.replaceChildren(s.history.length === 0 ? el("p", { class: "note" }, "No checkpoints yet.")
            : table([
                { title: "ID", value: (h) => h.id, num: true },
                { title: "Status", value: (h) => state(h.status) },
                { title: "Type", value: (h) => (h.is_savepoint ? "Savepoint" : h.checkpoint_type) },
                { title: "Trigger Time", value: (h) => time(h.trigger_timestamp) },
                { title: "Latest Acknowledgement", value: (h) => time(h.latest_ack_timestamp) },
                { title: "End to End Duration", value: (h) => duration(h.end_to_end_duration), num: true },
                { title: "Checkpointed Data Size", value: (h) => bytes(h.checkpointed_size), num: true },
                { title: "Full Checkpoint Data Size", value: (h) => bytes(h.state_size), num: true },
                { title: "Acknowledged", value: (h) => `${h.num_acknowledged_subtasks}/${h.num_subtasks}`,
                  num: true },
            ], s.history, (h) => checkpointDetails(details, jid, h.id)));
    });
}

async function exceptionsTab(body, jid, live) {
    await live(async () => {
        const x = await get(`jobs/${jid}/exceptions`);
        const entries = x.exceptionHistory?.entries || [];
        body.replaceChildren(entries.length === 0 && !x["root-exception"]
            ? el("p", { class: "note" }, "No exceptions.")
            : el("div", {}, entries.map((e) => el("div", {},
                el("h2", {}, `${time(e.timestamp)} · ${e.exceptionName}`
                    + `${e.taskName ? ` · ${e.taskName}` : ""}`),
                el("pre", {}, e.stacktrace))),
            entries.length === 0 ? el("pre", {}, x["root-exception"]) : null));
    });
}

function flatten(obj, prefix, out) {
    for (const [k, v] of Object.entries(obj)) {
        if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, `${prefix}${k}.`, out);
        else out.push([`${prefix}${k}`, Array.isArray(v) ? v.join(", ") : String(v)]);
    }
    return out;
}

async function configurationTab(body, jid) {
    const [c, cp] = await Promise.all([get(`jobs/${jid}/config`),
        get(`jobs/${jid}/checkpoints/config`).catch(() => null)]);
    const kv = (rows) => table([{ title: "Key", value: (r) => r[0] }, { title: "Value", value: (r) => r[1] }],
        rows);
    body.append(el("h2", {}, "Execution Configuration"), kv(flatten(c["execution-config"] || {}, "", [])));
    if (cp) body.append(el("h2", {}, "Checkpointing"), kv(flatten(cp, "", [])));
}

async function flameGraphTab(body, jid, vid, live) {
    const j = await get(`jobs/${jid}`);
    const pick = el("select", { id: "flame-vertex" },
        j.vertices.map((v) => el("option", { value: v.id, selected: v.id === vid }, v.name)));
    const type = el("select", { id: "flame-type" }, [["full", "Mixed"], ["on_cpu", "On-CPU"],
        ["off_cpu", "Off-CPU"]].map(([v, t]) => el("option", { value: v }, t)));
    const graph = el("div", { id: "flamegraph" }), meta = el("p", { class: "note" });
    let last = null, focus = []; // the frames' names from the root to the one zoomed into
    const again = el("button", { id: "flame-sample" }, "Sample Again");
    pick.addEventListener("change", () => { location.hash = `#/job/${jid}/flamegraph/${pick.value}`; });
    body.append(el("div", { class: "head" }, "Vertex", pick, "Threads", type, again), meta, graph);
    // One sampling at a time: a click while one runs waits for it.
    let sampling = null;
    const draw = () => (sampling ||= (async () => {
        const g = await get(`jobs/${jid}/vertices/${pick.value}/flamegraph?type=${type.value}`);
        meta.textContent = g.data && g.data.value > 0
            ? `${g.data.value} samples of the vertex's task threads, taken ${time(g.endTimestamp)}`
            : "Sampling the task threads…";
        last = g.data;
        show();
    })().finally(() => { sampling = null; }));
    const show = () => {
        if (!last) return;
        graph.replaceChildren(flameGraph(last, Math.max(600, body.clientWidth - 4), focus,
            (path) => { focus = path; show(); }));
    };
    type.addEventListener("change", draw);
    again.addEventListener("click", draw);
    await live(draw, FLAME_REFRESH_MS);
}

export async function job(root, { params, config, live }) {
    const [jid, tab = "overview", vid] = params;
    const head = el("div", { class: "head" }), body = el("div", { id: `job-${tab}` });
    root.append(head, tabs(`#/job/${jid}`, TABS, tab), body);
    const header = jobHeader(head, config, jid);
    const j = await get(`jobs/${jid}`);
    header(j);
    if (tab === "overview") await overviewTab(body, jid, live, header);
    else if (tab === "checkpoints") await checkpointsTab(body, jid, live);
    else if (tab === "exceptions") await exceptionsTab(body, jid, live);
    else if (tab === "configuration") await configurationTab(body, jid);
    else if (tab === "flamegraph") await flameGraphTab(body, jid, vid || j.vertices[0]?.id, live);
    else body.append(el("p", { class: "note" }, `No tab '${tab}'.`));
}
