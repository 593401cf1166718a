// The cluster at a glance (Flink's overview page) and the job lists.
import { get } from "../api.js";
import { el, table, state, duration, time } from "../dom.js";

const FINISHED = new Set(["FINISHED", "FAILED", "CANCELED"]);

function card(label, value, field) {
    return el("div", { class: "card" }, el("div", { class: "value", "data-field": field }, value),
        el("div", { class: "label" }, label));
}

function jobTable(jobs) {
    if (jobs.length === 0) return el("p", { class: "note" }, "No jobs.");
    return table([
        { title: "Job Name", value: (j) => j.name },
        { title: "Start Time", value: (j) => time(j["start-time"]) },
        { title: "Duration", value: (j) => duration(j.duration), num: true },
        { title: "End Time", value: (j) => time(j["end-time"]) },
        { title: "Tasks", value: (j) => `${j.tasks.running ?? 0} running / ${j.tasks.total}`, num: true },
        { title: "Status", value: (j) => state(j.state) },
    ], jobs, (j) => { location.hash = `#/job/${j.jid}`; });
}

function byStart(jobs, finished) {
    return jobs.filter((j) => FINISHED.has(j.state) === finished)
        .sort((a, b) => b["start-time"] - a["start-time"]);
}

export async function overview(root, { live }) {
    const cards = el("div", { class: "cards" });
    const running = el("div", { id: "running-jobs" }), completed = el("div", { id: "completed-jobs" });
    root.append(el("h1", {}, "Overview"), cards, el("h2", {}, "Running Jobs"), running,
        el("h2", {}, "Completed Jobs"), completed);
    await live(async () => {
        const [o, { jobs }] = await Promise.all([get("overview"), get("jobs/overview")]);
        cards.replaceChildren(
            card("Task Managers", o.taskmanagers, "taskmanagers"),
            card("Total Slots", o["slots-total"], "slots-total"),
            card("Available Slots", o["slots-available"], "slots-available"),
            card("Running Jobs", o["jobs-running"], "jobs-running"),
            card("Finished", o["jobs-finished"], "jobs-finished"),
            card("Canceled", o["jobs-cancelled"], "jobs-cancelled"),
            card("Failed", o["jobs-failed"], "jobs-failed"));
        running.replaceChildren(jobTable(byStart(jobs, false)));
        completed.replaceChildren(jobTable(byStart(jobs, true)));
    });
}

export async function jobList(root, { params, live }) {
    const finished = params[0] === "completed", list = el("div");
    root.append(el("h1", {}, finished ? "Completed Jobs" : "Running Jobs"), list);
    await live(async () => {
        const { jobs } = await get("jobs/overview");
        list.replaceChildren(jobTable(byStart(jobs, finished)));
    });
}
