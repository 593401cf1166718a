// A job's dataflow graph as SVG: its JobGraph's vertices (the plan's nodes)
// in columns by their distance from the sources, edges with their ship
// strategy, and each vertex's live figures as text the refresh updates.
import { svg } from "./dom.js";

const W = 300, H = 148, GAP_X = 70, GAP_Y = 30, PAD = 16;

// {id: {x, y}} for the plan's nodes: columns by longest path from a source.
function layout(nodes) {
    const byId = new Map(nodes.map((n) => [n.id, n])), depth = new Map();
    const depthOf = (n, seen = new Set()) => {
        if (depth.has(n.id)) return depth.get(n.id);
        if (seen.has(n.id)) return 0; // a cycle (iterations): break it
        seen.add(n.id);
        let d = 0;
        for (const i of n.inputs || [])
            if (byId.has(i.id)) d = Math.max(d, depthOf(byId.get(i.id), seen) + 1);
        depth.set(n.id, d);
        return d;
    };
    const columns = [];
    for (const n of nodes) (columns[depthOf(n)] ||= []).push(n.id);
    const at = {};
    columns.forEach((ids, c) => ids.forEach((id, r) => {
        at[id] = { x: PAD + c * (W + GAP_X), y: PAD + r * (H + GAP_Y) };
    }));
    const rows = Math.max(...columns.map((c) => c.length));
    return { at, width: PAD * 2 + columns.length * (W + GAP_X) - GAP_X,
             height: PAD * 2 + rows * (H + GAP_Y) - GAP_Y };
}

function clip(s, n) {
    return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

// The graph of plan ({nodes: [{id, description, parallelism, inputs}]});
// names: {vertex id: name}. Returns {node, update(id, lines)}: lines are
// [{field, text, value}] under the vertex's title.
export function dataflowGraph(plan, names) {
    const { at, width, height } = layout(plan.nodes);
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "dataflow" },
        svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
            markerWidth: 7, markerHeight: 7, orient: "auto" },
        svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#9ca3af" }))));
    const bodies = {};
    for (const n of plan.nodes) {
        for (const i of n.inputs || []) {
            const from = at[i.id], to = at[n.id];
            if (!from) continue;
            const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
            root.append(svg("path", { class: "edge",
                d: `M${x1},${y1} C${x1 + GAP_X / 2},${y1} ${x2 - GAP_X / 2},${y2} ${x2},${y2}` }),
            svg("text", { class: "edge-label", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4,
                "text-anchor": "middle" }, i.ship_strategy || ""));
        }
    }
    for (const n of plan.nodes) {
        const { x, y } = at[n.id], name = names[n.id] || n.description || n.id;
        const body = svg("g", {});
        bodies[n.id] = body;
        root.append(svg("g", { class: "vertex", "data-vertex": n.id, transform: `translate(${x},${y})` },
            svg("title", {}, name),
            svg("rect", { width: W, height: H }),
            svg("text", { class: "title", x: 10, y: 20, "data-field": "name" }, clip(name, 42)),
            body));
    }
    return {
        node: root,
        update(id, lines, level) {
            const body = bodies[id];
            if (!body) return;
            body.replaceChildren(...lines.map((l, k) => svg("text", {
                x: 10, y: 42 + k * 18, "data-field": l.field, "data-value": l.value,
            }, l.text)));
            const g = body.parentNode;
            g.classList.toggle("bp-low", level === "low");
            g.classList.toggle("bp-high", level === "high");
        },
    };
}
