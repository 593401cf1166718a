// Submitting a job (web.submit.enable): upload a job library, then run it
// with arguments and a parallelism, as Flink's "Submit New Job" page.
import { get, send } from "../api.js";
import { el, table, time } from "../dom.js";

export async function submit(root, { config }) {
    if (!config.features["web-submit"]) {
        root.append(el("p", { class: "note" },
            "Job submission is off on this cluster (web.submit.enable: false)."));
        return;
    }
    const file = el("input", { type: "file", accept: ".so", id: "jar-file" });
    const upload = el("button", { type: "submit" }, "Upload");
    const list = el("div", { id: "jar-list" }), result = el("div", { id: "run" });
    root.append(el("h1", {}, "Submit New Job"),
        el("form", { class: "stack", id: "upload-form", onsubmit: async (e) => {
            e.preventDefault();
            if (!file.files.length) return;
            const form = new FormData();
            form.append("jarfile", file.files[0]);
            await send("POST", "jars/upload", form);
            await refresh();
        } }, el("label", {}, "Job library (.so)", file), upload), list, result);

    const run = (jar) => {
        const args = el("input", { type: "text", id: "program-args", placeholder: "program arguments" });
        const par = el("input", { type: "number", id: "parallelism", min: 1, placeholder: "parallelism" });
        const error = el("p", { class: "note", role: "alert" });
        const form = el("form", { class: "stack", id: "run-form", onsubmit: async (e) => {
            e.preventDefault();
            const body = { programArgs: args.value };
            if (par.value) body.parallelism = Number(par.value);
            try {
                const r = await send("POST", `jars/${jar.id}/run`, body);
                location.hash = `#/job/${r.jobid}`;
            } catch (err) {
                error.textContent = err.message;
            }
        } }, el("label", {}, "Program arguments", args), el("label", {}, "Parallelism", par),
        el("button", { type: "submit" }, `Run ${jar.name}`), error);
        result.replaceChildren(form);
    };
    async function refresh() {
        const { files } = await get("jars");
        list.replaceChildren(table([
            { title: "Name", value: (f) => f.name },
            { title: "Uploaded", value: (f) => time(f.uploaded) },
            { title: "", value: (f) => el("button", { class: "run", onclick: () => run(f) }, "Run…") },
            { title: "", value: (f) => el("button", { onclick: async () => {
                await send("DELETE", `jars/${f.id}`);
                await refresh();
            } }, "Delete") },
        ], files));
    }
    await refresh();
}
