// The dashboard: routes of the URL's hash (#/job/<id>/checkpoints) to
// views, and the refresh of what a view shows every web.refresh-interval.
import { get } from "./api.js";
import { el } from "./dom.js";
import { overview, jobList } from "./views/overview.js";
import { job } from "./views/job.js";
import { taskManagers, taskManager } from "./views/taskmanagers.js";
import { jobManager } from "./views/jobmanager.js";
import { submit } from "./views/submit.js";

const routes = [
    [/^\/overview$/, overview],
    [/^\/jobs\/(running|completed)$/, jobList],
    [/^\/job\/([0-9a-f]{32})(?:\/([a-z-]+))?(?:\/([0-9a-f]{32}))?$/, job],
    [/^\/taskmanagers$/, taskManagers],
    [/^\/taskmanager\/([^/]+)(?:\/([a-z-]+))?(?:\/(.+))?$/, taskManager],
    [/^\/jobmanager(?:\/([a-z-]+))?(?:\/(.+))?$/, jobManager],
    [/^\/submit$/, submit],
];

let config = { "refresh-interval": 3000, features: {} };
let generation = 0;

function showError(e) {
    document.getElementById("error").textContent = e ? e.message : "";
}

// Runs fn now and every refresh interval (or every slowest ms, if that is
// longer) while the view of gen is shown.
function liveFor(gen) {
    return (fn, slowest = 0) => {
        const tick = async () => {
            if (gen !== generation) return;
            try {
                await fn();
                showError(null);
                document.getElementById("refreshed").textContent =
                    `refreshed ${new Date().toLocaleTimeString()}`;
            } catch (e) {
                showError(e);
            }
            if (gen === generation) setTimeout(tick, Math.max(config["refresh-interval"], slowest));
        };
        return tick();
    };
}

async function route() {
    const path = decodeURIComponent(location.hash.replace(/^#/, "")) || "/overview";
    const root = document.getElementById("view");
    const gen = ++generation;

    for (const a of document.querySelectorAll("nav a[data-nav]"))
        a.classList.toggle("active", path.startsWith(`/${a.dataset.nav}`));
    for (const [rx, view] of routes) {
        const m = rx.exec(path);
        if (!m) continue;
        root.replaceChildren();
        try {
            await view(root, { params: m.slice(1), config, live: liveFor(gen),
                               current: () => gen === generation });
        } catch (e) {
            if (gen === generation) showError(e);
        }
        return;
    }
    root.replaceChildren(el("p", { class: "note" }, `No page at #${path}.`));
}

async function start() {
    try {
        config = await get("config");
    } catch (e) {
        showError(e);
    }
    document.getElementById("version").textContent = `spate ${config["flink-version"] || ""}`;
    document.getElementById("nav-submit").hidden = !config.features["web-submit"];
    window.addEventListener("hashchange", route);
    await route();
}

start();
